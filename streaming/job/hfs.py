"""Small files next to the checkpoint and table checks, through Hadoop's FileSystem (driver side).

Locations may be local paths or Hadoop URIs (``s3a://``, ``abfss://``, ``hdfs://``, ``file:``): going
through the JVM's FileSystem, as Spark does for the checkpoint itself, keeps every store working the same.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession


def jvm(spark: SparkSession) -> Any:
    """The session's JVM gateway (py4j); a Spark Connect session has none."""
    gateway = spark._jvm
    if gateway is None:
        raise RuntimeError("this needs a classic SparkSession with a JVM (not Spark Connect)")
    return gateway


def _fs_path(spark: SparkSession, location: str, *children: str) -> tuple[Any, Any]:
    jvm_ = jvm(spark)
    path = jvm_.org.apache.hadoop.fs.Path(location)
    for child in children:
        path = jvm_.org.apache.hadoop.fs.Path(path, child)
    return path.getFileSystem(spark._jsc.hadoopConfiguration()), path


def exists(spark: SparkSession, location: str, *children: str) -> bool:
    fs, path = _fs_path(spark, location, *children)
    return bool(fs.exists(path))


def has_files(spark: SparkSession, location: str, *children: str) -> bool:
    """True when the folder exists and holds at least one entry whose name does not start with '.'."""
    fs, path = _fs_path(spark, location, *children)
    if not fs.exists(path):
        return False
    return any(not str(s.getPath().getName()).startswith(".") for s in fs.listStatus(path))


def read_text(spark: SparkSession, location: str, *children: str) -> str | None:
    """The file's text, or None when it does not exist."""
    fs, path = _fs_path(spark, location, *children)
    if not fs.exists(path):
        return None
    stream = fs.open(path)
    try:
        data = jvm(spark).org.apache.commons.io.IOUtils.toByteArray(stream)
    finally:
        stream.close()
    return bytes(data).decode()


def write_text(spark: SparkSession, location: str, name: str, text: str, overwrite: bool) -> bool:
    """Write ``location/name``; with ``overwrite`` False, return False if it already exists.

    Exclusive creation is atomic on HDFS; on the local file system and object stores Hadoop checks and
    creates in two steps, so callers that need exclusivity read the file back (see :mod:`lease`)."""
    fs, path = _fs_path(spark, location, name)
    if not overwrite and fs.exists(path):
        return False
    try:
        out = fs.create(path, overwrite)
    except Exception as e:  # FileAlreadyExistsException from a store that enforces it
        if "AlreadyExists" in str(e):
            return False
        raise
    try:
        out.write(bytearray(text.encode()))
    finally:
        out.close()
    return True


def delete(spark: SparkSession, location: str, name: str) -> None:
    fs, path = _fs_path(spark, location, name)
    fs.delete(path, False)


def modified_ms(spark: SparkSession, location: str, name: str) -> int | None:
    """The file's modification time (the store's clock, ms since the epoch), or None when it is absent."""
    fs, path = _fs_path(spark, location, name)
    if not fs.exists(path):
        return None
    return int(fs.getFileStatus(path).getModificationTime())

"""Small files next to the checkpoint and table checks, through Hadoop's FileSystem (driver side).

Locations may be local paths or Hadoop URIs (``s3a://``, ``abfss://``, ``hdfs://``, ``file:``):
going through the JVM's FileSystem, as Spark does for the checkpoint itself, keeps every store
working the same. Side files are written whole or not at all (:func:`write_text`: a temporary file
renamed into place), so a kill never leaves an empty or partial one.
"""

from __future__ import annotations

import contextlib
import os
import uuid
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


def is_local(spark: SparkSession, location: str) -> bool:
    """Whether ``location`` is on this machine's file system (Hadoop's ``file`` scheme)."""
    fs, _ = _fs_path(spark, location)
    return str(fs.getScheme()) == "file"


def has_files(spark: SparkSession, location: str, *children: str) -> bool:
    """True when the folder exists and holds at least one entry whose name does not start
    with '.'."""
    fs, path = _fs_path(spark, location, *children)
    if not fs.exists(path):
        return False
    return any(not str(s.getPath().getName()).startswith(".") for s in fs.listStatus(path))


def read_text(spark: SparkSession, location: str, *children: str) -> str | None:
    """The file's text, or None when it does not exist. Bytes that are not UTF-8 (a torn write on a
    store without atomic renames, a disk error) read as U+FFFD: no side file's parser takes that
    character, so the file counts as damaged and is rebuilt like an empty or garbled one, rather
    than stopping the start."""
    fs, path = _fs_path(spark, location, *children)
    if not fs.exists(path):
        return None
    # no checksum file: written by write_text as a plain file (crc of old ones stale)
    if fs.getScheme() == "file":
        with contextlib.suppress(Exception):  # (a raw local file system has no getRawFileSystem)
            fs = fs.getRawFileSystem()
    stream = fs.open(path)
    try:
        data = jvm(spark).org.apache.commons.io.IOUtils.toByteArray(stream)
    finally:
        stream.close()
    return bytes(data).decode(errors="replace")


def write_text(spark: SparkSession, location: str, name: str, text: str, overwrite: bool) -> bool:
    """Write ``location/name`` whole or not at all; with ``overwrite`` False, return False
    if it exists.

    The text goes to a hidden temporary file in the same folder (``.name.<uuid>.tmp``: Spark and
    :func:`has_files` ignore it), which is then moved into place, so a kill at any moment leaves the
    old file or the new one, never a part of one. A local file is moved by the system calls
    (``rename(2)`` replaces atomically; ``link(2)`` fails when the name exists, for exclusive
    creation), because Hadoop's local rename replaces by delete-then-rename and checks existence
    apart from renaming. Any other store: ``FileContext.rename``, with OVERWRITE when replacing,
    without to create exclusively (refused when the name exists); both atomic on HDFS. Object
    stores: see docs/design.md (S3A's rename is a copy then a delete)."""
    from streaming.operations import faults

    fs, path = _fs_path(spark, location, name)
    if not overwrite and fs.exists(path):
        return False
    _drop_leftovers(spark, fs, path)
    tmp = jvm(spark).org.apache.hadoop.fs.Path(path.getParent(), f".{name}.{uuid.uuid4().hex}.tmp")
    local = fs.getScheme() == "file"
    if local:
        fs.mkdirs(path.getParent())  # as fs.create would
        with open(_file(fs, tmp), "xb") as f:
            f.write(text.encode())
    else:
        out = fs.create(tmp, False)
        try:
            out.write(bytearray(text.encode()))
        finally:
            out.close()
    faults.hit(f"{name}:before-rename")
    try:
        placed = (_place_local(fs, tmp, path, overwrite) if local
                  else _place(spark, tmp, path, overwrite))
    finally:
        if fs.exists(tmp):
            fs.delete(tmp, False)
    if placed:
        faults.hit(f"{name}:after-rename")
    return placed


def _file(fs: Any, path: Any) -> str:
    return str(fs.pathToFile(path).getPath())


def _place_local(fs: Any, tmp: Any, path: Any, overwrite: bool) -> bool:
    target = _file(fs, path)
    # the checksum file of an older release's write: stale now
    with contextlib.suppress(FileNotFoundError):
        os.remove(os.path.join(os.path.dirname(target), f".{os.path.basename(target)}.crc"))
    if overwrite:
        os.replace(_file(fs, tmp), _file(fs, path))
        return True
    try:
        os.link(_file(fs, tmp), _file(fs, path))
    except FileExistsError:
        return False
    return True


def _place(spark: SparkSession, tmp: Any, path: Any, overwrite: bool) -> bool:
    """Rename ``tmp`` to ``path`` through Hadoop: replacing it, or only when it does not
    exist (else False)."""
    jvm_ = jvm(spark)
    rename = jvm_.org.apache.hadoop.fs.Options.Rename
    gateway = spark.sparkContext._gateway
    if gateway is None:
        raise RuntimeError("no py4j gateway")
    options = gateway.new_array(rename, 1)
    options[0] = rename.OVERWRITE if overwrite else rename.NONE
    context = jvm_.org.apache.hadoop.fs.FileContext.getFileContext(
        path.toUri(), spark._jsc.hadoopConfiguration())
    try:
        context.rename(tmp, path, options)
    except Exception as e:  # FileAlreadyExistsException: the exclusive create lost
        if not overwrite and "AlreadyExists" in str(e):
            return False
        raise
    return True


def _drop_leftovers(spark: SparkSession, fs: Any, path: Any) -> None:
    """Delete temporary files of ``path`` that a killed writer left (an old run's: the
    lease is held)."""
    pattern = jvm(spark).org.apache.hadoop.fs.Path(path.getParent(), f".{path.getName()}.*.tmp")
    for status in fs.globStatus(pattern) or []:
        fs.delete(status.getPath(), False)


def delete(spark: SparkSession, location: str, name: str) -> None:
    fs, path = _fs_path(spark, location, name)
    fs.delete(path, False)


def modified_ms(spark: SparkSession, location: str, name: str) -> int | None:
    """The file's modification time (the store's clock, ms since the epoch), or None when
    it is absent."""
    fs, path = _fs_path(spark, location, name)
    if not fs.exists(path):
        return None
    return int(fs.getFileStatus(path).getModificationTime())

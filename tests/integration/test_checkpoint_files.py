"""Which of Spark's checkpoint file managers the job's query gets (:func:`query.checkpoint_files`),
asked of Spark itself: ``CheckpointFileManager.create`` on the session's Hadoop configuration, as
the offset log, the commit log and the state store build theirs."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from streaming.job import query


def manager(spark, location: str) -> str:
    """The class of the manager Spark builds for ``location`` now."""
    jvm = spark._jvm
    path = jvm.org.apache.hadoop.fs.Path(location)
    spark_side = getattr(jvm.org.apache.spark.sql.execution.streaming.checkpointing,
                         "CheckpointFileManager$").__getattr__("MODULE$")
    conf = spark._jsparkSession.sessionState().newHadoopConf()
    return str(spark_side.create(path, conf).getClass().getSimpleName())


@pytest.fixture
def session(spark) -> Iterator:
    """The suite's session, its setting as it was after the test."""
    before = spark.conf.get(query.CHECKPOINT_FILES, None)
    yield spark
    if before is None:
        spark.conf.unset(query.CHECKPOINT_FILES)
    else:
        spark.conf.set(query.CHECKPOINT_FILES, before)


def test_a_local_checkpoint_goes_through_the_file_system_api(session, cfg, tmp_path):
    session.conf.unset(query.CHECKPOINT_FILES)
    assert manager(session, str(tmp_path)) == "FileContextBasedCheckpointFileManager"  # Spark's
    query.checkpoint_files(session, cfg, str(tmp_path))
    assert manager(session, str(tmp_path)) == "FileSystemBasedCheckpointFileManager"
    query.checkpoint_files(session, cfg, tmp_path.as_uri())  # file:/...
    assert manager(session, tmp_path.as_uri()) == "FileSystemBasedCheckpointFileManager"


def test_any_other_store_keeps_spark_s_default(session, cfg, tmp_path):
    query.checkpoint_files(session, cfg, str(tmp_path))
    # no name node answers here; the file system object is made without asking one
    query.checkpoint_files(session, cfg, "hdfs://127.0.0.1:1/checkpoints/rebalancer")
    assert session.conf.get(query.CHECKPOINT_FILES, None) is None
    assert manager(session, str(tmp_path)) == "FileContextBasedCheckpointFileManager"


def test_a_manager_the_configuration_names_is_left_alone(session, cfg, tmp_path):
    named = dataclasses.replace(cfg, spark=dataclasses.replace(
        cfg.spark, conf=cfg.spark.conf | {query.CHECKPOINT_FILES: "com.example.Manager"}))
    session.conf.unset(query.CHECKPOINT_FILES)
    query.checkpoint_files(session, named, str(tmp_path))
    assert session.conf.get(query.CHECKPOINT_FILES, None) is None

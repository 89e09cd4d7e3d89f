"""``rebalancer maintain`` on tables the job's own code created: the upkeep properties are there
from the start, OPTIMIZE turns many small files into few, rejected rows older than the window go (by
Kafka timestamp, or the event's ts for rows without one) and VACUUM removes the compacted files from
storage."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import uuid
from pathlib import Path

import pyarrow as pa
import pytest

from streaming import config
from streaming.commands.maintain import maintain
from streaming.contracts.tables import REJECTED, REJECTED_DDL
from streaming.job.driver_delta import DriverAppender
from streaming.operations import delta_tables

pytestmark = pytest.mark.integration

SMALL_FILES = 24


def _rows(batch: int, when: dt.datetime, stateful: bool) -> list[tuple]:
    # rejected in the stateful step: no Kafka timestamp, the event's ts in the raw value
    if stateful:
        raw = json.dumps({"type": "lag", "ts": int(when.timestamp() * 1000), "group": "g"})
        return [(batch, "g", "late", raw, "rebalancer.lag", 0, batch, None)]
    return [(batch, "g", "not json", f"garbage {batch}", "rebalancer.lag", 0, batch, when)]


def test_maintain_compacts_expires_and_vacuums(spark, cfg, tmp_path):
    work = tmp_path / uuid.uuid4().hex[:6]
    mc = dataclasses.replace(
        cfg, paths=config.PathSettings(checkpoints=str(work / "cp"), tables=str(work / "tables")),
        maintenance=dataclasses.replace(cfg.maintenance, auto_compact=False))
    delta_tables.prepare(spark, mc, mc.checkpoint_path("rebalancer"))
    location = mc.table_path(REJECTED)
    props = spark.sql(f"DESCRIBE DETAIL delta.`{location}`").first()["properties"]
    assert props["delta.logRetentionDuration"] == "interval 30 days"
    assert props["delta.deletedFileRetentionDuration"] == "interval 7 days"
    assert props["delta.autoOptimize.autoCompact"] == "false"

    now = dt.datetime.now()
    old, recent = now - dt.timedelta(days=40), now - dt.timedelta(days=2)
    names = spark.createDataFrame([], REJECTED_DDL).schema.names
    # one append, one file, as the job's batches leave them: its own driver-side appender
    # (delta-rs), a few ms each
    appender = DriverAppender(auto_compact=False)
    for b in range(SMALL_FILES):
        when = old if b % 3 == 0 else recent
        rows = pa.Table.from_pylist([dict(zip(names, r, strict=True))
                                     for r in _rows(b, when, stateful=b % 2 == 1)])
        assert appender.append(Path(location), rows, "test-maintain", b)
    expected_old = sum(1 for b in range(SMALL_FILES) if b % 3 == 0)
    assert delta_tables.file_count(spark, location) == SMALL_FILES
    parquet = lambda: len(list(Path(location).glob("*.parquet")))  # noqa: E731
    assert parquet() == SMALL_FILES

    lines: list[str] = []
    assert maintain(spark, mc, days=30, vacuum_now=True, out=lines.append) == 0
    print("\n".join(lines))
    assert delta_tables.file_count(spark, location) == 1
    left = spark.read.format("delta").load(location)
    assert left.count() == SMALL_FILES - expected_old
    assert sorted(r["batch_id"] for r in left.collect()) == [b for b in range(SMALL_FILES) if b % 3]
    assert f"rejected_events: {expected_old} row(s) older than 30 days deleted" in lines
    # the small and the pre-delete files are gone
    assert parquet() == delta_tables.storage_files(spark, location) == 1


def test_vacuum_keeps_files_within_the_table_retention(spark, cfg, tmp_path):
    mc = dataclasses.replace(cfg, paths=config.PathSettings(checkpoints=str(tmp_path / "cp"),
                                                            tables=str(tmp_path / "tables")))
    delta_tables.prepare(spark, mc, mc.checkpoint_path("rebalancer"))
    location = mc.table_path(REJECTED)
    schema = spark.createDataFrame([], REJECTED_DDL).schema
    for b in range(3):
        spark.createDataFrame(_rows(b, dt.datetime.now(), stateful=False), schema).coalesce(1) \
            .write.format("delta").mode("append").save(location)
    lines: list[str] = []
    assert maintain(spark, mc, days=0, out=lines.append) == 0
    assert delta_tables.file_count(spark, location) == 1
    # compacted away, but younger than 7 days: kept
    assert delta_tables.storage_files(spark, location) == 4
    assert "rejected_events: retention off, every row kept" in lines


def _delete_beside_an_append(spark, tmp_path, blind: bool) -> tuple[list[str], list[int]]:
    """A DELETE whose condition calls a UDF that, the first time it runs, appends a row with
    delta-rs (another writer, as the job's driver is) before the DELETE commits: the append lands
    inside the DELETE for sure. The lines retry_conflicts said, and the rows left."""
    import os

    from pyspark.sql import functions as F
    from pyspark.sql.types import BooleanType

    location, marker = str(tmp_path / "t"), str(tmp_path / "appended")
    spark.range(0, 10).withColumnRenamed("id", "n").coalesce(1).write.format("delta").save(location)
    script = ("import sys, pyarrow as pa; from deltalake import CommitProperties, write_deltalake; "
              "write_deltalake(sys.argv[1], pa.table({'n': pa.array([100], pa.int64())}), "
              "mode='append', "
              f"commit_properties=CommitProperties(custom_metadata={{'isBlindAppend': {blind}}}))")

    def append_once(n: int) -> bool:
        import subprocess
        import sys

        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            return n < 5
        # its own process: a Python worker is forked from Spark's daemon, no place for delta-rs'
        # runtime
        subprocess.run([sys.executable, "-c", script, location], check=True, timeout=120)
        return n < 5

    # a row-at-a-time UDF: the Arrow-optimised one stalled inside DELETE's scan on Spark 4.2 (worker
    # and task each waiting to read)
    spark.udf.register("append_once", F.udf(append_once, BooleanType(), useArrow=False))
    said: list[str] = []
    delta_tables.retry_conflicts(lambda: spark.sql(f"DELETE FROM delta.`{location}` WHERE "
                                                   "append_once(n)").first(),
                           "t: DELETE", out=said.append, sleep=lambda s: None)
    return said, sorted(r["n"] for r in spark.read.format("delta").load(location).collect())


def test_a_delete_that_loses_the_race_to_an_append_runs_again(spark, tmp_path):
    """The soak's maintain once exited 1: its DELETE read the table, an append committed, Delta
    refused the DELETE's commit. An append that does not say it is blind conflicts: the DELETE runs
    again and commits."""
    said, left = _delete_beside_an_append(spark, tmp_path, blind=False)
    assert len(said) == 1 and "another writer committed first" in said[0], said
    assert left == [5, 6, 7, 8, 9, 100]  # deleted on the second try, the concurrent append kept


def test_even_a_blind_append_conflicts_with_a_delete_in_open_source_delta(spark, tmp_path):
    """The job's appends say they are blind, as Spark's do, but open-source Delta runs DELETE and
    MERGE as Serializable (the commit says so), where a blind append's files still count as read:
    the DELETE is retried. This is why row retention beside a job appending every second cannot rely
    on retries alone."""
    said, left = _delete_beside_an_append(spark, tmp_path, blind=True)
    assert len(said) == 1 and "another writer committed first" in said[0], said
    assert left == [5, 6, 7, 8, 9, 100]


def _old_recommendations(spark, cfg, tmp_path, **maintenance):
    from streaming.contracts.tables import RECOMMENDATIONS, RECOMMENDATIONS_DDL

    mc = dataclasses.replace(
        cfg, paths=config.PathSettings(checkpoints=str(tmp_path / "cp"),
                                       tables=str(tmp_path / "tables")),
        maintenance=dataclasses.replace(cfg.maintenance, **maintenance))
    delta_tables.prepare(spark, mc, mc.checkpoint_path("rebalancer"))
    location = mc.table_path(RECOMMENDATIONS)
    schema = spark.createDataFrame([], RECOMMENDATIONS_DDL).schema
    now = dt.datetime.now()
    ages = {("a", 1): 90, ("a", 2): 60, ("a", 3): 40, ("b", 1): 50, ("b", 2): 2, ("c", 7): 400}
    rows = [{**dict.fromkeys(schema.names), "batch_id": v, "group": g, "version": v,
             "event_time": now - dt.timedelta(days=d)} for (g, v), d in ages.items()]
    spark.createDataFrame(rows, schema).write.format("delta").mode("append").save(location)
    return mc, location


def test_the_job_deletes_old_rows_itself_between_its_appends(spark, cfg, tmp_path):
    from streaming.operations.row_retention import Retention

    mc, location = _old_recommendations(spark, cfg, tmp_path, recommendations_retention_days=30,
                                        expire_every_s=600)
    retention = Retention(mc)
    retention.due = 0.0  # due now (a job's first round comes expire_every_s after its start)
    assert retention.after_batch(spark) == {"recommendations": 3, "rejected_events": 0}
    left = sorted((r["group"], r["version"])
                  for r in spark.read.format("delta").load(location).collect())
    assert left == [("a", 3), ("b", 2), ("c", 7)]


def test_old_recommendations_go_but_each_groups_latest_stays(spark, cfg, tmp_path):
    mc, location = _old_recommendations(spark, cfg, tmp_path, recommendations_retention_days=30)
    lines: list[str] = []
    assert maintain(spark, mc, days=0, optimize=False, vacuum=False, out=lines.append) == 0
    left = sorted((r["group"], r["version"])
                  for r in spark.read.format("delta").load(location).collect())
    # a's 1 and 2 and b's 1 are older than 30 days and not their group's latest; c's only row stays
    # however old
    assert left == [("a", 3), ("b", 2), ("c", 7)]
    assert "recommendations: 3 row(s) older than 30 days deleted, each group's latest kept" in lines


def test_a_rejected_rows_time_is_its_kafka_timestamp_else_its_events_ts_where_spark_holds_it(spark):
    """``REJECTED_TIME`` (what retention deletes by and ``rejected_last_day`` counts): the Kafka
    timestamp; without one (null since #47, not 1969), the event's ``ts`` where it is a Spark
    timestamp; else null, never an overflow that would fail the retention's DELETE, at and beyond
    every bound of ``ts``."""
    from streaming.contracts.tables import REJECTED_TIME
    from streaming.contracts.validated import LONG_MAX, MAX_TS_MS

    good = 1_767_000_000_000
    expected = {0: None, -1: None, 1: 1, good: good, MAX_TS_MS: MAX_TS_MS, MAX_TS_MS + 1: None,
                LONG_MAX: None}
    rows = [(0, "g", "r", json.dumps({"ts": ts}), "t", 0, i, None) for i, ts in enumerate(expected)]
    odd = ['{"ts": 1e30}', '{"ts": "soon"}', "not json", None]
    rows += [(0, "g", "r", raw, "t", 0, len(rows) + i, None) for i, raw in enumerate(odd)]
    stamped = dt.datetime(2026, 1, 2, 3, 4, 5)
    rows.append((0, "g", "r", json.dumps({"ts": LONG_MAX}), "t", 0, len(rows), stamped))
    read_back = spark.createDataFrame(rows, REJECTED_DDL).selectExpr(
        "source_offset", f"unix_millis({REJECTED_TIME}) AS at",
        "unix_millis(kafka_timestamp) AS kafka").collect()
    got = {r["source_offset"]: (r["at"], r["kafka"]) for r in read_back}
    assert [got[i][0] for i in range(len(expected))] == list(expected.values())
    assert [got[len(expected) + i][0] for i in range(len(odd))] == [None] * len(odd)
    at, kafka = got[len(rows) - 1]
    assert kafka is not None and at == kafka

"""``rebalancer maintain`` on tables the job's own code created: the upkeep properties are there from the
start, OPTIMIZE turns many small files into few, rejected rows older than the window go (by Kafka timestamp,
or the event's ts for rows without one) and VACUUM removes the compacted files from storage."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import uuid
from pathlib import Path

import pytest

from streaming import config
from streaming.commands.maintain import maintain
from streaming.contracts.tables import REJECTED, REJECTED_DDL
from streaming.job import tables

pytestmark = pytest.mark.integration

SMALL_FILES = 24


def _rows(batch: int, when: dt.datetime, stateful: bool) -> list[tuple]:
    if stateful:  # rejected in the stateful step: no Kafka timestamp, the event's ts in the raw value
        raw = json.dumps({"type": "lag", "ts": int(when.timestamp() * 1000), "group": "g"})
        return [(batch, "g", "late", raw, "rebalancer.lag", 0, batch, None)]
    return [(batch, "g", "not json", f"garbage {batch}", "rebalancer.lag", 0, batch, when)]


def test_maintain_compacts_expires_and_vacuums(spark, cfg, tmp_path):
    work = tmp_path / uuid.uuid4().hex[:6]
    mc = dataclasses.replace(
        cfg, paths=config.PathSettings(checkpoints=str(work / "cp"), tables=str(work / "tables")),
        maintenance=dataclasses.replace(cfg.maintenance, auto_compact=False))
    tables.prepare(spark, mc, mc.checkpoint_path("rebalancer"))
    location = mc.table_path(REJECTED)
    props = spark.sql(f"DESCRIBE DETAIL delta.`{location}`").first()["properties"]
    assert props["delta.logRetentionDuration"] == "interval 30 days"
    assert props["delta.deletedFileRetentionDuration"] == "interval 7 days"
    assert props["delta.autoOptimize.autoCompact"] == "false"

    now = dt.datetime.now()
    old, recent = now - dt.timedelta(days=40), now - dt.timedelta(days=2)
    schema = spark.createDataFrame([], REJECTED_DDL).schema
    for b in range(SMALL_FILES):  # one append, one file: as the job's batches leave them
        when = old if b % 3 == 0 else recent
        spark.createDataFrame(_rows(b, when, stateful=b % 2 == 1), schema).coalesce(1) \
            .write.format("delta").mode("append").save(location)
    expected_old = sum(1 for b in range(SMALL_FILES) if b % 3 == 0)
    assert tables.file_count(spark, location) == SMALL_FILES
    parquet = lambda: len(list(Path(location).glob("*.parquet")))  # noqa: E731
    assert parquet() == SMALL_FILES

    lines: list[str] = []
    assert maintain(spark, mc, days=30, vacuum_now=True, out=lines.append) == 0
    print("\n".join(lines))
    assert tables.file_count(spark, location) == 1
    left = spark.read.format("delta").load(location)
    assert left.count() == SMALL_FILES - expected_old
    assert sorted(r["batch_id"] for r in left.collect()) == [b for b in range(SMALL_FILES) if b % 3]
    assert f"rejected_events: {expected_old} row(s) older than 30 days deleted" in lines
    assert parquet() == tables.storage_files(spark, location) == 1  # the small and the pre-delete files are gone


def test_vacuum_keeps_files_within_the_table_retention(spark, cfg, tmp_path):
    mc = dataclasses.replace(cfg, paths=config.PathSettings(checkpoints=str(tmp_path / "cp"),
                                                            tables=str(tmp_path / "tables")))
    tables.prepare(spark, mc, mc.checkpoint_path("rebalancer"))
    location = mc.table_path(REJECTED)
    schema = spark.createDataFrame([], REJECTED_DDL).schema
    for b in range(3):
        spark.createDataFrame(_rows(b, dt.datetime.now(), stateful=False), schema).coalesce(1) \
            .write.format("delta").mode("append").save(location)
    lines: list[str] = []
    assert maintain(spark, mc, days=0, out=lines.append) == 0
    assert tables.file_count(spark, location) == 1
    assert tables.storage_files(spark, location) == 4  # compacted away, but younger than 7 days: kept
    assert "rejected_events: retention off, every row kept" in lines

"""The batch writer's two Delta appenders on real tables: delta-rs from the driver
(``job.delta_writer = auto``, local tables) and Spark. The same batches give the same rows, read
back by Spark (Change Data Feed included); either writer skips a batch the other already committed;
a table delta-rs cannot write goes to Spark. The job's start creates and reads its tables with
delta-rs, and Spark finds in them what it would have written and read itself."""

from __future__ import annotations

import dataclasses
import json
import logging
import uuid
from pathlib import Path

import pytest

from streaming import config
from streaming.contracts.recommendation import OUTPUT_COLUMNS
from streaming.contracts.tables import RECOMMENDATIONS, RECOMMENDATIONS_DDL, REJECTED, REJECTED_DDL
from streaming.job import convert, sinks
from streaming.operations import delta_log, delta_tables

pytestmark = pytest.mark.integration

APP = "app-test"


def _rec(group: str, version: int, lag_age: float) -> dict:
    assignment = [{"member_id": "m1", "instance_id": None, "client_id": "c", "rack": "r1",
                   "partitions": [{"topic": "t", "partition": p} for p in (0, 2)]},
                  {"member_id": "m2", "instance_id": "i2", "client_id": "c", "rack": None,
                   "partitions": [{"topic": "t", "partition": 1}]}]
    row = {c: None for c in OUTPUT_COLUMNS}
    row |= {"group": group, "version": version, "recommendation_id": f"{group}-{version}",
            "event_ts": 1_763_900_000_123 + version, "generation": 3, "triggers": "lag_skew,stuck",
            "trigger_details": "{}", "assignor": "balanced", "assignment": json.dumps(assignment),
            "before_max_lag": 900, "after_max_lag": 450, "before_imbalance": 2.0,
            "after_imbalance": 1.0, "lower_bound": 450.0, "before_cross_rack": 1,
            "after_cross_rack": 0, "partitions_moved": 1,
            "lag_moved": 450, "stuck_partitions": json.dumps([{"topic": "t", "partition": 2}]),
            "feed_value": "{}", "mode": "observe", "before_catch_up_s": 12.5,
            "after_catch_up_s": float("nan"), "lag_age_s": lag_age}
    return {"kind": "recommendation", **row, "rejected": None}


def _rejected(offset: int) -> dict:
    detail = {"reason": "not json", "raw_value": f"garbage {offset}",
              "source_topic": "rebalancer.lag", "source_partition": 0, "source_offset": offset,
              "kafka_ts": 1_763_900_000_000}
    return {"kind": "rejected", **{c: None for c in OUTPUT_COLUMNS}, "group": "g",
            "rejected": json.dumps(detail)}


def _batch(spark, batch_id: int):
    rows = [_rec(f"g{i}", batch_id + 1, 3.0 * i) for i in range(3)] \
        + [_rejected(10 * batch_id + i) for i in range(2)]
    schema = spark.createDataFrame([], convert.ROW_SCHEMA).schema
    return spark.createDataFrame([tuple(r[f.name] for f in schema.fields) for r in rows], schema)


def _config(cfg: config.Config, root: Path, writer: str) -> config.Config:
    return dataclasses.replace(cfg, paths=config.PathSettings(checkpoints=str(root / "cp"),
                                                              tables=str(root / "t")),
                               job=dataclasses.replace(cfg.job, delta_writer=writer))


def _commits(location: str) -> list[dict]:
    """Each append of the table's log (not its CREATE, nor Spark's auto compaction): its engine and
    txn actions."""
    out = []
    for f in sorted((Path(location) / "_delta_log").glob("*.json")):
        actions = [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
        info = next((a["commitInfo"] for a in actions if "commitInfo" in a), {})
        if info.get("operation") != "WRITE":
            continue
        out.append({"engine": info.get("engineInfo") or info.get("clientVersion") or "",
                    "txn": [(a["txn"]["appId"], a["txn"]["version"]) for a in actions
                            if "txn" in a]})
    return out


def _read(spark, location: str) -> list:
    return sorted(spark.read.format("delta").load(location).collect(),
                  key=lambda r: (r["batch_id"], str(r)))


def _writer(spark, cfg: config.Config) -> sinks.BatchWriter:
    delta_tables.prepare(spark, cfg, cfg.checkpoint_path("rebalancer"))
    return sinks.BatchWriter(cfg, APP)


def test_driver_and_spark_appends_give_the_same_rows_once_per_batch(spark, cfg, tmp_path):
    root = tmp_path / uuid.uuid4().hex[:6]
    auto, plain = _config(cfg, root / "auto", "auto"), _config(cfg, root / "spark", "spark")
    w_auto, w_spark = _writer(spark, auto), _writer(spark, plain)
    # batch 1 replayed, as after a crash between the Delta commit and the checkpoint
    for batch_id in (0, 1, 1, 2):
        w_auto(_batch(spark, batch_id), batch_id)
        w_spark(_batch(spark, batch_id), batch_id)
    for table in (RECOMMENDATIONS, REJECTED):
        by_driver = _read(spark, auto.table_path(table))
        by_spark = _read(spark, plain.table_path(table))
        assert by_driver == by_spark
        assert sorted(r["batch_id"] for r in by_driver) \
            == sorted([0, 1, 2] * (3 if table == RECOMMENDATIONS else 2))
        commits = _commits(auto.table_path(table))
        assert [c["txn"] for c in commits] == [[(f"{APP}/{table}", b)] for b in (0, 1, 2)]
        assert all(c["engine"].startswith("delta-rs") for c in commits), commits
        assert all("Spark" in c["engine"] for c in _commits(plain.table_path(table)))
    rec = _read(spark, auto.table_path(RECOMMENDATIONS))[0]
    assert rec["assignment"][0]["partitions"][1]["partition"] == 2 \
        and rec["assignment"][1]["rack"] is None
    assert rec["after_catch_up_s"] is None and rec["event_time"].microsecond == 124_000
    changes = (spark.read.format("delta").option("readChangeFeed", "true")
               .option("startingVersion", 0).load(auto.table_path(RECOMMENDATIONS)))
    assert changes.filter("_change_type = 'insert'").count() == 9


def test_either_writer_skips_a_batch_the_other_committed(spark, cfg, tmp_path):
    root = tmp_path / uuid.uuid4().hex[:6]
    auto = _config(cfg, root, "auto")
    w_auto = _writer(spark, auto)
    w_spark = sinks.BatchWriter(
        dataclasses.replace(auto, job=dataclasses.replace(auto.job, delta_writer="spark")), APP)
    w_auto(_batch(spark, 0), 0)
    w_spark(_batch(spark, 0), 0)  # the job restarted with delta_writer = spark and replays batch 0
    w_spark(_batch(spark, 1), 1)
    w_auto(_batch(spark, 1), 1)  # and back
    location = auto.table_path(RECOMMENDATIONS)
    assert sorted(r["batch_id"] for r in _read(spark, location)) == [0] * 3 + [1] * 3
    engines = [c["engine"] for c in _commits(location)]
    assert len(engines) == 2 and engines[0].startswith("delta-rs") and "Spark" in engines[1]


def test_a_table_delta_rs_cannot_write_goes_to_spark(spark, cfg, tmp_path, caplog):
    auto = _config(cfg, tmp_path / uuid.uuid4().hex[:6], "auto")
    w_auto = _writer(spark, auto)
    location = auto.table_path(REJECTED)
    # a table feature delta-rs 1.x does not implement
    spark.sql(f"ALTER TABLE delta.`{location}` "
              "SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')")
    for batch_id in (0, 1):
        w_auto(_batch(spark, batch_id), batch_id)
    assert sorted(r["batch_id"] for r in _read(spark, location)) == [0, 0, 1, 1]
    assert all("Spark" in c["engine"] for c in _commits(location))
    assert sum("Spark appends to it from now on" in r.getMessage() for r in caplog.records) == 1
    recs = _commits(auto.table_path(RECOMMENDATIONS))
    assert [c["engine"][:8] for c in recs] == ["delta-rs"] * 2  # the other table is not affected


def test_spark_reads_delta_rs_checkpoints_and_compactions(spark, cfg, tmp_path):
    """A long run leaves delta-rs' own log checkpoints (every 100 commits) and compactions (every
    COMPACT_EVERY appends) in the table; Spark, which reads it for `maintain`, the version floors
    and `rebalancer recommendations`, must see the same rows and changes through them."""
    from deltalake import DeltaTable

    auto = _config(cfg, tmp_path / uuid.uuid4().hex[:6], "auto")
    w_auto = _writer(spark, auto)
    for batch_id in range(4):
        w_auto(_batch(spark, batch_id), batch_id)
    location = auto.table_path(RECOMMENDATIONS)
    before = _read(spark, location)
    assert w_auto.driver is not None
    w_auto.driver._compact(Path(location))  # as after COMPACT_EVERY appends
    DeltaTable(location).create_checkpoint()
    assert len(list(Path(location).glob("*.parquet"))) == 5 \
        and list((Path(location) / "_delta_log").glob("*.parquet"))
    w_auto(_batch(spark, 4), 4)
    after = _read(spark, location)
    assert after[:len(before)] == before \
        and sorted({r["batch_id"] for r in after}) == [0, 1, 2, 3, 4]
    assert delta_tables.file_count(spark, location) == 2  # the compacted file and batch 4's
    changes = (spark.read.format("delta").option("readChangeFeed", "true")
               .option("startingVersion", 0).load(location))
    # compaction changes nothing
    assert changes.count() == changes.filter("_change_type = 'insert'").count() == 15


def test_the_start_creates_and_reads_its_tables_as_spark_would(spark, cfg, tmp_path, caplog):
    """delta_log answers the job's start without a Spark job (local tables): the tables it creates
    have the schema and properties Spark's CREATE TABLE gives, and what it reads of them (schema,
    properties, each group's highest version) is what Spark reads, also from a table delta-rs
    cannot read, which Spark then reads."""
    auto = _config(cfg, tmp_path / uuid.uuid4().hex[:6], "auto")
    w_auto = _writer(spark, auto)  # prepare: creates both tables
    for name, ddl, cdf in ((RECOMMENDATIONS, RECOMMENDATIONS_DDL, True),
                           (REJECTED, REJECTED_DDL, False)):
        location = auto.table_path(name)
        first = _first_commit(location)
        assert first["operation"] == "CREATE TABLE" and "delta-rs" in first["clientVersion"]
        assert spark.read.format("delta").load(location).schema \
            == spark.createDataFrame([], ddl).schema == delta_log.schema_of(ddl)
        assert _spark_properties(spark, location) \
            == delta_tables.table_properties(auto, cdf) == delta_log.properties(spark, location)
    # job.delta_writer = spark: Spark creates them, as it appends to them
    plain = _config(cfg, tmp_path / uuid.uuid4().hex[:6], "spark")
    _writer(spark, plain)
    for name in (RECOMMENDATIONS, REJECTED):
        first = _first_commit(plain.table_path(name))
        assert first["operation"] == "CREATE TABLE" and "Apache-Spark" in first["engineInfo"]
    for batch_id in range(3):
        w_auto(_batch(spark, batch_id), batch_id)
    location = auto.table_path(RECOMMENDATIONS)
    spark.sql(f"ALTER TABLE delta.`{location}` ADD COLUMNS (later_col DOUBLE)")
    assert delta_log.max_versions(spark, location) == {"g0": 3, "g1": 3, "g2": 3} == {
        r["group"]: r["v"] for r in spark.read.format("delta").load(location)
        .groupBy("group").agg({"version": "max"}).withColumnRenamed("max(version)", "v")
        .collect()}
    # reader features delta-rs 1.x lacks: it reads the log (schema, properties), not the files
    spark.sql(f"ALTER TABLE delta.`{location}` SET TBLPROPERTIES ('delta.enableTypeWidening' = "
              "'true', 'delta.columnMapping.mode' = 'name', 'delta.minReaderVersion' = '2', "
              "'delta.minWriterVersion' = '5')")
    for table in (location, auto.table_path(REJECTED)):
        assert delta_log.schema(spark, table) == spark.read.format("delta").load(table).schema
        assert delta_log.properties(spark, table) == _spark_properties(spark, table)
    assert "later_col" in delta_log.schema(spark, location).fieldNames()
    caplog.clear()
    caplog.set_level(logging.INFO, logger=delta_log.__name__)
    assert delta_log.max_versions(spark, location) == {"g0": 3, "g1": 3, "g2": 3}
    assert [r.getMessage().split(" (")[0] for r in caplog.records
            if r.name == delta_log.__name__] == [f"delta-rs cannot read {location}"]


def _first_commit(location: str) -> dict:
    return json.loads((Path(location) / "_delta_log" / f"{0:020}.json")
                      .read_text().splitlines()[0])["commitInfo"]


def _spark_properties(spark, location: str) -> dict[str, str]:
    return dict(spark.sql(f"DESCRIBE DETAIL delta.`{location}`").first()["properties"])

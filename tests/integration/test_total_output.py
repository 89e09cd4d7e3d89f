"""Exact figures through both Delta writers, a recommendations table of an older release (its
figures in records DOUBLE) written by either writer without a schema error (issue #26, item 1), and
the step's rows that are for the driver alone (polls decided without their metadata)."""

from __future__ import annotations

import logging
import math
import uuid

import pytest

from streaming.contracts.recommendation import OUTPUT_COLUMNS, RECORDS_CAP
from streaming.contracts.tables import RECOMMENDATIONS, RECOMMENDATIONS_DDL, REJECTED
from streaming.exporter.metrics import JobMetrics
from streaming.job import convert, sinks
from streaming.operations import delta_tables
from streaming.state.group_state import METADATA_MISSING

from .test_driver_delta import _batch, _config, _read, _rec, _rejected

pytestmark = pytest.mark.integration

OLD_DDL = RECOMMENDATIONS_DDL.replace("max_lag BIGINT", "max_lag DOUBLE").replace(
    "lag_moved BIGINT", "lag_moved DOUBLE")


def _extreme_batch(spark, batch_id: int):
    recs = [_rec("huge", batch_id + 1, math.inf) | {
                "before_max_lag": RECORDS_CAP, "after_max_lag": 2**53 + 1, "lag_moved": 2**62 + 3,
                "before_imbalance": math.nan, "after_imbalance": -math.inf, "lower_bound": 2.0**70},
            _rejected(7)]
    schema = spark.createDataFrame([], convert.ROW_SCHEMA).schema
    return spark.createDataFrame([tuple(r[f.name] for f in schema.fields) for r in recs], schema)


def test_the_workers_row_type_is_the_one_spark_parses(spark):
    assert spark.createDataFrame([], convert.ROW_SCHEMA).schema == convert.row_type()


@pytest.mark.parametrize("writer", ["auto", "spark"])
def test_figures_in_records_are_exact_and_doubles_finite_or_null(spark, cfg, tmp_path, writer):
    c = _config(cfg, tmp_path / uuid.uuid4().hex[:6], writer)
    delta_tables.prepare(spark, c, c.checkpoint_path("rebalancer"))
    sinks.BatchWriter(c, "app")(_extreme_batch(spark, 0), 0)
    [row] = _read(spark, c.table_path(RECOMMENDATIONS))
    assert (row["before_max_lag"], row["after_max_lag"], row["lag_moved"]) \
        == (RECORDS_CAP, 2**53 + 1, 2**62 + 3)
    assert row["before_imbalance"] is None and row["after_imbalance"] is None \
        and row["lag_age_s"] is None
    assert row["lower_bound"] == 2.0**70


@pytest.mark.parametrize("writer", ["auto", "spark"])
def test_an_older_table_keeps_its_double_columns_and_takes_new_rows(spark, cfg, tmp_path, writer):
    c = _config(cfg, tmp_path / uuid.uuid4().hex[:6], writer)
    location = c.table_path(RECOMMENDATIONS)
    spark.sql(f"CREATE TABLE delta.`{location}` ({OLD_DDL}) USING DELTA "
              "TBLPROPERTIES (delta.enableChangeDataFeed = true)")
    delta_tables.prepare(spark, c, c.checkpoint_path("rebalancer"))  # no schema error
    assert delta_tables.KEPT_TYPES[location] == {"before_max_lag": "double",
                                                 "after_max_lag": "double", "lag_moved": "double"}
    w = sinks.BatchWriter(c, "app")
    w(_batch(spark, 0), 0)
    w(_extreme_batch(spark, 1), 1)
    rows = _read(spark, location)
    assert len(rows) == 4
    assert spark.read.format("delta").load(location).schema["before_max_lag"].dataType \
        .simpleString() == "double"
    huge = next(r for r in rows if r["group"] == "huge")
    assert huge["before_max_lag"] == float(RECORDS_CAP) and huge["lag_moved"] == float(2**62 + 3)
    assert {r["before_max_lag"] for r in rows if r["group"] != "huge"} == {900.0}


def test_polls_decided_without_their_metadata_are_logged_and_counted_not_written(
        spark, cfg, tmp_path, caplog):
    """The step's ``metadata_missing`` rows (stateful.missing_rows) reach neither table: the driver
    logs the batch's count with the groups and counts them in the job's metrics."""
    c = _config(cfg, tmp_path / uuid.uuid4().hex[:6], "auto")
    delta_tables.prepare(spark, c, c.checkpoint_path("rebalancer"))
    metrics = JobMetrics()
    missing = [{"kind": METADATA_MISSING, **{k: None for k in OUTPUT_COLUMNS}, "group": g,
                "event_ts": ts, "rejected": None}
               for g, ts in (("g1", 1_000), ("g1", 1_000), ("g0", 2_000))]
    schema = spark.createDataFrame([], convert.ROW_SCHEMA).schema
    rows = [_rec("g0", 1, 1.0), _rejected(3), *missing]
    batch = spark.createDataFrame([tuple(r[f.name] for f in schema.fields) for r in rows], schema)
    with caplog.at_level(logging.WARNING, logger=sinks.__name__):
        sinks.BatchWriter(c, "app", metrics=metrics)(batch, 0)
    assert [r["group"] for r in _read(spark, c.table_path(RECOMMENDATIONS))] == ["g0"]
    assert len(_read(spark, c.table_path(REJECTED))) == 1
    [said] = [r.getMessage() for r in caplog.records if "metadata event" in r.getMessage()]
    assert "batch 0 decided 3 poll(s)" in said and "g0 by ts 2000, g1 by ts 1000" in said
    assert metrics.registry.get_sample_value(
        "kafka_rebalancer_job_polls_missing_metadata_total") == 3

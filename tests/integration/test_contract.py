"""Properties over records drawn from the contract (issue #26, item 3): (a) through validation on
Spark, every record is valid with every figure exactly what it sent, or rejected with a reason; (c)
recommendations made from drawn groups go through both Delta writers (delta-rs and Spark) with every
figure as made: figures in records exact integers, doubles finite or null. Seeded draws, one Spark
job each, to keep CI time short."""

from __future__ import annotations

import datetime as dt
import functools
import json
import math
import uuid

import pandas as pd
import pytest

from benchmarks.job.dense_step import State
from streaming.config import PolicySettings
from streaming.contracts import events as ev
from streaming.contracts.recommendation import DOUBLE_COLUMNS, RECORDS_CAP, RECORDS_COLUMNS
from streaming.contracts.tables import RECOMMENDATIONS
from streaming.dev.fuzz import contract, seeded
from streaming.dev.fuzz.kinds import LAG_ROLE, META_ROLE, Record
from streaming.job import convert, sinks, stateful, validate
from streaming.operations import delta_tables
from streaming.state.ingest import READINGS, packed

from .test_driver_delta import _config, _read

pytestmark = pytest.mark.integration

NOW = 1_763_800_000_000
LAG_TOPIC, META_TOPIC = "rebalancer.lag", "rebalancer.metadata"
RAW_SCHEMA = ("key binary, value binary, topic string, partition int, offset long, "
              "timestamp timestamp, timestampType int")
LONG_MAX, INT_MAX = 2**63 - 1, 2**31 - 1
POLICY = PolicySettings(skew_observations=3, min_total_lag=1000, cooldown_s=300)


def _raw(spark, records):
    stamp = dt.datetime.fromtimestamp(NOW / 1000, tz=dt.UTC)
    rows = [(r.key, r.value, LAG_TOPIC if r.role == LAG_ROLE else META_TOPIC, 0, i, stamp, 0)
            for i, r in enumerate(records)]
    return spark.createDataFrame(rows, RAW_SCHEMA)


def _check_valid(row: dict, value: bytes) -> None:
    """A valid row carries exactly what the record sent, inside the contract's bounds."""
    sent = json.loads(value)
    assert (row["group"], row["type"], row["ts"]) == (sent["group"], sent["type"], sent["ts"])
    assert 0 < row["ts"] <= LONG_MAX
    if sent["type"] == ev.LAG:
        assert (row["partition"], row["committed_offset"], row["end_offset"]) == (
            sent["partition"], sent["committed_offset"], sent["end_offset"])
        assert 0 <= row["partition"] <= INT_MAX \
            and 0 <= row["committed_offset"] <= row["end_offset"] <= LONG_MAX
    elif sent["type"] == ev.LAG_DENSE:
        # the good entries, each one of those sent and inside the bounds
        n = len(row["readings"]) // 3
        got = list(zip(*(row["readings"][k * n:(k + 1) * n] for k in range(3)), strict=True))
        # as JSON: a bad entry of a record with good ones may hold a list, which no set takes
        entries = {json.dumps(e) for e in zip(*(sent[a] for a in ev.DENSE_ARRAYS), strict=True)}
        assert {json.dumps(e) for e in got} <= entries
        # an entry is either read or rejected with its reason (all of them, when every one breaks a
        # rule: a partition repeated throughout)
        assert n + len(json.loads(row["detail"] or "[]")) == len(sent["partitions"])
        assert all(0 <= p <= INT_MAX and 0 <= c <= e <= LONG_MAX for p, c, e in got)
        assert len({p for p, _, _ in got}) == n
        assert all(r["reason"].startswith("lag_dense entry ")
                   for r in json.loads(row["detail"] or "[]"))
    elif sent["type"] == ev.MEMBERS:
        detail = json.loads(row["detail"])
        assert detail["generation"] == sent["generation"]
        # each member's load as sent, every figure of it (a field the job's schema left out once
        # dropped a record's cost on its way to the state)
        got = [{k: v for k, v in (m.get("load") or {}).items() if v is not None}
               for m in detail["members"]]
        assert got == [{k: v for k, v in (m.get("load") or {}).items() if v is not None}
                       for m in sent["members"]]
        lags = [m["load"].get("records_lag_min") for m in sent["members"] if m.get("load")]
        assert all(v is None or (type(v) is int and 0 <= v <= LONG_MAX) for v in lags), lags


def test_every_drawn_record_is_valid_and_exact_or_rejected_with_a_reason(spark):
    records = contract.generate(seed=11, n=400, ts=NOW - 60_000)
    out = validate.parse(_raw(spark, records), 64 * 1024, 600_000, LAG_TOPIC).collect()
    assert len(out) == len(records)
    valid = 0
    for row in (r.asDict() for r in out):
        value = records[row["source_offset"]].value
        if row["type"] is not None:
            _check_valid(row, value)
            valid += 1
        else:
            reason = json.loads(row["detail"])["reason"]
            assert isinstance(reason, str) and reason.strip(), row
    assert 50 < valid < len(records)  # both sides of the property are reached


def test_a_members_load_comes_through_with_every_figure(spark):
    """A member's load as its report made it, a record's cost and its least lag with them or
    without, kept whole (the drawn records seldom reach a valid members event whose members all
    carry one)."""
    members = [ev.member_entry(f"m{i}", ["t"], [("t", i)], client_id=f"c{i}") for i in range(3)]
    members[0]["load"] = {"ts": NOW, "busy": 0.65, "records_per_s": 40.0, "record_cost_s": 0.0083,
                          "records_lag_min": 0}
    members[1]["load"] = {"ts": NOW, "busy": 1, "records_per_s": 0, "record_cost_s": 3600,
                          "records_lag_min": LONG_MAX}
    members[2]["load"] = {"ts": NOW, "busy": 0.5, "records_per_s": 12.5}
    value = json.dumps(ev.members_event(NOW - 1000, "g", 3, "range", members)).encode()
    (row,) = validate.parse(_raw(spark, [Record("members", META_ROLE, b"g", value, "valid")]),
                            64 * 1024, 600_000, LAG_TOPIC).collect()
    assert row["type"] == ev.MEMBERS, row
    _check_valid(row.asDict(), value)


@functools.cache
def _recommendation_rows() -> list[dict]:
    """The stateful step's rows for seeded drawn groups (lags at the contract's bounds)."""
    update = stateful.update_function(stateful.Context(POLICY, 600_000))
    rows: list[dict] = []
    for i, named in enumerate(seeded.draw(contract.scenario(NOW), 60, 5)):
        events = [json.loads(r.value) for r in named(f"g{i}")]
        described = ("generation", "protocol", "members", "partitions")
        frame = pd.DataFrame([{"type": e["type"], "ts": e["ts"], "topic": e.get("topic"),
                               "partition": e.get("partition", 0) if e["type"] == ev.LAG else 0,
                               "committed_offset": e.get("committed_offset", 0),
                               "end_offset": e.get("end_offset", 0),
                               "detail": None if e["type"] in ev.LAG_TYPES else json.dumps(
                                   {k: e[k] for k in described if k in e}),
                               READINGS: packed(e) if e["type"] == ev.LAG_DENSE else None,
                               "source_partition": 0, "source_offset": n}
                               for n, e in enumerate(events)])
        state = State()
        rows += [r for df in update((f"g{i}",), iter([frame]), state)
                 for r in df.to_dict("records")]
    return rows


@pytest.mark.parametrize("writer", ["auto", "spark"])
def test_drawn_recommendations_keep_every_figure_through_either_writer(spark, cfg, tmp_path,
                                                                       writer):
    made = [r for r in _recommendation_rows() if r["kind"] == "recommendation"]
    assert len(made) >= 5 and any(r["before_max_lag"] > 2**53 for r in made)
    c = _config(cfg, tmp_path / uuid.uuid4().hex[:6], writer)
    delta_tables.prepare(spark, c, c.checkpoint_path("rebalancer"))
    schema = spark.createDataFrame([], convert.ROW_SCHEMA).schema
    batch = spark.createDataFrame([tuple(r[f.name] for f in schema.fields) for r in made], schema)
    sinks.BatchWriter(c, "app")(batch, 0)
    written = {(r["group"], r["version"]): r for r in _read(spark, c.table_path(RECOMMENDATIONS))}
    assert len(written) == len(made)
    for r in made:
        w = written[(r["group"], r["version"])]
        for col in RECORDS_COLUMNS:
            assert w[col] == r[col] and isinstance(w[col], int) and 0 <= w[col] <= RECORDS_CAP
        for col in DOUBLE_COLUMNS:
            assert w[col] == r[col] and (w[col] is None or math.isfinite(w[col]))


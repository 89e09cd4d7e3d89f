"""The whole record, drawn from the contract (issue #47, item 2).

Complete Kafka records, as Spark's Kafka source hands them over (key, value, topic, partition,
offset, Kafka timestamp and its type, -1 and log-append time included, headers), are drawn for
several groups, both topics and any interleaving: values adversarial
(:func:`streaming.dev.fuzz.contract.records`: every field at and beyond its bounds) or valid events
drawn from what the stateful step assumes (:mod:`streaming.dev.fuzz.valid_rows`). They go through
``validate.parse`` on Spark, then through the stateful step in both state layouts under pyspark's
serializer (the sinks' Arrow conversion), the state carried over two micro-batches. Hypothesis
shrinks a failure to its records.

- every record is valid, or rejected with a reason;
- every accepted row meets what the step assumes (:func:`streaming.contracts.validated.problem`):
  validation guarantees the statement the step is held to;
- no accepted ``ts`` is more than the clock skew past its record's own Kafka timestamp, and none
  comes from a record without one: no record moves the event-time watermark further;
- the step rejects no row validation accepted (nothing is late here, so every rejection it writes is
  validation's own): no valid record is rejected because of another record."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

from streaming.config import PolicySettings
from streaming.contracts import validated
from streaming.contracts.events import LAG_TYPES
from streaming.dev.fuzz import contract
from streaming.dev.fuzz import valid_rows as drawn
from streaming.dev.fuzz.kinds import LAG_ROLE
from streaming.job import buckets, stateful, validate
from tests.unit.streaming.job import pyspark_worker

pytestmark = pytest.mark.integration

NOW = 1_763_800_000_000
SKEW_MS = 600_000
LAG_TOPIC, META_TOPIC = "rebalancer.lag", "rebalancer.metadata"
GROUPS = ("g0", "g1", "ü-2")
POLICY = PolicySettings(skew_observations=2, min_total_lag=1, cooldown_s=0)
COLUMNS = ["group", *stateful.EVENT_COLUMNS, *stateful.SOURCE_COLUMNS]
RAW_SCHEMA = (
    "key binary, value binary, topic string, partition int, offset long, kafka_ms long, "
    "timestampType int, "
    "headers array<struct<key: string, value: binary>>"
)


def _valid(group: str) -> st.SearchStrategy[tuple[bytes | None, bytes, str]]:
    """(key, value, topic) of valid events of ``group`` (its key now and then absent)."""
    return st.tuples(drawn.events(NOW, group, max_size=3), st.booleans()).map(
        lambda eb: [
            (
                None if eb[1] else group.encode(),
                json.dumps(e, separators=(",", ":")).encode(),
                LAG_TOPIC if e["type"] in LAG_TYPES else META_TOPIC,
            )
            for e in eb[0]
        ]
    )


ADVERSARIAL = contract.records(NOW).map(
    lambda r: [(r.key, r.value, LAG_TOPIC if r.role == LAG_ROLE else META_TOPIC)]
)
CLOCK = st.one_of(
    st.just(NOW + 120_000),
    st.just(NOW + 120_000),
    st.sampled_from([-1, 0, 1, NOW - 10**9, NOW + SKEW_MS, validated.MAX_TS_MS]),
)
HEADERS = st.lists(st.tuples(st.text(max_size=4), st.binary(max_size=4)), max_size=2)
RECORDS = st.lists(
    st.tuples(st.one_of(ADVERSARIAL, *(_valid(g) for g in GROUPS)), CLOCK, st.booleans(), HEADERS),
    min_size=1,
    max_size=8,
)


def _raw(spark, drawn_records: list) -> tuple[object, list[int]]:
    """Kafka-source rows of the drawn records (offset i: record i), and each record's Kafka
    timestamp."""
    rows, clocks = [], []
    for batch, kafka_ms, appended, headers in drawn_records:
        for key, value, topic in batch:
            kind = (
                -1 if kafka_ms == -1 else int(appended)
            )  # no timestamp, CreateTime or LogAppendTime
            rows.append((key, value, topic, len(rows) % 3, len(rows), kafka_ms, kind, headers))
            clocks.append(kafka_ms)
    raw = spark.createDataFrame(rows, RAW_SCHEMA).select(
        "key",
        "value",
        "topic",
        "partition",
        "offset",
        F.timestamp_millis("kafka_ms").alias("timestamp"),
        "timestampType",
        "headers",
    )
    return raw, clocks


def _step(rows: list[dict], bucketed: bool) -> list[dict]:
    """The rows through one layout, in two micro-batches (even and odd offsets), the state
    carried."""
    ctx = stateful.Context(POLICY, 600_000)
    out: list[dict] = []
    blobs: dict = {}
    for half in (0, 1):
        mine = [r for r in rows if r["source_offset"] % 2 == half]
        calls = (
            {0: mine}
            if bucketed
            else {g: [r for r in mine if r["group"] == g] for g in {r["group"] for r in mine}}
        )
        for key, part in calls.items():
            if not part:
                continue
            frame = pd.DataFrame(part, columns=COLUMNS)
            update = buckets.update_function(ctx, 1) if bucketed else stateful.update_function(ctx)
            res = pyspark_worker.run(
                update,
                (key,),
                [frame if bucketed else frame.drop(columns="group")],
                blobs.get(key),
                safecheck=bucketed,
            )
            blobs[key] = res.blob
            out += res.rows
    return out


@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(records=RECORDS)
def test_whole_records_are_valid_or_rejected_and_none_is_lost_for_another(spark, records):
    raw, clocks = _raw(spark, records)
    parsed = [
        r.asDict()
        for r in validate.parse(raw, 64 * 1024, SKEW_MS, LAG_TOPIC)
        .withColumn("event_time", F.unix_millis("event_time"))
        .collect()
    ]
    assert sorted(r["source_offset"] for r in parsed) == list(range(len(clocks)))
    accepted = [r for r in parsed if r["type"] is not None]
    for r in parsed:
        if r["type"] is None:
            assert json.loads(r["detail"])["reason"], r
    assert [(r["source_offset"], validated.problem(r)) for r in accepted] == [
        (r["source_offset"], None) for r in accepted
    ]
    # the watermark's column: each accepted record's ts, within the skew of its own Kafka timestamp
    assert all(
        clocks[r["source_offset"]] >= 0
        and r["event_time"] == r["ts"] <= clocks[r["source_offset"]] + SKEW_MS
        for r in accepted
    )
    own = {
        d["source_offset"]
        for r in parsed
        if r["detail"] and r["type"] in (None, "lag_dense")
        for d in _details(r)
    }
    for bucketed in (False, True):
        out = _step(parsed, bucketed)
        rejected = [json.loads(r["rejected"]) for r in out if r["kind"] == "rejected"]
        assert not [
            r
            for r in rejected
            if r["source_offset"] not in own or r["reason"].startswith(("internal error", "late"))
        ], bucketed


def _details(row: dict) -> list[dict]:
    """The rejected rows validation put in a row's detail: a rejected record's one, a lag_dense
    record's bad entries."""
    detail = json.loads(row["detail"])
    return detail if isinstance(detail, list) else [detail]

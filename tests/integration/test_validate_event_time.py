"""Event time through validate.parse on Spark (issue #47): a record without a Kafka timestamp (-1,
as Spark's Kafka source hands over a v0 record or one a client wrote without) is rejected
whatever its ``ts``, a ``ts`` at its extremes (0, negative, 2^63-1, past what a timestamp holds)
is rejected with a reason, nothing overflows under ANSI mode, and every accepted ``ts`` is at
most ``max_clock_skew`` past the record's own Kafka timestamp (so no record moves the watermark
further). Before the rule, the rows with Kafka timestamp -1 and ``ts`` 2^63-1 were accepted and
``event_time`` raised: the query failed on every replay."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from streaming.contracts import events as ev
from streaming.job import event_time, validate

pytestmark = pytest.mark.integration

LAG_TOPIC, META_TOPIC = "rebalancer.lag", "rebalancer.metadata"
NOW = 1_763_800_000_000
SKEW_MS = 600_000
LONG_MAX = 2**63 - 1
MAX_MS = event_time.MAX_TS_MS
KAFKA_MS = (-1, None, 0, 1, NOW, MAX_MS - 1_000, MAX_MS)
"""Kafka timestamps: none (-1), null (a frame built by hand), the epoch, now, and at the last
millisecond Spark holds."""
TS = (
    -(2**63),
    -1,
    0,
    1,
    2,
    NOW - 10**9,
    NOW,
    NOW + SKEW_MS,
    NOW + SKEW_MS + 1,
    10**17,
    MAX_MS - 1_000 + SKEW_MS,
    MAX_MS,
    MAX_MS + 1,
    LONG_MAX - 1,
    LONG_MAX,
)
RAW_SCHEMA = (
    "key binary, value binary, topic string, partition int, offset long, kafka_ms long, "
    "timestampType int"
)


def _texts(ts: int) -> list[tuple[str, str]]:
    """(text, topic): a collector lag event (the fast path), a lag_dense one and a members one (the
    general path)."""
    lag = ev.lag_event(ts, "g", "t0", 0, 10, 20)
    dense = ev.dense_lag_event(ts, "g", "t0", [0, 1], [1, 2], [3, 4])
    members = ev.members_event(ts, "g", 1, "range", [ev.member_entry("m", ["t0"], [("t0", 0)])])
    return [
        (ev.encode(e)[1].decode(), LAG_TOPIC if e["type"] in ev.LAG_TYPES else META_TOPIC)
        for e in (lag, dense, members)
    ]


@pytest.fixture(scope="module")
def records(spark):
    rows, cases = [], []
    for kafka_ms in KAFKA_MS:
        for ts in TS:
            for text, topic in _texts(ts):
                kind = (
                    -1 if kafka_ms == -1 else len(rows) % 2
                )  # CreateTime or LogAppendTime: the rule is one
                rows.append((b"g", text.encode(), topic, 0, len(rows), kafka_ms, kind))
                cases.append((kafka_ms, ts))
    # the Kafka source's timestamp column: the record's epoch ms (-1: 1 ms before the epoch)
    raw = spark.createDataFrame(rows, RAW_SCHEMA).select(
        "key",
        "value",
        "topic",
        "partition",
        "offset",
        F.timestamp_millis("kafka_ms").alias("timestamp"),
        "timestampType",
    )
    return raw, cases


def _expected(kafka_ms: int | None, ts: int) -> str | None:
    """The start of the reason the record must be rejected with, None when it is valid."""
    if ts <= 0:
        return f"ts {ts} is not positive"
    if kafka_ms is None or kafka_ms < 0:
        return event_time.NO_KAFKA_TIMESTAMP
    if ts - kafka_ms > SKEW_MS:
        return f"ts {ts} is more than {SKEW_MS} ms ahead"
    return f"ts {ts} is past the last epoch millisecond" if ts > MAX_MS else None


@pytest.mark.parametrize("fast_path", [True, False])
def test_no_kafka_timestamp_is_rejected_and_no_ts_overflows(records, fast_path):
    raw, cases = records
    out = validate.parse(raw, 64 * 1024, SKEW_MS, LAG_TOPIC, fast_path=fast_path)
    # collected with event_time: a timestamp_millis that overflowed would raise here (ANSI mode)
    got = sorted(
        (
            r.asDict()
            for r in out.select(
                "type",
                "source_offset",
                F.unix_millis("event_time").alias("event_ms"),
                F.get_json_object("detail", "$.reason").alias("reason"),
            ).collect()
        ),
        key=lambda r: r["source_offset"],
    )
    assert len(got) == len(cases)
    wrong = []
    for row, (kafka_ms, ts) in zip(got, cases, strict=True):
        expected = _expected(kafka_ms, ts)
        if expected is None:
            ok = row["type"] is not None and row["event_ms"] == ts and ts <= kafka_ms + SKEW_MS
        else:
            ok = (
                row["type"] is None
                and row["event_ms"] is None
                and (row["reason"] or "").startswith(expected)
            )
        if not ok:
            wrong.append((kafka_ms, ts, expected, row["type"], row["reason"]))
    assert not wrong, wrong[:5]


def test_every_accepted_ts_is_within_the_skew_of_its_own_kafka_timestamp(records):
    raw, cases = records
    out = validate.parse(raw, 64 * 1024, SKEW_MS, LAG_TOPIC).where(F.col("type").isNotNull())
    accepted = [
        (cases[r["source_offset"]], r["ts"]) for r in out.select("source_offset", "ts").collect()
    ]
    assert accepted  # the property is not vacuous
    assert all(
        kafka_ms is not None and kafka_ms >= 0 and 0 < ts <= kafka_ms + SKEW_MS
        for (kafka_ms, _), ts in accepted
    )
    assert {k for (k, _), _ in accepted} == {0, 1, NOW, MAX_MS - 1_000, MAX_MS}

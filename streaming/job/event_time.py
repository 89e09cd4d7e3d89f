"""Event time: which ``ts`` a record may carry, given the Kafka timestamp it arrived with.

The watermark follows ``event_time`` (``ts``), and Spark never moves a watermark back: one record
whose ``ts`` is a year ahead makes every later record late for a year. So a ``ts`` is bounded by
the only clock a replay sees again exactly, the record's own Kafka timestamp: it may lag it by
any amount (an old reading can only be late) and lead it by at most ``job.max_clock_skew_s``. The
rules, in the order :func:`reason` checks them:

- ``ts`` positive (epoch milliseconds);
- the record has a Kafka timestamp. Kafka writes -1 (``RecordBatch.NO_TIMESTAMP``) where a record
  has none: message format v0 (clients before 0.10, and records converted down to it), and a
  producer may not set any other negative one. Spark's Kafka source hands it over as the instant
  1 ms before the epoch (``unix_millis`` -1, ``timestampType`` -1). Such a record's ``ts`` cannot
  be bounded by the skew rule, and no other bound is deterministic: the batch's time, the newest
  Kafka timestamp seen or the watermark itself all change with how a replay cuts the batches, and
  a record accepted on one run and rejected on the next would make the state depend on it. So it
  is rejected (``no Kafka timestamp``), always, whatever its ``ts``: the collector's records
  carry one (any client since Kafka 0.10 writes it; a broker with
  ``message.timestamp.type=LogAppendTime`` writes its own clock, which bounds ``ts`` as well). A
  null Kafka timestamp (never from the Kafka source; a frame built by hand) counts as none;
- ``ts`` at most ``max_clock_skew_ms`` ahead of the Kafka timestamp, compared as a difference of
  two values clamped to 0..2^63-1, which cannot overflow (``kafka_ms + max_clock_skew_ms`` could,
  near 2^63, and an expression Spark evaluates ahead of its branch must not raise either);
- ``ts`` at most :data:`MAX_TS_MS`, the last millisecond a Spark timestamp (microseconds in a
  long) holds, so :func:`column`'s ``timestamp_millis`` cannot overflow under ANSI mode (which
  would fail the query on every replay). Only a Kafka timestamp within ``max_clock_skew_ms`` of
  that limit (year 294,247) lets a ``ts`` that large reach this rule.

A ``ts`` at its extremes (0, negative, 2^63-1) is thus rejected with a reason by the first rule
it breaks, and every accepted ``ts`` is in 1..min(Kafka timestamp + skew, :data:`MAX_TS_MS`): no
record moves the watermark more than the skew past its own Kafka timestamp.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from streaming.contracts.validated import MAX_TS_MS

__all__ = ["MAX_TS_MS", "NO_KAFKA_TIMESTAMP", "column", "kafka_millis", "known_kafka_millis",
           "reason"]
NO_KAFKA_TIMESTAMP = "no Kafka timestamp"
"""The start of the reason of a record without one (its ``ts`` cannot be bounded)."""


def kafka_millis(timestamp: Column) -> Column:
    """The Kafka source's ``timestamp`` as epoch milliseconds (-1: the record has none)."""
    return F.unix_millis(timestamp)


def known_kafka_millis(timestamp: Column) -> Column:
    """:func:`kafka_millis`, null for a record without a timestamp: a rejected row's ``kafka_ts``
    (Spark reads Kafka's -1 as 1969-12-31 23:59:59.999, a time the record was not made)."""
    ms = kafka_millis(timestamp)
    return F.when(ms >= 0, ms)


def reason(ts: Column, kafka_ms: Column, max_clock_skew_ms: int) -> Column:
    """The first event-time rule ``ts`` (a LONG, not null) breaks for a record with Kafka timestamp
    ``kafka_ms`` (epoch ms, -1 or null: none), else null."""
    none = F.coalesce(kafka_ms < 0, F.lit(True))
    return F.coalesce(
        F.when(ts <= 0, F.format_string("ts %d is not positive epoch milliseconds", ts)),
        F.when(
            none,
            F.format_string(
                f"{NO_KAFKA_TIMESTAMP} (%s): ts %d cannot be bounded by job.max_clock_skew_s",
                F.coalesce(kafka_ms.cast("string"), F.lit("null")),
                ts,
            ),
        ),
        F.when(
            F.greatest(ts, F.lit(0)) - F.greatest(kafka_ms, F.lit(0)) > max_clock_skew_ms,
            F.format_string(
                "ts %d is more than %d ms ahead of the record's Kafka timestamp %d",
                ts,
                F.lit(max_clock_skew_ms),
                kafka_ms,
            ),
        ),
        F.when(
            ts > MAX_TS_MS,
            F.format_string(f"ts %d is past the last epoch millisecond {MAX_TS_MS}", ts),
        ),
    )


def column(ts: Column, ok: Column) -> Column:
    """``event_time`` (the watermark's column) of a record: its ``ts`` when ``ok`` (the record
    passed every rule, :func:`reason` among them, so the conversion cannot overflow), else null."""
    return F.when(ok, F.timestamp_millis(ts))

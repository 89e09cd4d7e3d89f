"""Every kind of malformed, extreme and adversarial record through the real job (Kafka -> Spark ->
Delta): the query keeps running, each malformed record is in rejected_events with its expected
reason (matched by source offset), nothing valid is rejected, and a valid skewed group in the same
batch still gets its recommendation.

Two runs on one checkpoint: the first sets the watermark (one valid event), so in the second a
record far in the past is late, and must come out as rejected with reason ``late``."""

from __future__ import annotations

import dataclasses
import time
import uuid

import pytest

from streaming.contracts import events as ev
from streaming.contracts.tables import RECOMMENDATIONS, REJECTED
from streaming.dev.fuzz import judge, kinds
from streaming.job import query

from .test_job import job_config, rows

PER_KIND = 3
MAX_VALUE_BYTES = 64 * 1024


@pytest.fixture(scope="module")
def fuzz_run_result(spark, cfg):
    tag = "fz" + uuid.uuid4().hex[:6]
    base = job_config(cfg, tag)
    jc = dataclasses.replace(base, job=dataclasses.replace(base.job,
                                                           max_value_bytes=MAX_VALUE_BYTES))
    now = int(time.time() * 1000)
    query.ensure_topics(jc)

    # run 1: one valid event 5 minutes ago; the watermark (2 minutes behind) ends 7 minutes ago
    judge.send(jc, [], [ev.lag_event(now - 300_000, "clock", "t0", 0, 10, 20)])
    first = query.run(spark, jc, available_now=True)

    # run 2: the fuzz records and a skewed group, all after the watermark except the late kind
    records = kinds.generate(seed=12, n=PER_KIND * len(kinds.KINDS), ts=now - 180_000,
                            max_value_bytes=MAX_VALUE_BYTES)
    sent = judge.send(jc, records, [*kinds.skewed_group("skewed", now - 240_000),
                                       *kinds.deleted_topic_group("deleted", now - 240_000)])
    second = query.run(spark, jc, available_now=True)

    rejected = rows(spark, jc, REJECTED)
    recs = rows(spark, jc, RECOMMENDATIONS)
    verdict = judge.verdict(sent, [((r["source_topic"], r["source_partition"],
                                        r["source_offset"]), r["reason"])
                                      for r in rejected])
    return verdict, rejected, recs, first + second, sent


def test_the_generator_covers_every_kind_and_more_than_fifty(fuzz_run_result):
    verdict, *_ = fuzz_run_result
    assert verdict.kinds == len(kinds.KINDS) >= 50
    assert verdict.sent == PER_KIND * len(kinds.KINDS)


def test_every_malformed_record_is_rejected_with_its_reason_and_nothing_valid_is_lost(
        fuzz_run_result):
    verdict, rejected, _, _, sent = fuzz_run_result
    assert verdict.missing == []
    assert verdict.wrong_reason == []
    assert verdict.valid_lost == []
    assert verdict.unexpected == 0  # the clock and skewed-group events were all accepted
    n_rejected = sum(1 for s in sent if s.record.expected != kinds.VALID)
    assert len(rejected) == n_rejected
    assert verdict.accepted == len(sent) - n_rejected
    for r in rejected:
        assert r["raw_value"] is not None or r["reason"] == "null value"
        assert r["raw_value"] is None or len(r["raw_value"]) <= 1000


def test_late_records_are_rejected_as_late_not_dropped(fuzz_run_result):
    _, rejected, _, batches, sent = fuzz_run_result
    late = [s for s in sent if s.record.expected == kinds.LATE]
    assert late
    reasons = {(r["source_topic"], r["source_partition"], r["source_offset"]): r["reason"]
               for r in rejected}
    assert all(reasons[s.source] == "late" for s in late)
    # nothing vanished under Spark's own late-row filter
    assert all(b["late"] == 0 for b in batches)


def test_the_valid_skewed_group_still_gets_its_recommendation(fuzz_run_result):
    _, _, recs, _, _ = fuzz_run_result
    skewed = [r for r in recs if r["group"] == "skewed"]
    assert [r["triggers"] for r in skewed] == [["lag_skew"]]
    assert skewed[0]["before_max_lag"] == 17000 and skewed[0]["after_max_lag"] == 9000


def test_a_group_that_read_a_deleted_topic_still_gets_its_recommendation(fuzz_run_result):
    """Issue #47: the empty lag history a deleted topic left made every later poll of the group
    raise (its readings rejected as internal errors); none of its events may be rejected."""
    _, rejected, recs, _, _ = fuzz_run_result
    assert [r["triggers"] for r in recs if r["group"] == "deleted"] == [["lag_skew"]]
    assert not [r for r in rejected if r["group"] == "deleted"]


def test_records_without_a_kafka_timestamp_are_rejected_and_the_job_goes_on(fuzz_run_result):
    """Issue #47: a record with Kafka timestamp -1 escaped the clock-skew rule; with ts 2^63-1 the
    query failed on every replay. Now each is rejected (``no Kafka timestamp``), and the groups
    after them still recommend."""
    _, rejected, recs, batches, sent = fuzz_run_result
    none = [s for s in sent if s.record.kafka_ts == -1]
    assert len(none) == PER_KIND * 4 and batches
    by_source = {(r["source_topic"], r["source_partition"], r["source_offset"]): r
                 for r in rejected}
    # no time rather than Kafka's -1 as Spark's source reads it (1969-12-31 23:59:59.999): the
    # record has none
    assert all(by_source[s.source]["kafka_timestamp"] is None for s in none)
    assert {r["group"] for r in recs} >= {"skewed", "deleted"}

"""The issue's first failure through the real job (Kafka -> Spark -> Delta), with records drawn from
the contract beside it (issue #26): a group whose lag events are inside the contract but whose lags
pass 2^53 (their sum past 2^63-1) stopped the query in pyspark's conversion after the stateful step,
on every restart. Now the query runs to the end, the group's recommendation has its figures exact
(saturated at 2^63-1), and every drawn record is valid or rejected with a reason."""

from __future__ import annotations

import json
import time
import uuid

import pytest

from streaming.contracts import events as ev
from streaming.contracts.recommendation import RECORDS_CAP
from streaming.contracts.tables import RECOMMENDATIONS, REJECTED
from streaming.dev.fuzz import contract, judge
from streaming.job import query

from .test_job import job_config, rows

pytestmark = pytest.mark.integration

LAGS = {0: 2**62, 1: 2**62 + 1, 2: 100, 3: 100}


def huge_group(group: str, t0: int) -> list[dict]:
    """C0 holds two partitions whose lags sum past 2^63-1; the offsets stay inside the contract."""
    members = [ev.member_entry("C0", ["t0"], [("t0", 0), ("t0", 1)]),
               ev.member_entry("C1", ["t0"], [("t0", 2), ("t0", 3)])]
    out = [ev.members_event(t0, group, 1, "range", members)]
    for i in range(5):
        out += [ev.lag_event(t0 + i * 10_000, group, "t0", p, 1000 * i, 1000 * i + lag)
                for p, lag in LAGS.items()]
    return out


@pytest.fixture(scope="module")
def contract_run(spark, cfg):
    jc = job_config(cfg, "ct" + uuid.uuid4().hex[:6])
    now = int(time.time() * 1000)
    query.ensure_topics(jc)
    records = contract.generate(seed=3, n=300, ts=now - 60_000)
    sent = judge.send(jc, records, huge_group("huge", now - 100_000))
    batches = query.run(spark, jc, available_now=True)  # raised before the fix: the query stopped
    rejected = rows(spark, jc, REJECTED)
    verdict = judge.verdict(sent, [((r["source_topic"], r["source_partition"],
                                        r["source_offset"]), r["reason"])
                                      for r in rejected])
    return verdict, rows(spark, jc, RECOMMENDATIONS), batches


def test_the_huge_groups_recommendation_has_exact_figures(contract_run):
    _, recs, _ = contract_run
    [rec] = [r for r in recs if r["group"] == "huge"]
    assert rec["before_max_lag"] == RECORDS_CAP  # 2^63 + 1 saturated
    loads = [sum(LAGS[p["partition"]] for p in m["partitions"]) for m in rec["assignment"]]
    assert rec["after_max_lag"] == min(max(loads), RECORDS_CAP) \
        and isinstance(rec["after_max_lag"], int)
    feed = json.loads(json.dumps(rec.asDict(), default=str))
    assert feed["before_max_lag"] == RECORDS_CAP


def test_every_drawn_record_is_valid_or_rejected_with_a_reason(contract_run):
    verdict, recs, batches = contract_run
    assert batches and verdict.sent == 300
    assert verdict.ok, (verdict.wrong_reason[:3], verdict.unexpected)
    assert 0 < verdict.accepted < verdict.sent and sum(verdict.rejected_by_reason.values()) > 0
    assert judge.figure_problems(r.asDict() for r in recs) == []

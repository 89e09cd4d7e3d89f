"""The closed loop on the shared 3-broker cluster: workload -> collector -> streaming job -> trigger
feed -> RecommendationAssignor -> the group rebalances onto the recommendation.

Two groups run the same workload side by side (same topic shape, rates, racks): one on plain Kafka
``range``, one on RecommendationAssignor (which starts on ``range`` too, its fallback). The second
must end up on the recommended assignment with its max consumer lag below what ``range`` reaches.
Then, with the collector stopped (so no newer recommendation can arrive), a partition is added and a
member leaves: the recommendation no longer fits, is not applied, and the fallback is used and
logged.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from streaming.apply.feed import RecommendationFeed
from streaming.dev.demo.loop import CollectorThread, GroupOptions, GroupRun, loop_config, stop_query
from streaming.dev.demo.monitor import GroupMonitor, final_max_lag
from streaming.job import query as job_query
from streaming.kafka_clients import factories as kafka_clients

pytestmark = pytest.mark.integration

LAG_WINDOW_S = 6.0
"""the lag compared is the mean of the max consumer lag over the samples of the last few seconds"""


def wait_until(f: Callable[[], Any], timeout_s: float, every_s: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = f()
        if value:
            return value
        time.sleep(every_s)
    return None


def test_group_applies_recommendation_and_lag_falls_below_range(cfg, spark, tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="streaming.apply")
    tag = uuid.uuid4().hex[:6]
    # a long cooldown: exactly one lag-skew recommendation per group in this test
    # Overload that holds on a busy 2-core machine: range's first consumer gets ~2/3 of 300
    # records/s (Zipf) against 120/s of capacity, while a lag-aware split needs at most ~100/s per
    # consumer. The skew floor fits a 12-partition group (the production default of 1,000 records
    # is for real groups), as in the demo.
    lcfg = loop_config(cfg, str(tmp_path / "tables"), str(tmp_path / "checkpoints"), cooldown_s=600,
                       trigger_interval="2 seconds", min_total_lag=300)
    baseline = GroupOptions(group=f"loop-range-{tag}", topic=f"loop-range-{tag}", apply=False,
                            consume_rate=120.0)
    looped = dataclasses.replace(baseline, group=f"loop-app-{tag}", topic=f"loop-app-{tag}",
                                 apply=True, min_rejoin_interval_s=3)

    feed = RecommendationFeed(lcfg.kafka).start()
    recs: list[dict] = []
    feed.add_listener(lambda r: recs.append(r) if r["group"] == looped.group else None)
    query, printer = None, None
    runs: list[GroupRun] = []
    collector = None
    try:
        query, printer = job_query.start(spark, lcfg, checkpoint=lcfg.checkpoint_path("loop"))
        assert feed.wait_ready(30)
        range_run = GroupRun(lcfg, baseline)
        loop_run = GroupRun(lcfg, looped, feed)
        runs += [range_run, loop_run]
        range_run.start()
        loop_run.start()
        assert range_run.wait_assigned(120) and loop_run.wait_assigned(120)
        # no recommendation yet: the group starts on Kafka's range, exactly as the baseline does
        assert loop_run.decisions and loop_run.decisions[-1].assignor == "range"
        assert not loop_run.decisions[-1].applied

        t0 = time.monotonic()
        mon_range, mon_loop = GroupMonitor(baseline.group, t0), GroupMonitor(looped.group, t0)
        collector = CollectorThread(lcfg, [mon_range, mon_loop], interval_s=2.0).start()

        # 1. a lag-skew recommendation lands and the group applies it (a member that briefly drops
        #    out under load gives a membership_change recommendation first, also applied: right, but
        #    not what is tested here)
        def lag_skew_applied() -> Any:
            skewed = {r["version"] for r in list(recs) if "lag_skew" in r["triggers"]}
            return next((d for d in loop_run.decisions if d.applied and d.version in skewed), None)

        applied = wait_until(lag_skew_applied, 210)
        assert applied is not None, \
            f"no lag-skew recommendation applied; recommendations seen: {recs}"
        t_applied = time.monotonic() - t0
        rec = next(r for r in recs if r["version"] == applied.version)
        wanted = {e["client_id"]: {(t, p) for t, p in e["partitions"]} for e in rec["assignment"]}
        assert wait_until(lambda: loop_run.assignment() == wanted, 30), \
            f"group assignment {loop_run.assignment()} is not the recommended {wanted}"
        peak_before = max(s.max_lag for s in mon_loop.samples if s.t <= t_applied)

        # 2. after it, the max consumer lag falls below what the same workload reaches under range
        end = max(t_applied + 45.0, 90.0)
        time.sleep(max(0.0, end - (time.monotonic() - t0)))
        range_lag = final_max_lag(mon_range.samples, LAG_WINDOW_S)
        loop_lag = final_max_lag(mon_loop.samples, LAG_WINDOW_S)
        # Only the comparison with range, run side by side, is asserted: the peak before the switch
        # depends on how early the recommendation lands (one landed at a low lag and the rejoin
        # alone went past it, 861 vs 725), so it is printed, not asserted.
        peak_after = max(s.max_lag for s in mon_loop.samples if s.t >= t_applied)
        print(f"recommendation v{applied.version} applied at {t_applied:.0f}s; max consumer lag at "
              f"{end:.0f}s: range {range_lag:,.0f}, recommendations {loop_lag:,.0f} "
              f"(peak before {peak_before:,}, after {peak_after:,})")
        assert loop_run.assignment() == wanted  # nothing else rebalanced the group meanwhile
        assert loop_lag < range_lag / 2, (loop_lag, range_lag)

        # no newer recommendation from here on: what follows must be the fallback
        collector.stop()
        collector = None
        latest = feed.latest(looped.group)["version"]

        # 3. a partition added: the recommendation does not cover it -> fallback, logged
        admin = kafka_clients.admin(lcfg)
        try:
            admin.create_partitions({looped.topic: looped.partitions + 2})
        finally:
            admin.close()
        n_before = len(loop_run.decisions)
        added = wait_until(lambda: next((d for d in loop_run.decisions[n_before:] if not d.applied),
                                        None), 60)
        assert added is not None, "the leader did not rebalance after partitions were added"
        assert added.assignor == "range" and added.considered == latest
        assert "2 current partition(s) not in the recommendation" in added.reason
        assert wait_until(lambda: set().union(*loop_run.assignment().values()) ==
                          {(looped.topic, p) for p in range(looped.partitions + 2)}, 30)
        assert any(r.levelno == logging.WARNING and "not in the recommendation" in r.getMessage()
                   and "range fallback" in r.getMessage() for r in caplog.records)

        # 4. a member gone: the recommendation names it -> fallback, logged
        gone = loop_run.workload.stop_consumer()
        n_before = len(loop_run.decisions)
        # under load another member can miss a rebalance too; wait for the decision that names the
        # one stopped
        named = f"{gone} is no longer in the group"
        left = wait_until(lambda: next((d for d in loop_run.decisions[n_before:]
                                        if not d.applied and named in d.reason), None), 90)
        assert left is not None, "the leader did not fall back after a member left"
        assert wait_until(lambda: len(loop_run.assignment()) == 2
                          and set().union(*loop_run.assignment().values())
                          == {(looped.topic, p) for p in range(looped.partitions + 2)}, 30)
        assert any(r.levelno == logging.WARNING
                   and f"{gone} is no longer in the group" in r.getMessage()
                   for r in caplog.records)
        assert all(not d.applied for d in loop_run.decisions[n_before:])
    finally:
        # every step runs even if one fails, the query first: a query left running would go on
        # printing progress lines into later tests of this process
        with contextlib.ExitStack() as cleanup:
            cleanup.callback(feed.stop)
            for run in runs:
                cleanup.callback(run.stop)
            if collector is not None:
                cleanup.callback(collector.stop)
            if query is not None:
                cleanup.callback(spark.streams.removeListener, printer)
                cleanup.callback(stop_query, query)
    assert feed.failure is None

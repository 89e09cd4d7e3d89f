"""The collector's window of polls: live lag seconds, time to catch up and stuck partitions, by the job's
rules, through CollectorExport as the collector calls it after each poll."""

from __future__ import annotations

import math
from types import SimpleNamespace

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from assignors.model import Member
from streaming import config
from streaming.collector.observed import ObservedMember
from streaming.collector.poll import ClusterSnapshot, GroupInfo
from streaming.exporter import CollectorExport, view
from streaming.lag.window import Windows

STEP = 10_000


def _snap(i: int, committed: dict, end: dict, groups=("g",)) -> ClusterSnapshot:
    """Poll ``i`` (10 s apart): m-a owns t-0 and t-1, m-b owns t-2."""
    a = ObservedMember(Member("m-a", ("t",), None, "a", (("t", 0), ("t", 1)), client_id="c-a"), "h")
    b = ObservedMember(Member("m-b", ("t",), None, "b", (("t", 2),), client_id="c-b"), "h")
    parts = [{"partition_index": p, "leader_id": 1, "replica_nodes": [1]} for p in range(3)]
    return ClusterSnapshot(ts=1_700_000_000_000 + i * STEP, groups={g: GroupInfo(g, "Stable", "range", [a, b])
                                                                    for g in groups},
                           committed={g: dict(committed) for g in groups}, topics={"t": parts},
                           broker_racks={1: "a"}, end=dict(end))


def _poll(i: int):
    """t-0: end +1000 per poll, committed +500 (behind); t-1: stuck at 0 with lag 10; t-2: caught up."""
    committed = {("t", 0): 500 * i, ("t", 1): 0, ("t", 2): 300 * i}
    end = {("t", 0): 4000 + 1000 * i, ("t", 1): 10, ("t", 2): 300 * i}
    return _snap(i, committed, end)


def _figures(windows: Windows, snap: ClusterSnapshot):
    live = windows.observe(snap.ts, "g", ((tp, c, snap.end[tp]) for tp, c in snap.committed["g"].items()))
    rows = view.partition_rows(snap, "g", lag_seconds=live.age)
    return rows, view.member_rows(snap, "g", rows), view.figures(snap, "g", rows, live.rate, live.stuck)


def test_first_poll_knows_no_seconds_then_the_window_does():
    w = Windows(depth=8, stuck_after=3)
    rows, members, f = _figures(w, _poll(0))
    assert [r.lag_seconds for r in rows] == [None, None, 0.0]
    assert f.max_member_lag_seconds is None and f.max_member_catch_up_seconds is None and f.stuck_partitions == 0
    for i in (1, 2):
        rows, members, f = _figures(w, _poll(i))
    # t-0 at poll 2: end 6000, committed 1000; the end offset was 1000 before the window (4000 at 0 s, 100/s):
    # 30 s before the first poll, 50 s before the last
    assert rows[0].lag_seconds == 50.0
    # t-1: its end offset never moved: the window (20 s) as a lower bound; stuck after 3 polls
    assert rows[1].lag_seconds == 20.0 and f.stuck_partitions == 1
    assert [(m.client_id, m.lag_seconds) for m in members] == [("c-a", 50.0), ("c-b", 0.0)]
    assert f.max_member_lag_seconds == 50.0
    # m-a: 5,000 records at 50/s, the stuck partition left out
    assert f.max_member_catch_up_seconds == 100.0


def test_not_stuck_yet_its_lag_counts_and_a_member_that_consumed_nothing_is_unbounded():
    w = Windows(depth=8, stuck_after=5)
    for i in (0, 1):
        _, _, f = _figures(w, _poll(i))
    # m-a: 4,500 + the 10 of t-1 at 50/s
    assert f.stuck_partitions == 0 and f.max_member_catch_up_seconds == 4510 / 50
    w = Windows(depth=8, stuck_after=5)
    for i in (0, 1):
        snap = _snap(i, {("t", 0): 0, ("t", 1): 0, ("t", 2): 0}, {("t", 0): 5, ("t", 1): 0, ("t", 2): 0})
        _, _, f = _figures(w, snap)
    assert f.max_member_catch_up_seconds == math.inf


def test_depth_bounds_the_window_and_vanished_groups_are_forgotten():
    w = Windows(depth=3, stuck_after=3)
    for i in range(6):
        _figures(w, _poll(i))
    g = w._groups["g"]["t"]
    assert g.n.tolist() == [3, 3, 3] and g.ts[0].tolist() == [1_700_000_000_000 + i * STEP for i in (3, 4, 5)]
    w.retain([])
    assert not w._groups


def _samples(registry):
    text = generate_latest(registry).decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}


def test_collector_export_serves_the_live_figures():
    cfg = config.Config().with_overrides({"metrics.enabled": "true", "metrics.collector_port": "0",
                                          "policy.stuck_observations": "3"})
    export = CollectorExport(cfg)
    try:
        stats = SimpleNamespace(seconds=0.1, lag_events=3, metadata_events=0, warnings=0)
        export(_poll(0), stats)
        s = _samples(export.metrics.registry)
        assert math.isnan(s[("kafka_rebalancer_group_max_member_lag_seconds", (("group", "g"),))])
        for i in (1, 2):
            export(_poll(i), stats)
        s = _samples(export.metrics.registry)
        assert s[("kafka_rebalancer_group_max_member_lag_seconds", (("group", "g"),))] == 50.0
        assert s[("kafka_rebalancer_group_max_member_catch_up_seconds", (("group", "g"),))] == 100.0
        assert s[("kafka_rebalancer_group_stuck_partitions", (("group", "g"),))] == 1
        export(_snap(3, {}, {}, groups=()), stats)  # the group went away: its series and its window too
        s = _samples(export.metrics.registry)
        assert not any(("group", "g") in k[1] for k in s) and not export.windows._groups
    finally:
        export.close()

"""The collector's window of polls: live lag seconds, time to catch up, stuck partitions, seconds
until records are lost to retention and hot partitions, by the job's rules, through CollectorExport
as the collector calls it after each poll."""

from __future__ import annotations

import math
from types import SimpleNamespace

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from assignors.model import Member
from streaming import config
from streaming.collector.cluster_snapshot import ClusterSnapshot, GroupInfo
from streaming.collector.observed import ObservedMember
from streaming.exporter import CollectorExport, observe
from streaming.lag.window import Windows
from streaming.operator_view import groups as view
from streaming.operator_view import sentences

STEP = 10_000


def _snap(i: int, committed: dict, end: dict, groups=("g",)) -> ClusterSnapshot:
    """Poll ``i`` (10 s apart): m-a owns t-0 and t-1, m-b owns t-2."""
    a = ObservedMember(Member("m-a", ("t",), None, "a", (("t", 0), ("t", 1)), client_id="c-a"), "h")
    b = ObservedMember(Member("m-b", ("t",), None, "b", (("t", 2),), client_id="c-b"), "h")
    parts = [{"partition_index": p, "leader_id": 1, "replica_nodes": [1]} for p in range(3)]
    return ClusterSnapshot(ts=1_700_000_000_000 + i * STEP,
                           groups={g: GroupInfo(g, "Stable", "range", [a, b]) for g in groups},
                           committed={g: dict(committed) for g in groups}, topics={"t": parts},
                           broker_racks={1: "a"}, end=dict(end))


def _poll(i: int):
    """t-0: end +1000 per poll, committed +500 (behind); t-1: stuck at 0 with lag 10; t-2: caught
    up."""
    committed = {("t", 0): 500 * i, ("t", 1): 0, ("t", 2): 300 * i}
    end = {("t", 0): 4000 + 1000 * i, ("t", 1): 10, ("t", 2): 300 * i}
    return _snap(i, committed, end)


def _figures(windows: Windows, snap: ClusterSnapshot):
    live = observe(windows, snap, "g")
    rows = view.partition_rows(snap, "g", lag_seconds=live.age, loss_seconds=live.loss_s)
    return (rows, view.member_rows(snap, "g", rows),
            view.figures(snap, "g", rows, live.rate, live.stuck))


def test_first_poll_knows_no_seconds_then_the_window_does():
    w = Windows(depth=8, stuck_after=3)
    rows, members, f = _figures(w, _poll(0))
    assert [r.lag_seconds for r in rows] == [None, None, 0.0]
    assert (f.max_member_lag_seconds is None and f.max_member_catch_up_seconds is None
            and f.stuck_partitions == 0)
    for i in (1, 2):
        rows, members, f = _figures(w, _poll(i))
    # t-0 at poll 2: end 6000, committed 1000; the end offset was 1000 before the window (4000 at 0
    # s, 100/s): 30 s before the first poll, 50 s before the last
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
        snap = _snap(i, {("t", 0): 0, ("t", 1): 0, ("t", 2): 0},
                     {("t", 0): 5, ("t", 1): 0, ("t", 2): 0})
        _, _, f = _figures(w, snap)
    assert f.max_member_catch_up_seconds == math.inf


def test_depth_bounds_the_window_and_vanished_groups_are_forgotten():
    w = Windows(depth=3, stuck_after=3)
    for i in range(6):
        _figures(w, _poll(i))
    g = w._groups["g"]["t"]
    assert (g.n.tolist() == [3, 3, 3]
            and g.ts[0].tolist() == [1_700_000_000_000 + i * STEP for i in (3, 4, 5)])
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
        # the group went away: its series and its window too
        export(_snap(3, {}, {}, groups=()), stats)
        s = _samples(export.metrics.registry)
        assert not any(("group", "g") in k[1] for k in s) and not export.windows._groups
    finally:
        export.close()


def _retention_poll(i: int) -> ClusterSnapshot:
    """t-0's log start rises 50/s from 1,000, its committed offset 10/s from 3,000 (end 100/s):
    2,000 records of headroom closing at 40/s, none left at poll 5, 400 records lost at poll 6; t-1
    and t-2 keep their log start at 0 and produce 0/s and 30/s, so t-0 (100/s) is hot."""
    snap = _snap(i, {("t", 0): 3000 + 100 * i, ("t", 1): 0, ("t", 2): 300 * i},
                 {("t", 0): 9000 + 1000 * i, ("t", 1): 10, ("t", 2): 300 * i})
    snap.begin = {("t", 0): 1000 + 500 * i, ("t", 1): 0, ("t", 2): 0}
    return snap


def test_collector_export_serves_the_data_loss_risk_then_the_records_lost_and_the_hot_partition():
    cfg = config.Config().with_overrides({"metrics.enabled": "true", "metrics.collector_port": "0"})
    export = CollectorExport(cfg)
    group = (("group", "g"),)
    try:
        stats = SimpleNamespace(seconds=0.1, lag_events=3, metadata_events=0, warnings=0)
        export(_retention_poll(0), stats)
        s = _samples(export.metrics.registry)
        # no rate yet
        assert math.isnan(s[("kafka_rebalancer_group_retention_loss_seconds", group)])
        # t-1 lags 10 records from its log start: retention may delete none of them before it reads
        # them
        assert s[("kafka_rebalancer_group_retention_headroom_records", group)] == 0
        export(_retention_poll(1), stats)
        s = _samples(export.metrics.registry)
        assert s[("kafka_rebalancer_group_retention_loss_seconds", group)] == 1600 / 40
        assert s[("kafka_rebalancer_group_lost_records", group)] == 0
        assert s[("kafka_rebalancer_group_hot_partitions", group)] == 1
        assert s[("kafka_rebalancer_hot_partition_records_per_second",
                  (("group", "g"), ("partition", "0"), ("topic", "t")))] == 100.0
        for i in range(2, 7):
            export(_retention_poll(i), stats)
        s = _samples(export.metrics.registry)
        assert s[("kafka_rebalancer_group_retention_loss_seconds", group)] == 0
        # log start 4,000, committed 3,600
        assert s[("kafka_rebalancer_group_lost_records", group)] == 400
    finally:
        export.close()


def test_the_rows_say_headroom_then_already_lost():
    w = Windows(depth=8, stuck_after=3)
    rows, members, _ = _figures(w, _retention_poll(0))
    assert [(r.log_start_offset, r.retention_headroom, r.lost_records, r.loss_seconds)
            for r in rows] == [
        (1000, 2000, 0, None), (0, 0, 0, None), (0, 0, 0, None)]
    rows, members, _ = _figures(w, _retention_poll(1))
    assert rows[0].loss_seconds == 40.0 and [m.loss_seconds for m in members] == [40.0, None]
    assert any("loses records in 40 s" in line for line in sentences.retention_says(rows))
    for i in range(2, 7):
        rows, members, _ = _figures(w, _retention_poll(i))
    assert (rows[0].lost_records, rows[0].loss_seconds, members[0].lost_records) == (400, 0.0, 400)
    assert sentences.retention_says(rows)[0].startswith("t-0: already lost: 400 records")


def test_capacities_by_the_jobs_rule_and_the_consumers_needed_over_http():
    """m-a consumes t-0 at 50/s behind a backlog (t-1 stuck): its capacity, measured; m-b keeps up
    at 30/s and takes the median. t-0 produces 100/s, more than a consumer of 50/s may take with 20%
    headroom: no count keeps up, so all three partitions get a consumer."""
    import json
    import urllib.error
    import urllib.request

    cfg = config.Config().with_overrides({"metrics.enabled": "true", "metrics.collector_port": "0",
                                          "policy.stuck_observations": "3"})
    export = CollectorExport(cfg)
    url = f"http://127.0.0.1:{export.server.port}/consumers"
    try:
        stats = SimpleNamespace(seconds=0.1, lag_events=3, metadata_events=0, warnings=0)
        export(_poll(0), stats)
        first = json.loads(urllib.request.urlopen(url + "?group=g", timeout=5).read())
        assert first == {"group": "g", "consumers": 2, "fewest": None, "most": 3, "members": 2,
                         # holds: not known yet
                         "capacity_records_per_s": None, "headroom": 0.2, "known": False}
        for i in (1, 2):
            export(_poll(i), stats)
        body = json.loads(urllib.request.urlopen(url + "?group=g", timeout=5).read())
        assert body | {"capacity_records_per_s": None} == {
            "group": "g", "consumers": 3, "fewest": None, "most": 3, "members": 2,
            "capacity_records_per_s": None,
            "headroom": 0.2, "known": True} and body["capacity_records_per_s"] == 50.0
        assert (json.loads(urllib.request.urlopen(url, timeout=5).read())
                ["groups"]["g"]["consumers"] == 3)
        s = _samples(export.metrics.registry)
        assert s[("kafka_rebalancer_group_consumers_needed", (("group", "g"),))] == 3
        assert s[("kafka_rebalancer_group_consumer_capacity_records_per_second",
                  (("group", "g"),))] == 50.0
        try:
            urllib.request.urlopen(url + "?group=nope", timeout=5)
            raise AssertionError("an unknown group must be a 404")
        except urllib.error.HTTPError as e:
            assert e.code == 404
        assert b"kafka_rebalancer_group_consumers_max" in urllib.request.urlopen(
            f"http://127.0.0.1:{export.server.port}/metrics", timeout=5).read()
    finally:
        export.close()

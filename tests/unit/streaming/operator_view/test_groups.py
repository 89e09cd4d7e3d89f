"""Rows and per-group figures from a hand-made ClusterSnapshot: the kafka-consumer-groups rules (a
partition shows when owned or committed; no commit, no lag), cross-rack, members and the recommended
owner."""

from __future__ import annotations

from assignors.model import Member
from streaming.collector.cluster_snapshot import ClusterSnapshot, GroupInfo
from streaming.collector.observed import ObservedMember
from streaming.operator_view import groups as view


def _snapshot() -> ClusterSnapshot:
    a = ObservedMember(Member("m-a", ("t",), None, "a", (("t", 0), ("t", 1)), client_id="c-a"),
                       "10.0.0.1")
    b = ObservedMember(Member("m-b", ("t",), "static-b", "b", (("t", 2),), client_id="c-b"),
                       "10.0.0.2")
    parts = [{"partition_index": p, "leader_id": 1, "replica_nodes": reps}
             for p, reps in enumerate([[1, 2], [2, 3], [3, 1], [1, 2]])]
    return ClusterSnapshot(
        ts=0, groups={"g": GroupInfo("g", "Stable", "range", [a, b])},
        committed={"g": {("t", 0): 10, ("t", 2): 5, ("t", 3): 7}},
        topics={"t": parts}, broker_racks={1: "a", 2: "b", 3: "c"},
        end={("t", 0): 110, ("t", 1): 50, ("t", 2): 45, ("t", 3): 7})


def test_partition_rows_follow_kafka_consumer_groups():
    rows = view.partition_rows(_snapshot(), "g", {("t", 0): "m-b"})
    got = [(r.partition, r.current_offset, r.log_end_offset, r.lag, r.consumer_id, r.cross_rack,
            r.recommended_owner) for r in rows]
    assert got == [
        (0, 10, 110, 100, "m-a", False, "m-b"),    # replicas on a, b; owner on a
        (1, None, 50, None, "m-a", True, None),    # owned, never committed: no lag; replicas b, c
        (2, 5, 45, 40, "m-b", True, None),         # replicas c, a; owner on b
        (3, 7, 7, 0, None, None, None),            # committed, nobody owns it
    ]
    assert rows[1].replica_racks == ("b", "c")


def test_members_and_figures():
    snap = _snapshot()
    rows = view.partition_rows(snap, "g")
    members = view.member_rows(snap, "g", rows)
    assert [(m.client_id, m.partitions, m.lag, m.cross_rack, m.instance_id) for m in members] == [
        ("c-a", 2, 100, 1, None), ("c-b", 1, 40, 1, "static-b")]
    f = view.figures(snap, "g", rows)
    assert (f.members, f.partitions, f.max_member_lag, f.cross_rack) == (2, 4, 100, 2)
    assert f.imbalance == 100 / 70
    assert f.lag_by_topic == {"t": 140}


def test_recommended_owners_from_delta_rows_and_feed_messages():
    delta = {"assignment": [{"member_id": "m1", "partitions": [{"topic": "t", "partition": 3}]}]}
    feed = {"assignment": [{"member_id": "m1", "partitions": [["t", 3]]}]}
    assert view.recommended_owners(delta) == view.recommended_owners(feed) == {("t", 3): "m1"}
    assert view.recommended_owners(None) == {}


def test_member_lag_seconds_is_unknown_while_a_partition_is_and_0_only_when_all_lags_are_0():
    snap = _snapshot()
    # m-a: p0 lags 100 (age read 4.5 s) and p1 never committed; m-b: p2 lags 40, its age not read
    rows = view.partition_rows(snap, "g", None, {("t", 0): 4.5})
    assert [m.lag_seconds for m in view.member_rows(snap, "g", rows)] == [4.5, None]
    # m-a has committed nothing yet (as a member that just joined): its lag is unknown, so are its
    # seconds (not 0, which its lag's sum over known partitions would suggest)
    fresh = ClusterSnapshot(ts=0, groups=snap.groups, committed={"g": {("t", 2): 45, ("t", 3): 7}},
                            topics=snap.topics, broker_racks=snap.broker_racks, end=snap.end)
    rows = view.partition_rows(fresh, "g", None, {})
    assert ([(m.lag, m.lag_seconds) for m in view.member_rows(fresh, "g", rows)]
            == [(0, None), (0, 0.0)])
    # every partition committed and caught up: 0 s
    caught_up = ClusterSnapshot(ts=0, groups=snap.groups,
                                committed={"g": {("t", p): 7 for p in range(3)}},
                                topics=snap.topics, broker_racks=snap.broker_racks,
                                end={("t", p): 7 for p in range(3)})
    rows = view.partition_rows(caught_up, "g", None, {})
    assert [m.lag_seconds for m in view.member_rows(caught_up, "g", rows)] == [0.0, 0.0]

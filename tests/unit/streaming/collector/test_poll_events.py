"""Which events the collector emits: lag per partition, members and partitions on change and
refresh."""

from __future__ import annotations

import pytest

from streaming.collector.poll_events import (
    MetadataTracker,
    is_full_refresh,
    lag_events,
    partition_entries,
)
from streaming.contracts import events

TS = 1_700_000_000_000


def _member(mid: str, assigned=(("t", 0),), rack="a") -> dict:
    return events.member_entry(mid, ["t"], assigned, client_id=f"c-{mid}", host="h", rack=rack)


def test_lag_uses_committed_and_end_and_encodes_no_commit_by_policy():
    tps = [("t", 0), ("t", 1), ("t", 2)]
    committed = {("t", 0): 10}
    end = {("t", 0): 15, ("t", 1): 40, ("t", 2): 7}
    begin = {("t", 1): 5, ("t", 2): 7}
    latest = lag_events(TS, "g", tps, committed, end, begin, "latest")
    assert [(e["partition"], e["committed_offset"], e["end_offset"], e.get("no_commit", False))
            for e in latest.events] == [(0, 10, 15, False), (1, 40, 40, True), (2, 7, 7, True)]
    earliest = lag_events(TS, "g", tps, committed, end, begin, "earliest")
    assert ([(e["committed_offset"], e["end_offset"]) for e in earliest.events]
            == [(10, 15), (5, 40), (7, 7)])
    assert earliest.missing == []
    # the begin offset read is the event's log start offset (the committed partition's too, when
    # read)
    assert (earliest.events[1]
            == events.lag_event(TS, "g", "t", 1, 5, 40, no_commit=True, log_start_offset=5))
    assert [e.get(events.LOG_START) for e in earliest.events] == [None, 5, 7]


def test_a_failed_offset_lookup_leaves_the_partition_out_never_a_zero_lag():
    tps = [("t", 0), ("t", 1), ("t", 2)]
    r = lag_events(TS, "g", tps, {("t", 0): 3, ("t", 1): 4}, {("t", 0): 9}, {}, "earliest")
    assert [e["partition"] for e in r.events] == [0]
    # end unknown; begin unknown for a no-commit earliest partition
    assert r.missing == [("t", 1), ("t", 2)]


def test_committed_past_end_is_left_out_as_inconsistent():
    r = lag_events(TS, "g", [("t", 0)], {("t", 0): 12}, {("t", 0): 10}, {}, "latest")
    assert r.events == [] and r.inconsistent == [("t", 0)]


def test_bad_policy_is_refused():
    with pytest.raises(ValueError):
        lag_events(TS, "g", [], {}, {}, {}, "none")


def test_members_event_on_first_sight_on_change_and_on_refresh_only():
    tr = MetadataTracker()
    first = tr.members_event(TS, "g", "Stable", "range", [_member("m1")])
    assert first["generation"] == 1 and [m["member_id"] for m in first["members"]] == ["m1"]
    assert tr.members_event(TS, "g", "Stable", "range", [_member("m1")]) is None
    joined = tr.members_event(TS, "g", "Stable", "range",
                              [_member("m1"), _member("m2", (("t", 1),))])
    assert joined["generation"] == 2 and len(joined["members"]) == 2
    refresh = tr.members_event(TS, "g", "Stable", "range",
                               [_member("m1"), _member("m2", (("t", 1),))], full_refresh=True)
    assert refresh["generation"] == 2  # a refresh repeats, it does not bump
    moved = tr.members_event(TS, "g", "Stable", "range",
                             [_member("m1", (("t", 1),)), _member("m2")])
    assert moved["generation"] == 3  # an assignment change is a new generation too


def test_no_members_event_while_rebalancing():
    tr = MetadataTracker()
    assert tr.members_event(TS, "g", "PreparingRebalance", "range", [_member("m1")]) is None
    assert tr.members_event(TS, "g", "CompletingRebalance", "range", [_member("m1")]) is None
    assert tr.members_event(TS, "g", "Stable", "range", [_member("m1")])["generation"] == 1
    empty = tr.members_event(TS, "g", "Empty", None, [])
    assert empty["members"] == [] and empty["generation"] == 2


def test_generation_follows_hints_and_stays_monotonic_across_a_vanished_group():
    tr = MetadataTracker()
    assert (tr.members_event(TS, "g", "Stable", "sticky", [_member("m1")], hint=12)["generation"]
            == 12)
    assert (tr.members_event(TS, "g", "Stable", "sticky", [_member("m2")], hint=5)["generation"]
            == 13)
    tr.forget_group("g")
    again = tr.members_event(TS, "g", "Stable", "sticky", [_member("m2")])
    assert again is not None and again["generation"] == 14  # re-announced as a change, never lower
    assert tr.members_event(TS, "g", "Stable", "sticky", [_member("m3")])["generation"] == 15


def test_rack_change_of_a_member_is_a_membership_change():
    tr = MetadataTracker()
    tr.members_event(TS, "g", "Stable", "range", [_member("m1", rack="a")])
    assert tr.members_event(TS, "g", "Stable", "range", [_member("m1", rack="b")]) is not None


def _parts(racks_by_partition):
    return [events.partition_entry(p, reps[0], reps, [f"r{b}" for b in reps])
            for p, reps in racks_by_partition]


def test_partitions_events_per_group_and_topic_on_change_refresh_and_resubscription():
    tr = MetadataTracker()
    t = {"t": _parts([(0, [1, 2]), (1, [2, 3])]), "u": _parts([(0, [3])])}
    out = tr.partitions_events(TS, "g", t)
    assert [(e["group"], e["topic"]) for e in out] == [("g", "t"), ("g", "u")]
    assert tr.partitions_events(TS, "g", t) == []
    # fanned out per group
    assert [e["group"] for e in tr.partitions_events(TS, "h", {"t": t["t"]})] == ["h"]
    moved = {"t": _parts([(0, [1, 2]), (1, [3, 1])]), "u": t["u"]}
    out = tr.partitions_events(TS, "g", moved)
    assert ([e["topic"] for e in out] == ["t"]
            and out[0]["partitions"][1]["replica_racks"] == ["r3", "r1"])
    assert len(tr.partitions_events(TS, "g", moved, full_refresh=True)) == 2
    tr.partitions_events(TS, "g", {"t": moved["t"]})  # unsubscribed from u
    assert [e["topic"] for e in tr.partitions_events(TS, "g", moved)] == ["u"]


def test_deleted_topic_and_vanished_group_are_forgotten():
    tr = MetadataTracker()
    t = {"t": _parts([(0, [1])])}
    tr.partitions_events(TS, "g", t)
    tr.forget_topic("t")
    assert len(tr.partitions_events(TS, "g", t)) == 1
    tr.members_event(TS, "g", "Stable", "range", [_member("m1")])
    assert tr.groups() == {"g"}
    tr.forget_group("g")
    assert tr.groups() == set()


def test_partition_entries_from_describe_topics():
    described = [{"partition_index": 1, "leader_id": 3, "replica_nodes": [3, 1]},
                 {"partition_index": 0, "leader_id": -1, "replica_nodes": [2]}]
    racks = {1: "a", 3: "c"}
    assert partition_entries(described, racks) == [
        {"partition": 0, "leader": None, "replicas": [2], "replica_racks": [None]},
        {"partition": 1, "leader": 3, "replicas": [3, 1], "replica_racks": ["c", "a"]},
    ]


def test_full_refresh_schedule():
    assert [n for n in range(1, 12) if is_full_refresh(n, 5)] == [6, 11]
    assert not any(is_full_refresh(n, 0) for n in range(1, 20))

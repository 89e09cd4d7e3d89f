"""Metrics: loads, imbalance, the lower bound (checked against brute force), racks, movement,
validity."""

from __future__ import annotations

import itertools
import json
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assignors.metrics import (
    InvalidAssignment,
    compute_metrics,
    cross_rack_partitions,
    held_stuck,
    imbalance,
    lower_bound,
    member_loads,
    movement,
    partition_loads,
)
from assignors.model import GroupSnapshot, Member
from assignors.validity import validate_assignment


def test_partition_loads_lag_and_rate_horizon():
    s = GroupSnapshot(topics={"t": 2, "u": 1}, members=(Member("a", ("t", "u")),),
                      lag={"t": [5, 7]}, produce_rate={"t": [1.5, 0.0]})
    assert partition_loads(s) == {"t": [5, 7], "u": [0]}
    assert partition_loads(s, horizon_s=10) == {"t": [20.0, 7.0], "u": [0]}


def test_a_stuck_partition_its_owner_holds_weighs_nothing():
    # t-0: stuck at a subscriber; t-1: stuck, owner gone; t-2: owned by a member not subscribed to t
    members = (Member("a", ("t",), owned=(("t", 0),)), Member("b", ("u",), owned=(("t", 2),)))
    s = GroupSnapshot(topics={"t": 3, "u": 1}, members=members,
                      lag={"t": [500, 400, 300], "u": [1]}, produce_rate={"t": [9.0, 1.0, 1.0]},
                      stuck=frozenset({("t", 0), ("t", 1), ("t", 2), ("t", 7)}))
    assert held_stuck(s) == {("t", 0)}
    assert partition_loads(s, horizon_s=10) == {"t": [0, 410.0, 310.0], "u": [1]}
    assert (compute_metrics(s, {"a": [("t", 0), ("t", 1), ("t", 2)], "b": [("u", 0)]}).max_load
            == 700)


def test_member_loads_and_imbalance():
    s = GroupSnapshot(topics={"t": 3}, members=(Member("a", ("t",)), Member("b", ("t",))),
                      lag={"t": [1, 2, 3]})
    loads = member_loads(s, {"a": [("t", 0), ("t", 1)], "b": [("t", 2)]})
    assert loads == {"a": 3, "b": 3}
    assert imbalance([3, 3]) == 1.0
    assert imbalance([0, 0]) == 1.0
    assert imbalance([6, 0]) == 2.0


def test_lower_bound_equal_subscriptions_is_mean_or_heaviest():
    members = (Member("a", ("t",)), Member("b", ("t",)))
    assert (lower_bound(GroupSnapshot(topics={"t": 4}, members=members, lag={"t": [1, 1, 1, 1]}))
            == 2)
    assert lower_bound(GroupSnapshot(topics={"t": 3}, members=members, lag={"t": [10, 1, 1]})) == 10
    assert lower_bound(GroupSnapshot(topics={"t": 3}, members=members)) == 0


def test_lower_bound_unequal_subscriptions_uses_the_lp():
    # Only a can read t (20 in all); mean (10.5) and heaviest (10) are both too weak.
    s = GroupSnapshot(topics={"t": 2, "u": 1},
                      members=(Member("a", ("t", "u")), Member("b", ("u",))),
                      lag={"t": [10, 10], "u": [1]})
    assert lower_bound(s) == pytest.approx(20, rel=1e-9)
    assert lower_bound(s) <= 20


def test_lower_bound_ignores_members_that_can_take_nothing():
    s = GroupSnapshot(topics={"t": 2}, members=(Member("a", ("t",)), Member("b", ("gone",))),
                      lag={"t": [3, 3]})
    assert lower_bound(s) == 6


def brute_force_optimum(s: GroupSnapshot) -> float:
    loads = partition_loads(s)
    parts = s.subscribed_partitions()
    choices = [[m.member_id for m in s.members if t in m.topics] for t, _ in parts]
    best = float("inf")
    for owners in itertools.product(*choices):
        total = dict.fromkeys((m.member_id for m in s.members), 0)
        for (t, p), o in zip(parts, owners, strict=True):
            total[o] += loads[t][p]
        best = min(best, max(total.values()))
    return best


@st.composite
def small_groups(draw):
    topics = {f"t{i}": draw(st.integers(0, 3)) for i in range(draw(st.integers(1, 3)))}
    names = list(topics)
    n = draw(st.integers(1, 3))
    members = tuple(Member(f"m{i}", tuple(draw(st.lists(st.sampled_from(names), min_size=1,
                                                        unique=True))))
                    for i in range(n))
    total = sum(topics.values())
    if total > 7:  # keep the brute force small
        topics = {t: min(c, 2) for t, c in topics.items()}
    lags = {t: draw(st.lists(st.integers(0, 100), min_size=c, max_size=c))
            for t, c in topics.items()}
    return GroupSnapshot(topics=topics, members=members, lag=lags)


@settings(max_examples=300, deadline=None)
@given(small_groups())
def test_lower_bound_never_exceeds_the_optimum(s):
    opt = brute_force_optimum(s)
    lb = lower_bound(s)
    assert lb <= opt + 1e-9 * max(1, opt)
    heaviest = max((v for t, vs in partition_loads(s).items() for v in vs
                    if any(t in m.topics for m in s.members)), default=0)
    assert lb >= heaviest


def test_lower_bound_fast_at_a_million_partitions():
    topics = {f"t{i:03d}": 10_000 for i in range(100)}
    names = list(topics)
    # Five buckets of subscriptions, as Kafka's heterogeneous benchmark.
    members = tuple(Member(f"c{i:04d}", tuple(names[(i % 5) * 20:(i % 5) * 20 + 30]))
                    for i in range(2000))
    lags = {t: list(range(10_000)) for t in topics}
    s = GroupSnapshot(topics=topics, members=members, lag=lags)
    start = time.perf_counter()
    lb = lower_bound(s)
    assert time.perf_counter() - start < 10
    assert lb > 0


def test_cross_rack_partitions():
    racks = {"t": [("a", "b"), ("c",), (None,), ("a",)]}
    s = GroupSnapshot(topics={"t": 4}, members=(Member("x", ("t",), rack="a"), Member("y", ("t",))),
                      replica_racks=racks)
    # t-1 on rack c counts; t-2 has unknown racks and y has no rack: neither counts.
    assert cross_rack_partitions(s, {"x": [("t", 0), ("t", 1), ("t", 2)], "y": [("t", 3)]}) == 1
    no_racks = GroupSnapshot(topics={"t": 1}, members=(Member("x", ("t",), rack="a"),))
    assert cross_rack_partitions(no_racks, {"x": [("t", 0)]}) == 0


def test_movement_against_owned_and_given_current():
    s = GroupSnapshot(topics={"t": 3}, lag={"t": [5, 6, 7]},
                      members=(Member("a", ("t",), owned=(("t", 0), ("t", 1))),
                               Member("b", ("t",))))
    new = {"a": [("t", 0)], "b": [("t", 1), ("t", 2)]}
    assert movement(s, new) == (1, 6)  # t-2 was unowned: a new assignment, not a move
    assert movement(s, new, current={"b": [("t", 0)]}) == (1, 5)


def test_validate_assignment():
    s = GroupSnapshot(topics={"t": 2, "u": 1},
                      members=(Member("a", ("t",)), Member("b", ("t", "u"))))
    validate_assignment(s, {"a": [("t", 0)], "b": [("t", 1), ("u", 0)]})
    with pytest.raises(InvalidAssignment, match="u-0 is subscribed but not assigned"):
        validate_assignment(s, {"a": [("t", 0)], "b": [("t", 1)]})
    validate_assignment(s, {"a": [("t", 0)], "b": [("t", 1)]}, allow_unassigned=True)
    with pytest.raises(InvalidAssignment, match="more than once"):
        validate_assignment(s, {"a": [("t", 0), ("t", 1)], "b": [("t", 1), ("u", 0)]})
    with pytest.raises(InvalidAssignment, match="does not subscribe"):
        validate_assignment(s, {"a": [("t", 0), ("u", 0)], "b": [("t", 1)]})
    with pytest.raises(InvalidAssignment, match="not a partition"):
        validate_assignment(s, {"a": [("t", 0), ("t", 5)], "b": [("t", 1), ("u", 0)]})
    with pytest.raises(InvalidAssignment, match="not a member"):
        validate_assignment(s, {"a": [("t", 0)], "b": [("t", 1)], "z": [("u", 0)]})


def test_compute_metrics_to_dict():
    s = GroupSnapshot(topics={"t": 3}, lag={"t": [10, 0, 0]},
                      replica_racks={"t": [("a",), ("b",), ("b",)]},
                      members=(Member("a", ("t",), rack="a", owned=(("t", 0),)),
                               Member("b", ("t",), rack="b")))
    m = compute_metrics(s, {"a": [("t", 1)], "b": [("t", 0), ("t", 2)]})
    assert (m.max_load, m.mean_load, m.imbalance, m.lower_bound) == (10, 5.0, 2.0, 10)
    assert (m.count_spread, m.cross_rack_partitions, m.partitions_moved,
            m.load_moved) == (1, 2, 1, 10)
    assert m.fully_balanced
    d = m.to_dict()
    assert json.loads(json.dumps(d)) == d
    assert d["member_loads"] == {"a": 0, "b": 10}

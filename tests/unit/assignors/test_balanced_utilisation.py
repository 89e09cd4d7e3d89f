"""The balanced assignor planned to a target utilisation (:mod:`assignors.balanced.utilisation`):
against an oracle that tries every assignment of small groups, and unchanged wherever the target
has nothing to hold."""

from __future__ import annotations

import dataclasses
import itertools

from hypothesis import given
from hypothesis import strategies as st

from assignors import balanced, metrics
from assignors.balanced.options import BalancedOptions
from assignors.balanced.solve import solve
from assignors.model import GroupSnapshot, Member
from assignors.validity import validate_assignment

from .test_balanced import FAST, snapshots


def worked_example() -> GroupSnapshot:
    return GroupSnapshot(
        topics={"t": 12},
        members=tuple(Member(f"m{i}", ("t",),
                             owned=tuple(("t", p) for p in range(4 * i, 4 * i + 4)))
                      for i in range(3)),
        lag={"t": [400] * 4 + [0] * 8}, produce_rate={"t": [5.0] * 12},
        capacity={"m0": 12.5, "m1": 25.0, "m2": 25.0})


def parts(assignment) -> dict[str, list[int]]:
    return {m: sorted(p for _, p in tps) for m, tps in assignment.items()}


def test_worked_example_from_the_docstring():
    s = worked_example()
    by_time = balanced.assign(s, horizon_s=60.0)
    assert parts(by_time) == {"m0": [0, 10], "m1": [2, 4, 5, 6, 7, 11], "m2": [1, 3, 8, 9]}
    assert metrics.member_loads(s, by_time, horizon_s=60.0) == {"m0": 1000, "m1": 2200,
                                                                "m2": 2000}
    planned = balanced.assign(s, horizon_s=60.0, target_utilisation=0.8)
    assert parts(planned) == {"m0": [0, 1], "m1": [3, 4, 5, 6, 7], "m2": [2, 8, 9, 10, 11]}
    assert metrics.member_loads(s, planned, horizon_s=60.0) == {"m0": 1400, "m1": 1900,
                                                                "m2": 1900}
    # peers whose figures are lower bounds are not held to it: the plan by time stands
    unmeasured = dataclasses.replace(s, capacity_at_least=frozenset({"m1", "m2"}))
    assert balanced.assign(unmeasured, horizon_s=60.0, target_utilisation=0.8) == by_time


def test_a_measured_slow_member_keeps_headroom_beside_peers_never_measured():
    """The loop's ``hetero`` as the job decided it live: 12 partitions x 20/s; m0 measured at
    60/s, its peers taken at 100/s (what they read, with the headroom assumed: lower bounds). By
    time alone m0 gets 3 partitions, exactly its 60/s, and its backlog never drains; with the target
    it gets 2, and the peers read 100/s each, all of their lower bound."""
    s = GroupSnapshot(
        topics={"t": 12},
        members=tuple(Member(f"m{i}", ("t",),
                             owned=tuple(("t", p) for p in range(4 * i, 4 * i + 4)))
                      for i in range(3)),
        lag={"t": [300] * 4 + [0] * 8}, produce_rate={"t": [20.0] * 12},
        capacity={"m0": 60.0, "m1": 100.0, "m2": 100.0},
        capacity_at_least=frozenset({"m1", "m2"}))
    assert len(balanced.assign(s, horizon_s=60.0)["m0"]) == 3
    planned = balanced.assign(s, horizon_s=60.0, target_utilisation=0.8)
    assert sorted(len(tps) for tps in planned.values()) == [2, 5, 5] and len(planned["m0"]) == 2


def test_a_partition_stuck_on_a_slow_member_still_counts_to_it():
    """Live, the slow member starved one partition at a time (its committed offset still for the
    stuck rule's five polls): pinned to it and weightless in the time, that partition's 20/s
    still comes to it. Counted, m0 keeps it and one more, 40/s of its 57/s."""
    s = GroupSnapshot(
        topics={"t": 12},
        members=tuple(Member(f"m{i}", ("t",), owned=tuple(("t", p) for p in range(i, 12, 3)))
                      for i in range(3)),
        lag={"t": [423, 3, 1, 291, 3, 1, 135, 3, 1, 289, 3, 1]}, produce_rate={"t": [19.93] * 12},
        stuck=frozenset({("t", 0)}), capacity={"m0": 57.28, "m1": 100.36, "m2": 100.36},
        capacity_at_least=frozenset({"m1", "m2"}))
    planned = balanced.assign(s, horizon_s=60.0, target_utilisation=0.8)
    assert ("t", 0) in planned["m0"] and len(planned["m0"]) == 2, planned


@st.composite
def small_groups(draw) -> tuple[GroupSnapshot, float]:
    """One topic of up to 7 partitions, up to 3 members subscribed to it, any lags, rates,
    capacities, measured members and stuck partitions; and a target."""
    n_parts = draw(st.integers(1, 7))
    n_members = draw(st.integers(1, 3))
    owner = draw(st.lists(st.integers(0, n_members), min_size=n_parts, max_size=n_parts))
    members = tuple(Member(f"m{i}", ("t",), owned=tuple(("t", p) for p in range(n_parts)
                                                         if owner[p] == i))
                    for i in range(n_members))
    rate = st.one_of(st.just(0.0), st.floats(0.1, 1000.0))
    snapshot = GroupSnapshot(
        topics={"t": n_parts}, members=members,
        lag={"t": draw(st.lists(st.integers(0, 10**6), min_size=n_parts, max_size=n_parts))},
        produce_rate={"t": draw(st.lists(rate, min_size=n_parts, max_size=n_parts))},
        capacity={m.member_id: draw(st.floats(1.0, 2000.0)) for m in members},
        capacity_at_least=frozenset(draw(st.sets(st.sampled_from([m.member_id
                                                                   for m in members])))),
        stuck=frozenset(("t", p) for p in draw(st.sets(st.integers(0, n_parts - 1)))))
    return snapshot, draw(st.floats(0.3, 1.2))


def utilisations(snapshot: GroupSnapshot, owner: dict[int, str],
                 capacity: dict[str, float] | None = None) -> dict[str, float]:
    capacity = capacity or dict(snapshot.capacity or {})
    held = {m.member_id: 0.0 for m in snapshot.members}
    for p, mid in owner.items():
        held[mid] += snapshot.produce_rate["t"][p]
    return {mid: rate / capacity[mid] for mid, rate in held.items()}


def least_max_utilisation(snapshot: GroupSnapshot, target: float) -> float:
    """The oracle: every assignment that keeps each stuck partition on its owner tried, a measured
    member at its capacity, one never measured at its figure over the target (read to all of its
    lower bound), every partition's rate counted."""
    capacity = {mid: c / target if mid in snapshot.capacity_at_least else c
                for mid, c in (snapshot.capacity or {}).items()}
    pinned = {p: m.member_id for m in snapshot.members for t, p in m.owned
              if (t, p) in snapshot.stuck}
    choices = [[pinned[p]] if p in pinned else [m.member_id for m in snapshot.members]
               for p in range(snapshot.topics["t"])]
    return min(max(utilisations(snapshot, dict(enumerate(choice)), capacity).values())
               for choice in itertools.product(*choices))


@FAST
@given(small_groups())
def test_no_measured_member_is_busier_than_the_target_or_the_group_must_be(drawn):
    snapshot, target = drawn
    opts = BalancedOptions(horizon_s=60.0, target_utilisation=target)
    result = balanced.assign(snapshot, opts)
    validate_assignment(snapshot, result)
    owner = {p: mid for mid, tps in result.items() for _, p in tps}
    measured = [u for mid, u in utilisations(snapshot, owner).items()
                if mid not in snapshot.capacity_at_least]
    bound = max(target, least_max_utilisation(snapshot, target)) * (1 + opts.load_tolerance)
    assert max(measured, default=0.0) <= bound * (1 + 1e-9)
    # where the plan by time alone already keeps to the target, it is the plan
    first = solve(snapshot, opts)
    owner = {p: mid for mid, tps in first.items() for _, p in tps}
    if all(u <= target for mid, u in utilisations(snapshot, owner).items()
           if mid not in snapshot.capacity_at_least):
        assert result == first


@FAST
@given(snapshots(), st.floats(0.01, 2.0))
def test_nothing_to_hold_changes_nothing(snapshot, target):
    """Without capacities, or rates, or a measured member, the target changes nothing."""
    rated = dataclasses.replace(snapshot, produce_rate={t: [1.0] * n
                                                        for t, n in snapshot.topics.items()})
    for s in (rated, dataclasses.replace(rated, produce_rate={}, capacity={
            m.member_id: 1.0 + i for i, m in enumerate(snapshot.members)}),
              dataclasses.replace(rated, capacity={m.member_id: 2.0 for m in snapshot.members},
                                  capacity_at_least=frozenset(m.member_id
                                                              for m in snapshot.members))):
        assert balanced.assign(s, target_utilisation=target) == balanced.assign(s)

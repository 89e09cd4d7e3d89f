"""The balanced assignor with member capacities: time balanced, not records; equal ones change
nothing."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assignors import balanced
from assignors.errors import InvalidSnapshot
from assignors.metrics import capacity_scales, compute_metrics, max_scaled_load, member_loads
from assignors.model import GroupSnapshot, Member
from assignors.validity import validate_assignment

from .test_balanced import FAST, snapshots


@FAST
@given(snapshots(), st.floats(1e-6, 1e12), st.sampled_from([None, 0, 1]))
def test_equal_capacities_give_exactly_the_assignment_without_them(snapshot, capacity,
                                                                   max_count_skew):
    alike = dataclasses.replace(snapshot,
                                capacity={m.member_id: capacity for m in snapshot.members})
    assert balanced.assign(alike, max_count_skew=max_count_skew) == balanced.assign(
        snapshot, max_count_skew=max_count_skew)


@FAST
@given(snapshots(), st.floats(1e-6, 1e12))
def test_equal_capacities_read_plain_records(snapshot, capacity):
    """The max load at the fastest member's rate is plain records when the members are alike."""
    alike = dataclasses.replace(snapshot,
                                capacity={m.member_id: capacity for m in snapshot.members})
    assignment = balanced.assign(snapshot)
    assert set(capacity_scales(alike).values()) == {1.0} and capacity_scales(snapshot) is None
    m = compute_metrics(alike, assignment)
    assert (max_scaled_load(alike, m) == m.max_load
            == max_scaled_load(snapshot, compute_metrics(snapshot, assignment)))


def test_balanced_minimises_the_max_scaled_load():
    """With capacities, the max load at the fastest member's rate is within 3% of the least possible
    and below what an assignment made without them leaves."""
    capacity = {"slow": 1.0, "mid": 1.5, "fast": 3.0}
    snapshot = group(capacity)
    proposed = compute_metrics(snapshot, balanced.assign(snapshot))
    even = compute_metrics(snapshot, balanced.assign(group(None)))
    best = proposed.total_load / sum(capacity.values()) * 3.0
    assert max_scaled_load(snapshot, proposed) <= 1.03 * best < max_scaled_load(snapshot, even)
    assert max_scaled_load(snapshot, even) == pytest.approx(even.member_loads["slow"] * 3.0)


def group(capacity: dict[str, float] | None) -> GroupSnapshot:
    members = tuple(Member(m, ("t",)) for m in ("slow", "mid", "fast"))
    return GroupSnapshot(topics={"t": 60}, members=members,
                         lag={"t": [100 + 7 * (p % 5) for p in range(60)]}, capacity=capacity)


def test_the_slow_member_gets_proportionally_less_load():
    capacity = {"slow": 1.0, "mid": 1.5, "fast": 3.0}
    snapshot = group(capacity)
    assignment = balanced.assign(snapshot)
    validate_assignment(snapshot, assignment)
    load = member_loads(snapshot, assignment)
    assert load["slow"] < load["mid"] < load["fast"]
    # time to clear: within 3% of the least possible, total load over total capacity
    total = sum(load.values())
    best = total / sum(capacity.values())
    assert max(load[m] / capacity[m] for m in load) <= 1.03 * best
    for m in load:  # each member's share of the load is its share of the capacity
        assert load[m] / total == pytest.approx(capacity[m] / sum(capacity.values()), abs=0.02)
    # without capacities the loads are even, and the slow member takes three times as long as the
    # fast one
    even = member_loads(snapshot, balanced.assign(group(None)))
    assert max(even[m] / capacity[m] for m in even) > 1.5 * best


def test_capacities_must_be_positive_and_cover_every_member():
    with pytest.raises(InvalidSnapshot, match="capacity.fast"):
        group({"slow": 1.0, "mid": 1.5})
    with pytest.raises(InvalidSnapshot, match="capacity.slow"):
        group({"slow": 0.0, "mid": 1.5, "fast": 3.0})


@FAST
@given(st.integers(1, 30), st.integers(1, 10**6),
       st.lists(st.floats(0.01, 1e6), min_size=1, max_size=6))
def test_alike_partitions_on_unlike_members_reach_the_least_max_time(n_parts, lag, capacities):
    """The oracle, for partitions of one load: each in turn to the member that finishes it first is
    optimal. A move used to go to the least-loaded member, whatever its speed, and a partition could
    stay on a slow member beside an idle fast one."""
    ids = [f"m{i}" for i in range(len(capacities))]
    capacity = dict(zip(ids, capacities, strict=True))
    snapshot = GroupSnapshot(topics={"t": n_parts}, members=tuple(Member(m, ("t",)) for m in ids),
                             lag={"t": [lag] * n_parts}, capacity=capacity)
    held = dict.fromkeys(ids, 0)
    for _ in range(n_parts):
        held[min(ids, key=lambda m: (held[m] + 1) / capacity[m])] += 1
    least = max(held[m] * lag / capacity[m] for m in ids)
    loads = member_loads(snapshot, balanced.assign(snapshot))
    assert max(loads[m] / capacity[m] for m in ids) <= least * 1.02 * (1 + 1e-9)

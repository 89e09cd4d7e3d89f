"""The lower bound on the max load at the fastest member's rate
(:func:`assignors.metrics.max_scaled_lower_bound`): no valid assignment goes below it, whatever the
capacities, subscriptions, rates and stuck partitions (an oracle tries every assignment of small
groups), and none of the registered assignors' proposals does on larger ones (but a cooperative
first round's, which may leave a partition to nobody). The policy skips the
assignor when even the bound cannot stand (:func:`streaming.policy.recommend.can_stand`), so
this is what keeps its decisions unchanged."""

from __future__ import annotations

import dataclasses
import itertools

from hypothesis import given
from hypothesis import strategies as st

from assignors import metrics, registry
from assignors.model import GroupSnapshot, Member

from .test_balanced import FAST, snapshots

MARGIN = 1 - 1e-9
"""The policy's margin for the sums' rounding (recommend.can_stand)."""


@st.composite
def with_capacities(draw, snapshot: GroupSnapshot) -> GroupSnapshot:
    """``snapshot`` with produce rates (or none) and capacities (or none), some members slow."""
    rates = draw(st.one_of(st.none(), st.just({t: [draw(st.floats(0, 500)) for _ in range(n)]
                                                for t, n in snapshot.topics.items()})))
    capacity = draw(st.one_of(st.none(), st.just(
        {m.member_id: draw(st.floats(0.01, 1e4)) for m in snapshot.members})))
    return dataclasses.replace(snapshot, produce_rate=rates or {}, capacity=capacity)


@st.composite
def small_groups(draw) -> GroupSnapshot:
    """At most 6 partitions and 3 members: few enough to try every assignment."""
    topics = {f"t{i}": draw(st.integers(0, 3)) for i in range(draw(st.integers(1, 2)))}
    names = list(topics)
    members = tuple(
        Member(f"m{i}", tuple(draw(st.lists(st.sampled_from(names), min_size=1, unique=True))))
        for i in range(draw(st.integers(1, 3))))
    lag = {t: draw(st.lists(st.integers(0, 10_000), min_size=n, max_size=n))
           for t, n in topics.items()}
    return draw(with_capacities(GroupSnapshot(topics=topics, members=members, lag=lag)))


def every_assignment(snapshot: GroupSnapshot):
    """Every assignment of every partition of a subscribed topic to a member subscribing to it."""
    wanted = sorted((t, p) for t, n in snapshot.topics.items() for p in range(n)
                    if any(t in m.topics for m in snapshot.members))
    choices = [[m.member_id for m in snapshot.members if t in m.topics] for t, _ in wanted]
    for owners in itertools.product(*choices):
        assignment: dict[str, list] = {m.member_id: [] for m in snapshot.members}
        for tp, owner in zip(wanted, owners, strict=True):
            assignment[owner].append(tp)
        yield assignment


@FAST
@given(small_groups(), st.sampled_from([0.0, 60.0]))
def test_no_assignment_goes_below_the_bound(snapshot, horizon_s):
    bound = metrics.max_scaled_lower_bound(snapshot, horizon_s)
    least = min(metrics.max_scaled_load(snapshot, metrics.compute_metrics(snapshot, a,
                                                                          horizon_s=horizon_s))
                for a in every_assignment(snapshot))
    assert least >= bound * MARGIN


WHOLE = [name for name in registry.names() if not registry.withholds(name)]
"""The assignors that assign every partition (the policy skips only for them)."""


def test_only_the_cooperative_assignor_withholds():
    assert set(registry.names()) - set(WHOLE) == {"cooperative-sticky"}


@FAST
@given(snapshots().flatmap(with_capacities), st.sampled_from(WHOLE),
       st.sampled_from([0.0, 60.0]))
def test_no_assignor_proposal_goes_below_the_bound(snapshot, name, horizon_s):
    proposed = registry.assign(name, snapshot)
    after = metrics.compute_metrics(snapshot, proposed, horizon_s=horizon_s)
    assert metrics.max_scaled_load(snapshot, after) >= (
        metrics.max_scaled_lower_bound(snapshot, horizon_s) * MARGIN)


def test_one_hot_partition_cannot_be_improved_on_and_a_spread_skew_can():
    """One partition holding the skew: the bound is that partition, the max already; the same lag
    over two partitions of one member can be halved."""
    members = (Member("a", ("t",), owned=(("t", 0), ("t", 1))), Member("b", ("t",),
                                                                      owned=(("t", 2),)))
    one = GroupSnapshot(topics={"t": 3}, members=members, lag={"t": [9_000, 10, 10]})
    two = GroupSnapshot(topics={"t": 3}, members=members, lag={"t": [4_500, 4_500, 10]})
    for snapshot, now_max, least in ((one, 9_010, 9_000), (two, 9_000, 4_505)):
        now = metrics.compute_metrics(snapshot, snapshot.current_assignment())
        assert (now.max_load, metrics.max_scaled_lower_bound(snapshot)) == (now_max, least)

"""The balanced assignor: validity, determinism, the count bound, stuck partitions and its
guarantees."""

from __future__ import annotations

import dataclasses
import os
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assignors import balanced, registry
from assignors.balanced import BalancedOptions
from assignors.metrics import compute_metrics, cross_rack_partitions, member_loads
from assignors.model import GroupSnapshot, Member
from assignors.validity import validate_assignment

# -- helpers ---------------------------------------------------------------------------------------


def max_load(snapshot: GroupSnapshot, assignment) -> float:
    return max(member_loads(snapshot, assignment).values(), default=0)


def counts_by_class(snapshot: GroupSnapshot, assignment) -> list[list[int]]:
    classes: dict[frozenset[str], list[int]] = {}
    for m in snapshot.members:
        key = frozenset(t for t in m.topics if t in snapshot.topics)
        classes.setdefault(key, []).append(len(assignment[m.member_id]))
    return list(classes.values())


def owning(snapshot: GroupSnapshot, assignment, generation: int = 1) -> GroupSnapshot:
    members = tuple(dataclasses.replace(m, owned=tuple(assignment.get(m.member_id, ())),
                                        generation=generation)
                    for m in snapshot.members)
    return dataclasses.replace(snapshot, members=members)


def example() -> GroupSnapshot:
    """The module docstring's worked example."""
    return GroupSnapshot(
        topics={"t": 4, "u": 1},
        members=(
            Member("C0", ("t", "u"), rack="a", owned=(("t", 0), ("t", 1), ("t", 2))),
            Member("C1", ("t", "u"), rack="b", owned=(("t", 3), ("u", 0))),
        ),
        replica_racks={"t": [("a",), ("b",), ("a",), ("b",)], "u": [("b",)]},
        lag={"t": [100, 60, 50, 10], "u": [40]},
    )


@st.composite
def snapshots(draw, *, stuck: bool = True, owned: bool = True, racks: bool = True) -> GroupSnapshot:
    n_topics = draw(st.integers(1, 4))
    topics = {f"t{i}": draw(st.integers(0, 8)) for i in range(n_topics)}
    names = list(topics)
    n_members = draw(st.integers(1, 7))
    ids = draw(st.lists(st.text("abcdefxyz0123456789-", min_size=1, max_size=6), min_size=n_members,
                        max_size=n_members, unique=True))
    rack_names = ["a", "b", "c"]
    use_racks = racks and draw(st.booleans())
    lag_values = st.one_of(st.just(0), st.integers(0, 10), st.integers(0, 100_000))
    lag = {t: draw(st.lists(lag_values, min_size=n, max_size=n)) for t, n in topics.items()}
    replica_racks = None
    if use_racks:
        replica_racks = {t: [tuple(draw(st.lists(st.sampled_from([*rack_names, None]), min_size=1,
                                                 max_size=3, unique=True)))
                             for _ in range(n)] for t, n in topics.items()}
    all_tps = [(t, p) for t, n in topics.items() for p in range(n)]
    members = []
    free = list(all_tps)
    random.Random(draw(st.integers(0, 2**16))).shuffle(free)
    for mid in ids:
        subs = tuple(draw(st.lists(st.sampled_from(names), min_size=1, max_size=len(names),
                                   unique=True)))
        mine: list = []
        if owned:
            k = draw(st.integers(0, 4))
            for tp in list(free):
                if len(mine) >= k:
                    break
                if tp[0] in subs:
                    mine.append(tp)
                    free.remove(tp)
        rack = draw(st.sampled_from([*rack_names, None])) if use_racks else None
        members.append(Member(mid, subs, rack=rack, owned=tuple(mine),
                              generation=1 if mine else None))
    stuck_set: frozenset = frozenset()
    if stuck and all_tps:
        stuck_set = frozenset(draw(st.lists(st.sampled_from(all_tps), max_size=3)))
    return GroupSnapshot(topics=topics, members=tuple(members), replica_racks=replica_racks,
                         lag=lag, stuck=stuck_set)


def current_is_valid(snapshot: GroupSnapshot) -> bool:
    try:
        validate_assignment(snapshot, snapshot.current_assignment())
    except ValueError:
        return False
    return True


# A quick run by default; BALANCED_EXAMPLES=1000 for a deeper one.
FAST = settings(max_examples=int(os.environ.get("BALANCED_EXAMPLES", "50")), deadline=None,
                suppress_health_check=[HealthCheck.too_slow])


# -- examples --------------------------------------------------------------------------------------


def test_registered():
    assert balanced.NAME == "balanced"
    assert registry.get("balanced") is balanced.assign


def test_worked_example_from_docstring():
    s = example()
    result = balanced.assign(s)
    assert result == {"C0": [("t", 0), ("u", 0)], "C1": [("t", 1), ("t", 2), ("t", 3)]}
    m = compute_metrics(s, result)
    assert (m.max_load, m.lower_bound, m.cross_rack_partitions,
            m.partitions_moved) == (140, 130, 2, 3)
    assert max_load(s, registry.assign("lag", s)) == 150


def test_balances_across_topics_where_lag_assignor_does_not():
    # grantneale's testAssign: consumer-1 ends with 1,100,500 against 100,001 under the lag
    # assignor.
    s = GroupSnapshot(
        topics={"topic1": 4, "topic2": 2},
        members=(Member("consumer-1", ("topic1", "topic2")), Member("consumer-2", ("topic1",))),
        lag={"topic1": [100000, 100000, 500, 1], "topic2": [900000, 100000]},
    )
    result = balanced.assign(s)
    validate_assignment(s, result)
    # topic2 can only go to consumer-1 (1,000,000): all of topic1 goes to consumer-2.
    assert sorted(result["consumer-2"]) == [("topic1", p) for p in range(4)]
    assert max_load(s, result) == 1_000_000


def test_many_single_partition_topics_are_spread():
    s = GroupSnapshot(topics={f"t{i}": 1 for i in range(4)},
                      members=(Member("c1", ("t0", "t1", "t2", "t3")),
                               Member("c2", ("t0", "t1", "t2", "t3"))),
                      lag={f"t{i}": [10] for i in range(4)})
    result = balanced.assign(s)
    assert sorted(len(v) for v in result.values()) == [2, 2]


def test_zero_lag_group_is_count_balanced_and_sticky():
    topics = {"a": 7, "b": 5}
    members = tuple(Member(f"m{i}", ("a", "b")) for i in range(3))
    s = GroupSnapshot(topics=topics, members=members)
    first = balanced.assign(s)
    assert max(len(v) for v in first.values()) - min(len(v) for v in first.values()) <= 1
    # A fourth member joins: only what it needs moves to it, counts stay within one.
    s2 = owning(s, first)
    s2 = dataclasses.replace(s2, members=(*s2.members, Member("m3", ("a", "b"))))
    second = balanced.assign(s2)
    validate_assignment(s2, second)
    counts = [len(v) for v in second.values()]
    assert max(counts) - min(counts) <= 1
    assert compute_metrics(s2, second).partitions_moved == len(second["m3"]) == 3


def test_more_members_than_partitions():
    s = GroupSnapshot(topics={"t": 3}, members=tuple(Member(f"m{i}", ("t",)) for i in range(8)),
                      lag={"t": [5, 0, 9]})
    result = balanced.assign(s)
    validate_assignment(s, result)
    assert len(result) == 8
    assert sorted(len(v) for v in result.values()) == [0] * 5 + [1] * 3


def test_no_members_and_no_partitions():
    assert balanced.assign(GroupSnapshot(topics={"t": 2}, members=())) == {}
    s = GroupSnapshot(topics={"t": 0}, members=(Member("m", ("t",)),))
    assert balanced.assign(s) == {"m": []}
    s = GroupSnapshot(topics={}, members=(Member("m", ("gone",)),))
    assert balanced.assign(s) == {"m": []}


def test_prefers_same_rack_when_balance_allows():
    racks = ("a", "b", "c")
    members = tuple(Member(f"m{i}", ("t",), rack=racks[i % 3]) for i in range(6))
    rr = [(racks[p % 3],) for p in range(12)]
    s = GroupSnapshot(topics={"t": 12}, members=members, replica_racks={"t": rr},
                      lag={"t": [100] * 12})
    result = balanced.assign(s)
    assert cross_rack_partitions(s, result) == 0
    assert max_load(s, result) == 200


def test_replicas_on_every_rack_and_members_without_rack():
    members = (Member("m0", ("t",), rack="a"), Member("m1", ("t",)), Member("m2", ("t",), rack="b"))
    s = GroupSnapshot(topics={"t": 6}, members=members, replica_racks={"t": [("a", "b")] * 6},
                      lag={"t": [10, 20, 30, 40, 50, 60]})
    result = balanced.assign(s)
    validate_assignment(s, result)
    assert cross_rack_partitions(s, result) == 0
    assert max_load(s, result) == 70


def test_stuck_partition_stays_with_its_owner():
    members = (Member("m0", ("t",), owned=(("t", 0), ("t", 1))),
               Member("m1", ("t",), owned=(("t", 2),)))
    s = GroupSnapshot(topics={"t": 3}, members=members, lag={"t": [1000, 1000, 10]},
                      stuck=frozenset({("t", 0), ("t", 1)}))
    result = balanced.assign(s)
    assert {("t", 0), ("t", 1)} <= set(result["m0"])


def test_stuck_partition_weighs_nothing_on_its_owner():
    # The owner gets through none of the stuck partition's records: it takes its full share of the
    # rest (counting the stuck lag, a million records, would leave it nothing else).
    members = (Member("m0", ("t",), owned=(("t", 0), ("t", 1), ("t", 2))),
               Member("m1", ("t",), owned=(("t", 3), ("t", 4), ("t", 5), ("t", 6))))
    s = GroupSnapshot(topics={"t": 7}, members=members,
                      lag={"t": [1_000_000, 100, 100, 100, 100, 100, 100]},
                      stuck=frozenset({("t", 0)}))
    result = balanced.assign(s)
    assert ("t", 0) in result["m0"]
    assert (len(result["m0"]), len(result["m1"])) == (4, 3)
    assert member_loads(s, result) == {"m0": 300, "m1": 300}
    assert compute_metrics(s, result).max_load == 300


def test_stuck_partition_of_departed_owner_is_assigned():
    s = GroupSnapshot(topics={"t": 2}, members=(Member("m1", ("t",)),), lag={"t": [5, 5]},
                      stuck=frozenset({("t", 0)}))
    assert sorted(balanced.assign(s)["m1"]) == [("t", 0), ("t", 1)]


def test_horizon_adds_production():
    s = GroupSnapshot(topics={"t": 3}, members=(Member("a", ("t",)), Member("b", ("t",))),
                      lag={"t": [100, 0, 0]}, produce_rate={"t": [0.0, 10.0, 10.0]})
    by_lag = balanced.assign(s)
    assert sorted(len(v) for v in by_lag.values()) == [1, 2]
    by_rate = balanced.assign(s, horizon_s=10.0)  # loads 100, 100, 100
    assert max(member_loads(s, by_rate, horizon_s=10.0).values()) == 200


def test_ties_are_not_always_broken_toward_the_lowest_id():
    # grantneale #4: one partition per consumer; the hottest must not always land on the lowest id.
    winners = set()
    for k in range(12):
        ids = [f"logstash-{k}-{i}" for i in range(4)]
        s = GroupSnapshot(topics={"t": 4}, members=tuple(Member(i, ("t",)) for i in ids),
                          lag={"t": [1000, 10, 10, 10]})
        result = balanced.assign(s)
        hot = next(m for m, tps in result.items() if ("t", 0) in tps)
        winners.add(ids.index(hot))
    assert len(winners) > 1


def test_options_dataclass_and_keywords():
    opts = BalancedOptions()
    assert (opts.max_count_skew, opts.load_tolerance, opts.cross_rack_cost, opts.move_cost,
            opts.horizon_s) == (None, 0.02, 10.0, 1.0, 0.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.load_tolerance = 0.5  # type: ignore[misc]
    s = example()
    assert (balanced.assign(s, BalancedOptions(max_count_skew=0))
            == balanced.assign(s, max_count_skew=0))
    with pytest.raises(TypeError):
        balanced.assign(s, max_skew=1)
    for bad in ({"max_count_skew": -1}, {"max_count_skew": 1.5}, {"load_tolerance": -0.1},
                {"cross_rack_cost": float("nan")}, {"horizon_s": True}):
        with pytest.raises(ValueError):
            BalancedOptions(**bad)


def test_count_bound_zero_matches_kafka_balance():
    s = GroupSnapshot(topics={"t": 10}, members=tuple(Member(f"c{i}", ("t",)) for i in range(3)),
                      lag={"t": [360, 359, 230, 118, 444, 122, 65, 111, 455000, 424000]})
    free = balanced.assign(s)
    assert sorted(len(v) for v in free.values()) != [3, 3, 4]  # load first: the hot ones stay alone
    bounded = balanced.assign(s, max_count_skew=0)
    assert sorted(len(v) for v in bounded.values()) == [3, 3, 4]
    assert max_load(s, bounded) < 456_000


def test_large_group_is_valid():
    # Above the LARGE threshold the search is bounded; the result must still be valid and balanced.
    n_t, n_p, n_m = 5, 5000, 60
    rng = random.Random(3)
    topics = {f"t{i}": n_p for i in range(n_t)}
    lag = {t: [int(rng.paretovariate(1.5) * 100) for _ in range(n_p)] for t in topics}
    members = tuple(Member(f"m{i:03d}", tuple(topics), rack="abc"[i % 3]) for i in range(n_m))
    rr = {t: [("abc"[p % 3], "abc"[(p + 1) % 3]) for p in range(n_p)] for t in topics}
    s = GroupSnapshot(topics=topics, members=members, replica_racks=rr, lag=lag)
    result = balanced.assign(s)
    validate_assignment(s, result)
    m = compute_metrics(s, result)
    assert m.max_load <= 1.03 * m.lower_bound
    assert m.cross_rack_partitions == 0


# -- properties ------------------------------------------------------------------------------------


@FAST
@given(snapshots())
def test_valid_and_deterministic(s):
    result = balanced.assign(s)
    validate_assignment(s, result)
    assert set(result) == {m.member_id for m in s.members}
    assert balanced.assign(s) == result
    permuted = dataclasses.replace(s, members=tuple(reversed(s.members)))
    again = balanced.assign(permuted)
    assert {k: sorted(v) for k, v in again.items()} == {k: sorted(v) for k, v in result.items()}
    shuffled = list(s.members)
    random.Random(len(shuffled)).shuffle(shuffled)
    assert balanced.assign(dataclasses.replace(s, members=tuple(shuffled))) == again


@FAST
@given(snapshots(stuck=False), st.integers(0, 2))
def test_count_skew_bound_holds(s, k):
    result = balanced.assign(s, max_count_skew=k)
    validate_assignment(s, result)
    for counts in counts_by_class(s, result):
        assert max(counts) - min(counts) <= 1 + k


@FAST
@given(snapshots())
def test_stuck_partitions_never_move(s):
    result = balanced.assign(s)
    where = {tp: m for m, tps in result.items() for tp in tps}
    for m in s.members:
        for tp in m.owned:
            if tp in s.stuck:
                assert where[tp] == m.member_id


@FAST
@given(snapshots())
def test_never_above_the_current_max_load(s):
    if not current_is_valid(s):
        s = owning(s, registry.assign("roundrobin", s))
    result = balanced.assign(s)
    assert max_load(s, result) <= max_load(s, s.current_assignment()) + 1e-9


@FAST
@given(snapshots(stuck=False))
def test_never_worse_than_the_peers(s):
    mine = max_load(s, balanced.assign(s))
    for name in ("range", "roundrobin", "lag", "sticky"):
        if name in registry.names():
            assert mine <= max_load(s, registry.assign(name, s)) + 1e-9, name


@FAST
@given(snapshots(racks=False, stuck=False, owned=False))
def test_no_racks_and_zero_lag(s):
    zero = dataclasses.replace(s, lag={})
    result = balanced.assign(zero)
    validate_assignment(zero, result)
    for counts in counts_by_class(zero, result):
        assert max(counts) - min(counts) <= 1

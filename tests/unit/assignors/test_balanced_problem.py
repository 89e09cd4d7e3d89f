"""The balanced assignor's problem model: its one cost rule, in scalar and array form, agrees with
itself and with :mod:`assignors.metrics`, and the least cost it derives is exact."""

from __future__ import annotations

import random

import numpy as np
import pytest

from assignors.balanced import BalancedOptions
from assignors.balanced.problem import Problem
from assignors.metrics import cross_rack_partitions
from assignors.model import GroupSnapshot, Member

RACKS = ("a", "b", "c", "d")


def random_group(seed: int) -> GroupSnapshot:
    """Up to 4 topics of up to 12 partitions, up to 7 members (some without rack, some subscribed to
    fewer topics), replica racks with gaps, and a random current owner for most partitions."""
    rng = random.Random(seed)
    topics = {f"t{i}": rng.randint(0, 12) for i in range(rng.randint(1, 4))}
    names = list(topics)
    every = [(t, p) for t, n in topics.items() for p in range(n)]
    n_members = rng.randint(1, 7)
    owned: list[list[tuple[str, int]]] = [[] for _ in range(n_members)]
    for tp in every:
        if rng.random() < 0.8:
            owned[rng.randrange(n_members)].append(tp)
    members = []
    for i in range(n_members):
        subs = tuple(t for t in names if rng.random() < 0.7) or (names[0],)
        rack = rng.choice((*RACKS[:3], None))
        mine = tuple(tp for tp in owned[i] if tp[0] in subs)
        members.append(Member(f"m{i}", subs, rack=rack, owned=mine, generation=1 if mine else None))
    replica_racks = {t: [tuple(rng.sample((*RACKS, None), rng.randint(0, 2))) for _ in range(n)]
                     for t, n in topics.items()}
    return GroupSnapshot(topics=topics, members=tuple(members), replica_racks=replica_racks)


@pytest.mark.parametrize("seed", range(40))
def test_scalar_and_array_costs_agree(seed: int) -> None:
    problem = Problem(random_group(seed), BalancedOptions(cross_rack_cost=3.0, move_cost=0.5))
    parts = np.arange(problem.n_parts)
    for m in range(problem.n_members):
        scalar = [problem.cost(p, m) for p in range(problem.n_parts)]
        assert problem.costs(parts, m).tolist() == scalar
        assert problem.costs_in(np.full(problem.n_parts, m)).tolist() == scalar


@pytest.mark.parametrize("seed", range(40))
def test_least_cost_is_the_cheapest_subscriber(seed: int) -> None:
    problem = Problem(random_group(seed), BalancedOptions(cross_rack_cost=3.0, move_cost=0.5))
    least = problem.least_costs()
    for p in range(problem.n_parts):
        subscribers = problem.group_members[problem.part_group_list[p]].tolist()
        assert least[p] == min(problem.cost(p, m) for m in subscribers)


@pytest.mark.parametrize("seed", range(40))
def test_cross_rack_matches_the_metric(seed: int) -> None:
    snapshot = random_group(seed)
    problem = Problem(snapshot, BalancedOptions())
    rng = random.Random(seed)
    member_of = np.array([rng.choice(problem.group_members[g].tolist())
                          for g in problem.part_group_list],
                         dtype=np.int64)
    assignment = {m.member_id: [] for m in snapshot.members}
    for p, m in enumerate(member_of.tolist()):
        j = int(problem.part_topic[p])
        assignment[problem.members[m].member_id].append((problem.topics[j],
                                                         p - int(problem.topic_start[j])))
    n_cross = int(problem.cross_rack(np.arange(problem.n_parts), member_of).sum())
    assert n_cross == cross_rack_partitions(snapshot, assignment)
    n_moved = int(problem.moved(np.arange(problem.n_parts), member_of).sum())
    assert problem.total_cost(member_of) == 10.0 * n_cross + 1.0 * n_moved

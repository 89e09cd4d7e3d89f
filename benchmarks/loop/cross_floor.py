"""The least cross-rack partition-seconds a strategy's run could have had at the same balance.

A strategy's ``cross_rack_ps`` alone says little: an assignment that ignores load can keep every
partition on its replica's rack, and one that balances load may have to place some away from it. The
yardstick here is, at each sample, the fewest cross-rack partitions of any assignment whose busiest
consumer is no busier than the strategy's (:func:`benchmarks.loop.oracle.least_cross_rack`, on the
workload's true rates and capacities of that stretch, stuck partitions weighing nothing),
step-integrated between samples as ``cross_rack_ps`` is. Where the strategy's assignment leaves
partitions out (mid-rebalance), its busiest consumer is taken no lower than the best any complete
assignment reaches.

Example: ``zipf`` (rates 116, 58, 39, 29, ... /s on racks a, b, c, a, ...; 3 consumers x 150/s on a,
b, c). An assignment at 80% busiest with 4 cross-rack partitions, held for 10 s, when the fewest any
assignment at most 80% busy can have is 1: ``cross_rack_ps`` 40, ``cross_rack_floor_ps`` 10.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import pairwise

from benchmarks.loop import oracle

Partition = tuple[str, int]
Assignment = Mapping[int, Sequence[Partition]]


class Floor:
    """The fewest cross-rack partitions at a strategy's balance, per (stretch, members, load),
    remembered."""

    def __init__(self, problem_of: Callable[[int, frozenset[int]], oracle.Problem]) -> None:
        self.problem_of = problem_of
        self._best: dict[tuple[int, frozenset[int]], float] = {}
        self._least: dict[tuple[int, frozenset[int], float], int | None] = {}

    def of(self, phase: int, assignment: Assignment) -> int | None:
        """For ``assignment`` (consumer index -> partitions) during stretch ``phase``; None when
        unknown."""
        members = frozenset(assignment)
        if not members:
            return None
        problem = self.problem_of(phase, members)
        if not problem.rates:
            return 0
        if (phase, members) not in self._best:
            self._best[(phase, members)] = oracle.solve(problem).max_load
        load = max(oracle.max_load(problem, {c: [p for p in ps if p in problem.rates]
                                            for c, ps in assignment.items()}),
                   self._best[(phase, members)])
        key = (phase, members, round(load / oracle.TOLERANCE) * oracle.TOLERANCE)
        if key not in self._least:
            self._least[key] = oracle.least_cross_rack(problem, key[2])
        return self._least[key]


def floor_ps(samples: Sequence[tuple[float, int, Assignment]], floor: Floor) -> float | None:
    """Partition-seconds of the floor over ``samples`` of (t, stretch, assignment); None if any is
    unknown."""
    total = 0.0
    for (t, phase, assignment), (t_next, _, _) in pairwise(samples):
        least = floor.of(phase, assignment)
        if least is None:
            return None
        total += least * (t_next - t)
    return round(total, 1)

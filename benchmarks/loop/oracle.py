"""The closed-loop benchmark's oracle: the best static assignment for known rates and capacities.

Given each partition's produce rate ``r[p]`` (records/s), each consumer's capacity ``cap[c]``
(records/s) and racks, the oracle picks the assignment that minimises the busiest consumer's
utilisation, ``max over c of (sum of r[p] for p on c) / cap[c]``, and among those the fewest
partitions on a consumer whose rack holds no replica of them (cross-rack). It is computed exactly as
two mixed-integer programs (``scipy.optimize.milp``, HiGHS), with binaries ``x[p, c]`` (p on c) and
each partition on one consumer:

1. minimise ``T`` subject to ``sum_p r[p] x[p, c] <= cap[c] T`` for every consumer c;
2. minimise ``sum of x[p, c]`` over cross-rack pairs, subject to ``sum_p r[p] x[p, c] <= cap[c] T*``
   (``T*`` from step 1, plus a hair for float tolerance).

Program 2 alone, for any ``T`` (:func:`least_cross_rack`), is the least cross-rack any assignment
with the same max utilisation as a given one could have: the benchmark's yardstick for a strategy's
cross-rack partitions (:mod:`benchmarks.loop.cross_floor`), rather than an assignment that ignores
load.

Each step has a time limit; past it HiGHS hands back its best assignment so far (the solution says
so), and the LPT heuristic (longest processing time first: partitions by falling rate, each to the
consumer whose utilisation after taking it is lowest, same rack first on a tie) stands in when the
problem is too big, when no assignment came back, or when it does better.

Worked example: rates 20/s on 12 partitions, capacities 60, 90, 180 (1 : 1.5 : 3). A count-balanced
split gives 4 partitions (80/s) to each: the 60/s consumer at 133%. The oracle gives 2, 3 and 7
partitions: 40/60 = 67%, 60/90 = 67%, 140/180 = 78%, so T* = 0.78 (one partition more on the first
or second consumer puts it at 100% or 89%, one fewer on the third another at 89% or more).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Partition = tuple[str, int]

TIME_LIMIT_S = 10.0
MAX_BINARIES = 20_000
"""Above this many partition x consumer pairs the MILP is not tried (LPT only)."""
TOLERANCE = 1e-6
"""Utilisations this close (relative) are equal: HiGHS's own tolerances are of this order."""


@dataclass(frozen=True)
class Problem:
    rates: Mapping[Partition, float]
    """records/s produced to each partition (a partition nobody processes, such as a stuck one,
    weighs 0)."""
    capacities: Mapping[int, float]
    """records/s each consumer processes at most, by consumer index."""
    consumer_racks: Mapping[int, str] = field(default_factory=dict)
    partition_racks: Mapping[Partition, str] = field(default_factory=dict)
    """the rack of each partition's replica (one replica per partition in the benchmark)."""

    def cross(self, p: Partition, c: int) -> bool:
        """``p`` on ``c`` reads across racks (unknown racks never do)."""
        return _cross(self, self.partition_racks.get(p), c)


@dataclass(frozen=True)
class Solution:
    assignment: dict[int, list[Partition]]
    max_load: float
    """max over consumers of (records/s of its partitions) / its capacity."""
    cross_rack: int
    method: str
    """``milp`` (proven optimal), ``milp, time limit`` (the best found in time), or ``lpt``."""
    lower_bound: float = 0.0
    """no assignment has a lower ``max_load`` (equal to it when proven optimal)."""


def max_load(problem: Problem, assignment: Mapping[int, Sequence[Partition]]) -> float:
    return max((sum(problem.rates[p] for p in assignment.get(c, ())) / cap
                for c, cap in problem.capacities.items()), default=0.0)


def cross_rack(problem: Problem, assignment: Mapping[int, Sequence[Partition]]) -> int:
    return sum(problem.cross(p, c) for c, ps in assignment.items() for p in ps)


def _solution(problem: Problem, assignment: dict[int, list[Partition]], method: str,
              bound: float = 0.0) -> Solution:
    for ps in assignment.values():
        ps.sort()
    load = max_load(problem, assignment)
    return Solution(assignment, load, cross_rack(problem, assignment), method,
                    load if method == "milp" else min(load, max(bound, trivial_bound(problem))))


def trivial_bound(problem: Problem) -> float:
    """All the load spread in proportion to capacity, and the busiest partition on the fastest
    consumer."""
    caps = problem.capacities.values()
    rates = problem.rates.values()
    return max(sum(rates) / sum(caps), max(rates, default=0.0) / max(caps))


def lpt(problem: Problem) -> Solution:
    """Longest processing time first, on consumers of different speeds (a 2-approximation at
    worst)."""
    consumers = sorted(problem.capacities)
    load = dict.fromkeys(consumers, 0.0)
    out: dict[int, list[Partition]] = {c: [] for c in consumers}
    for p in sorted(problem.rates, key=lambda p: (-problem.rates[p], p)):
        c = min(consumers, key=lambda c: ((load[c] + problem.rates[p]) / problem.capacities[c],
                                          problem.cross(p, c), len(out[c]), c))
        load[c] += problem.rates[p]
        out[c].append(p)
    return _solution(problem, out, "lpt")


def solve(problem: Problem, time_limit_s: float = TIME_LIMIT_S) -> Solution:
    """The oracle's assignment: the MILP's when it can be had, else (or when better) LPT's."""
    if not problem.capacities:
        raise ValueError("no consumer to assign to")
    if any(cap <= 0 for cap in problem.capacities.values()):
        raise ValueError(f"capacities must be positive: {dict(problem.capacities)}")
    fallback = lpt(problem)
    if not problem.rates or len(problem.rates) * len(problem.capacities) > MAX_BINARIES:
        return fallback
    found = _milp(problem, time_limit_s)
    return found if found is not None and _rank(found) <= _rank(fallback) else fallback


def _rank(s: Solution) -> tuple[float, int]:
    """Utilisation first (equal within float noise), then cross-rack partitions."""
    return round(s.max_load / TOLERANCE) * TOLERANCE, s.cross_rack


class _Program:
    """The two programs' shared parts. Partitions of the same rate and rack are interchangeable, so
    the variables are counts, ``n[g, c]`` partitions of group ``g`` on consumer ``c``, not one
    binary per partition: the same optimum, without the symmetry that keeps HiGHS from proving it
    (12 x 20/s on 3 racks: 9 variables instead of 36); the last variable is ``T``."""

    def __init__(self, problem: Problem, time_limit_s: float) -> None:
        import numpy as np
        from scipy.optimize import Bounds, LinearConstraint

        self.problem, self.time_limit_s = problem, time_limit_s
        self.groups = _groups(problem)
        self.consumers = sorted(problem.capacities)
        n_g, n_c = len(self.groups), len(self.consumers)
        self.n = n = n_g * n_c  # v[i * n_c + j]: partitions of group i on consumer j
        sizes = np.array([len(ps) for ps in self.groups.values()], dtype=float)
        # rates near 1 keep HiGHS's tolerances meaningful
        scale = max(problem.rates.values()) or 1.0
        rates = np.array([rate for rate, _ in self.groups]) / scale
        self.caps = np.array([problem.capacities[c] for c in self.consumers]) / scale
        all_placed = np.zeros((n_g, n + 1))
        for i in range(n_g):
            all_placed[i, i * n_c:(i + 1) * n_c] = 1
        self.loads = np.zeros((n_c, n + 1))
        for j in range(n_c):
            self.loads[j, j:n:n_c] = rates
        self.integrality = np.r_[np.ones(n), 0]
        self.bounds = Bounds(np.zeros(n + 1), np.r_[np.repeat(sizes, n_c), np.inf])
        self.placed = LinearConstraint(all_placed, sizes, sizes)
        self.cross = np.array([_cross(problem, rack, c) for _, rack in self.groups
                               for c in self.consumers] + [False],
                              dtype=float)

    def run(self, c: Any, constraints: list[Any]) -> tuple[Any, bool, float]:
        """(the solution or None, proven optimal, HiGHS's dual bound)."""
        from scipy.optimize import milp

        res = milp(c, integrality=self.integrality, bounds=self.bounds,
                   constraints=[self.placed, *constraints],
                   options={"time_limit": self.time_limit_s, "disp": False})
        return res.x, res.status == 0, float(getattr(res, "mip_dual_bound", None) or 0.0)

    def least_load(self) -> tuple[dict[int, list[Partition]] | None, bool, float]:
        """Program 1: the lowest max utilisation."""
        import numpy as np
        from scipy.optimize import LinearConstraint

        first = self.loads.copy()
        first[:, self.n] = -self.caps
        x, proven, dual = self.run(np.r_[np.zeros(self.n), 1.0],
                                   [LinearConstraint(first, -np.inf, 0)])
        return (None if x is None else _decode(self.groups, x, self.consumers)), proven, dual

    def least_cross(self, max_load: float) -> tuple[dict[int, list[Partition]] | None, bool]:
        """Program 2: the fewest cross-rack partitions with every utilisation at most
        ``max_load``."""
        import numpy as np
        from scipy.optimize import LinearConstraint

        cap = LinearConstraint(self.loads, -np.inf, self.caps * max_load * (1 + TOLERANCE / 100))
        y, proven, _ = self.run(self.cross, [cap])
        return (None if y is None else _decode(self.groups, y, self.consumers)), proven


def _milp(problem: Problem, time_limit_s: float) -> Solution | None:
    """The two programs of the module's docstring; None when HiGHS found no assignment in time."""
    program = _Program(problem, time_limit_s)
    best, proven, dual = program.least_load()
    if best is None:
        return None
    t_star = max_load(problem, best)
    if program.cross.any():
        tie_broken, proven_2 = program.least_cross(t_star)
        if (tie_broken is not None and max_load(problem, tie_broken) <= t_star * (1 + TOLERANCE)
                and cross_rack(problem, tie_broken) <= cross_rack(problem, best)):
            best, proven = tie_broken, proven and proven_2
    return _solution(problem, best, "milp" if proven else "milp, time limit", dual)


def least_cross_rack(problem: Problem, load: float,
                     time_limit_s: float = TIME_LIMIT_S) -> int | None:
    """The fewest cross-rack partitions of any assignment whose busiest consumer is at most at
    ``load`` (program 2 alone); None when HiGHS finds none in time (or ``load`` is below what any
    assignment reaches)."""
    if not problem.rates:
        return 0
    program = _Program(problem, time_limit_s)
    if not program.cross.any():
        return 0
    found, _ = program.least_cross(load)
    if found is None or max_load(problem, found) > load * (1 + TOLERANCE):
        return None
    return cross_rack(problem, found)


def _groups(problem: Problem) -> dict[tuple[float, str | None], list[Partition]]:
    """Partitions by (rate, replica rack), each list sorted."""
    out: dict[tuple[float, str | None], list[Partition]] = {}
    for p in sorted(problem.rates):
        out.setdefault((problem.rates[p], problem.partition_racks.get(p)), []).append(p)
    return out


def _cross(problem: Problem, rack: str | None, c: int) -> bool:
    have = problem.consumer_racks.get(c)
    return rack is not None and have is not None and rack != have


def _decode(groups: Mapping[tuple[float, str | None], list[Partition]], v: Sequence[float],
            consumers: list[int]) -> dict[int, list[Partition]]:
    """Each group's partitions dealt out by the counts (integers up to HiGHS's tolerance), in
    order."""
    n_c = len(consumers)
    out: dict[int, list[Partition]] = {c: [] for c in consumers}
    for i, ps in enumerate(groups.values()):
        counts = [round(float(v[i * n_c + j])) for j in range(n_c)]
        # rounding never loses one
        counts[max(range(n_c), key=lambda j: counts[j])] += len(ps) - sum(counts)
        at = 0
        for j, k in enumerate(counts):
            out[consumers[j]].extend(ps[at:at + k])
            at += k
    return out

"""The oracle strategy's plan for one workload: the best static assignment
(:mod:`benchmarks.loop.oracle`) for each stretch of the run between the workload's events, computed
before the run.

The oracle knows what the benchmark knows: the schedule's per-partition rates (the base rates: the
``balanced`` workload's noise is zero-mean), each consumer's capacity, the members present, the
replica racks (a ``move-replicas`` event shifts each to the next rack), and which partitions are
stuck (never processed, so they weigh nothing on a consumer's capacity). Phase 0 runs from the
start; phase ``k`` from the ``k``-th event. The benchmark calls :meth:`OracleSchedule.advance` as
each event fires and makes the oracle's group rebalance; the group leader's assignor asks
:meth:`OracleSchedule.assignment` for the members it has. Members other than the phase's (while the
group forms, or in the moment a member leaves or joins) get the LPT heuristic's assignment for
themselves, at once, rather than a MILP in the leader's poll.
"""

from __future__ import annotations

import threading
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from benchmarks.loop import oracle
from benchmarks.loop.workloads import Event, Workload

Partition = tuple[str, int]


@dataclass(frozen=True)
class Phase:
    at: float
    """fraction of the run it starts at."""
    label: str
    rates: dict[str, tuple[float, ...]]
    capacities: dict[int, float]
    """by consumer index, the members present only."""
    moves: int
    """replica shifts so far: partition ``p``'s replica is on rack ``racks[(p + moves) %
    len(racks)]``."""


def phases(w: Workload) -> list[Phase]:
    """The workload's stretches: the start, then one per event (in the order they fire)."""
    rates = {t.name: t.rates for t in w.topics}
    capacities = {i: w.capacity_of(i) for i in range(w.consumers)}
    known = dict(capacities)  # a consumer that leaves comes back at the capacity it had
    moves = 0
    out = [Phase(0.0, "start", dict(rates), dict(capacities), moves)]
    for e in sorted(w.events, key=lambda e: e.at):
        rates, capacities, moves = _after(e, rates, capacities, known, moves)
        out.append(Phase(e.at, e.label, dict(rates), dict(capacities), moves))
    return out


def _after(e: Event, rates: dict[str, tuple[float, ...]], capacities: dict[int, float],
           known: dict[int, float],
           moves: int) -> tuple[dict[str, tuple[float, ...]], dict[int, float], int]:
    """Rates, capacities and replica shifts once ``e`` has fired."""
    rates, capacities = dict(rates), dict(capacities)
    if e.kind == "rates":
        rates[e.topic] = e.rates
    elif e.kind == "leave":
        capacities.pop(e.index, None)
    elif e.kind == "join":
        capacities[e.index] = known[e.index]
    elif e.kind == "capacity":
        capacities[e.index] = known[e.index] = e.capacity
    elif e.kind == "move-replicas":
        moves += 1
    else:
        raise ValueError(f"unknown event {e.kind!r}")
    return rates, capacities, moves


def problem(w: Workload, phase: Phase, members: Collection[int]) -> oracle.Problem:
    """The phase's problem for these members (indices); partitions as (the workload's topic name,
    p)."""
    stuck = set(w.stuck)
    racks = w.racks
    rates = {(t, p): 0.0 if (t, p) in stuck else r
             for t, rs in phase.rates.items() for p, r in enumerate(rs)}
    # with a replica on every rack, no partition is ever cross-rack:
    # no partition rack to compare with
    partition_racks = ({} if w.replicas > 1
                       else {(t, p): racks[(p + phase.moves) % len(racks)] for t, p in rates})
    return oracle.Problem(
        rates, {i: phase.capacities.get(i, w.capacity_of(i)) for i in members},
        {i: racks[i % len(racks)] for i in members}, partition_racks)


class OracleSchedule:
    """The plan for one run, thread-safe: the driver advances it, the group leader reads it."""

    def __init__(self, w: Workload, time_limit_s: float = oracle.TIME_LIMIT_S) -> None:
        self.workload = w
        self.phases = phases(w)
        self.solutions = [oracle.solve(problem(w, ph, ph.capacities), time_limit_s)
                          for ph in self.phases]
        self._lock = threading.Lock()
        self._current = 0
        self._improvised: dict[tuple[int, frozenset[int]], oracle.Solution] = {}

    def advance(self) -> None:
        """The next event fired: the next phase's plan from now on."""
        with self._lock:
            self._current = min(self._current + 1, len(self.phases) - 1)

    def assignment(self, members: Collection[int]) -> dict[int, list[Partition]]:
        """Consumer index -> its partitions, for the members present now."""
        present = frozenset(members)
        with self._lock:
            k = self._current
            if present == frozenset(self.phases[k].capacities):
                return self.solutions[k].assignment
            key = (k, present)
            if key not in self._improvised:
                self._improvised[key] = oracle.lpt(problem(self.workload, self.phases[k], present))
            return self._improvised[key].assignment

    def summary(self) -> list[dict[str, Any]]:
        """Per phase: when, what, and the oracle's utilisation, cross-rack partitions and how it was
        found."""
        return [{"at": ph.at, "label": ph.label, "members": sorted(ph.capacities),
                 "max_load": round(s.max_load, 4), "lower_bound": round(s.lower_bound, 4),
                 "cross_rack": s.cross_rack, "method": s.method}
                for ph, s in zip(self.phases, self.solutions, strict=True)]

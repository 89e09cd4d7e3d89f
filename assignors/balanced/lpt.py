"""Greedy placement (LPT): partitions one by one, each to the least-loaded (or fewest-partitions)
subscriber, or, when preferring, to the cheapest of that member, the partition's owner and the
least-loaded subscriber on each rack holding a replica, as long as it stays within the cap.

Members are kept in *pools*, one per eligibility group and one per (group, rack), ordered by the
placement key: ``(load, count, tie-break hash, index)`` (by count: ``(count, load, ...)``). Two pool
kinds answer "who is first" the same way: heaps (keys only grow while partitions are added, so a
stale entry at the top is refreshed and the top looked at again, and no other heap needs updating),
and, with many overlapping subscriber sets where the heaps would go stale too often, a vectorised
argmin over members ordered by tie-break hash.
"""

from __future__ import annotations

import heapq
from typing import Any

import numpy as np

from .problem import Problem
from .state import State

# A member's place in a pool: (load, count, tie-break, index), or (count, load, ...) by count.
Key = tuple[float, float, int, int]


class _Placer:
    """The running loads and counts of one placement, and the key members are ordered by."""

    def __init__(self, problem: Problem, st: State, by_count: bool, full: list[int] | None) -> None:
        self.load: list[float] = st.load.tolist()
        self.count: list[int] = st.count.tolist()
        self.tiebreak = problem.tiebreak_list
        self.by_count = by_count
        self.full = full
        self.key = self.count_key if by_count else self.load_key

    def load_key(self, m: int) -> Key:
        return (self.load[m], self.count[m], self.tiebreak[m], m)

    def count_key(self, m: int) -> Key:
        return (self.count[m], self.load[m], self.tiebreak[m], m)

    def has_room(self, m: int) -> bool:
        return self.full is None or self.count[m] < self.full[m]


class _Pools:
    """The pool of each eligibility group (``groups[g]``) and of each (group, rack) (``racks``)."""

    groups: list[Any]
    racks: dict[tuple[int, int], Any]

    def top(self, pool: Any) -> int:
        """The first member of ``pool`` by the placement key."""
        raise NotImplementedError

    def placed(self, m: int) -> None:
        """Member ``m`` took a partition (nothing to do for pools that refresh lazily)."""


class _HeapPools(_Pools):
    """Pools as heaps of keys; a member found full at the top leaves the heap for good."""

    def __init__(self, problem: Problem, placer: _Placer, by_rack: bool) -> None:
        self.key, self.count, self.full = placer.key, placer.count, placer.full
        key = placer.key
        self.groups: list[list[Key]] = [[key(m) for m in ms.tolist()]
                                        for ms in problem.group_members]
        for h in self.groups:
            heapq.heapify(h)
        self.racks: dict[tuple[int, int], list[Key]] = {}
        if by_rack:
            for g, ms in enumerate(problem.group_members):
                for m in ms.tolist():
                    r = problem.member_rack_list[m]
                    if r >= 0:
                        self.racks.setdefault((g, r), []).append(key(m))
            for h in self.racks.values():
                heapq.heapify(h)

    def top(self, pool: list[Key]) -> int:
        key, count, full = self.key, self.count, self.full
        while True:
            entry = pool[0]
            m = entry[-1]
            if full is not None and count[m] >= full[m] and len(pool) > 1:
                heapq.heappop(pool)  # full for good: counts only grow here
                continue
            k = key(m)
            if entry == k:
                return m
            heapq.heapreplace(pool, k)


def _in_tiebreak_order(members: np.ndarray, tiebreak: np.ndarray) -> np.ndarray:
    return members[np.lexsort((members, tiebreak[members]))]


class _ArgminPools(_Pools):
    """Pools as arrays of members in tie-break order; the first has the least value (count or
    load)."""

    def __init__(self, problem: Problem, placer: _Placer, by_rack: bool) -> None:
        self.placer = placer
        self.value = np.array(placer.count if placer.by_count else placer.load, dtype=np.float64)
        tiebreak, member_rack = problem.tiebreak, problem.member_rack
        self.groups = [_in_tiebreak_order(ms, tiebreak) for ms in problem.group_members]
        self.racks: dict[tuple[int, int], np.ndarray] = {}
        if by_rack:
            for g, ms in enumerate(problem.group_members):
                for r in np.unique(member_rack[ms]).tolist():
                    if r >= 0:
                        self.racks[(g, r)] = _in_tiebreak_order(ms[member_rack[ms] == r], tiebreak)

    def top(self, pool: np.ndarray) -> int:
        return int(pool[np.argmin(self.value[pool])])

    def placed(self, m: int) -> None:
        """Member ``m`` took a partition: its new value, or out of the running once full."""
        placer = self.placer
        self.value[m] = placer.count[m] if placer.by_count else placer.load[m]
        if placer.full is not None and placer.count[m] >= placer.full[m]:
            self.value[m] = np.inf


class _Preference:
    """Whether a cheaper member than the first one may take a partition, and which one."""

    def __init__(self, problem: Problem, placer: _Placer, pools: _Pools, cap: float,
                 by_rack: bool) -> None:
        self.problem, self.placer, self.pools = problem, placer, pools
        self.cap, self.by_rack = cap, by_rack
        self.fair_share = -(-problem.n_parts // problem.n_members) if problem.n_classes == 1 else 0
        self.racks_of_group = [[r for r in range(problem.n_racks) if (g, r) in pools.racks]
                               for g in range(len(problem.group_members))]

    def fits(self, p: int, first: int, c: int) -> bool:
        """Whether ``c`` may take ``p`` instead of ``first``: it holds no more than the fair share
        or ``first`` (on counts), or stays within the cap with ``p`` (on loads), and has room."""
        placer = self.placer
        if placer.by_count:
            within = placer.count[c] <= max(placer.count[first], self.fair_share - 1)
        else:
            problem = self.problem
            within = placer.load[c] <= self.cap - problem.part_load_list[p] * problem.scale_list[c]
        return within and placer.has_room(c)

    def cheapest(self, p: int, g: int, m: int, cost_m: float) -> int:
        """Of ``m``, the owner of ``p`` and the first member on each replica rack, the cheapest that
        fits."""
        problem, cost, key = self.problem, self.problem.cost, self.placer.key
        first = m
        best = (cost_m, key(m))
        o = problem.owner_list[p]
        if o >= 0 and o != m and self.fits(p, first, o):
            k = (cost(p, o), key(o))
            if k < best:
                best, m = k, o
        mask = problem.rack_mask[p]
        if self.by_rack and mask:
            for r in self.racks_of_group[g]:
                if (mask >> r) & 1:
                    c = self.pools.top(self.pools.racks[(g, r)])
                    if c != m and self.fits(p, first, c):
                        k = (cost(p, c), key(c))
                        if k < best:
                            best, m = k, c
        return m


def _pools_for(problem: Problem, placer: _Placer, by_rack: bool) -> _Pools:
    """Heap pools, or argmin pools when many overlapping subscriber sets would keep the heaps
    stale."""
    many_groups = sum(len(ms) for ms in problem.group_members) > 4 * problem.n_members + 64
    return (_ArgminPools if many_groups else _HeapPools)(problem, placer, by_rack)


def _write_back(st: State, placer: _Placer) -> None:
    """Copy the running loads and counts back into the state."""
    st.load[:] = placer.load
    st.count[:] = placer.count


def place(problem: Problem, st: State, order: list[int], cap: float, prefer: bool, by_count: bool,
          full: list[int] | None = None) -> None:
    """Place the partitions of ``order`` one by one into ``st`` (see the module docstring).

    ``by_count``: the fewest-partitions member first (for zero-load partitions; a preferred member
    may then hold up to the fair share, or as many as the first one), else the least loaded (a
    preferred member must stay within ``cap``). ``full[m]``: member ``m`` takes no more partitions
    once it holds that many, unless it is the only subscriber left.
    """
    if not order:
        return
    placer = _Placer(problem, st, by_count, full)
    by_rack = prefer and problem.rack_aware
    pools = _pools_for(problem, placer, by_rack)
    # heaps refresh lazily: only the argmin pools need telling
    refresh = isinstance(pools, _ArgminPools)
    preference = _Preference(problem, placer, pools, cap, by_rack)
    part_load, part_group, cost = problem.part_load_list, problem.part_group_list, problem.cost
    scale = problem.scale_list
    load, count = placer.load, placer.count
    for p in order:
        g = part_group[p]
        m = pools.top(pools.groups[g])
        if prefer:
            cost_m = cost(p, m)
            if cost_m > 0:
                m = preference.cheapest(p, g, m, cost_m)
        load[m] += part_load[p] * scale[m]
        count[m] += 1
        if refresh:
            pools.placed(m)
        st.member_of[p] = m
        st.held[m].add(p)
    st.forget_movable()
    _write_back(st, placer)

"""Partition counts: the windows the ``max_count_skew`` bound gives each member, bringing a state
into them, and evening counts out with zero-load partitions (which moves no load)."""

from __future__ import annotations

import heapq

import numpy as np

from .problem import Problem
from .state import State

# Per member, the least and the most partitions it may hold.
Window = tuple[np.ndarray, np.ndarray]


def windows(problem: Problem, st: State) -> Window:
    """Per-member count range [lo, hi] that moves must respect (from the hard bound, if any)."""
    n_members = problem.n_members
    lo = np.zeros(n_members, dtype=np.int64)
    hi = np.full(n_members, np.iinfo(np.int64).max // 4, dtype=np.int64)
    k = problem.opts.max_count_skew
    if k is None:
        return lo, hi
    pinned = problem.pinned
    pinned_count = (np.bincount(problem.owner[pinned], minlength=n_members) if pinned.any()
                    else np.zeros(n_members, dtype=np.int64))
    for ms in problem.class_members:
        total = int(st.count[ms].sum())
        n = len(ms)
        floor = total // n
        ceil = -(-total // n)
        # A member pinned to more than the ceiling keeps them; the window stays 1 + k wide.
        class_hi = max(ceil + k - (k // 2), int(pinned_count[ms].max()))
        class_lo = max(0, min(floor - (k // 2), class_hi - 1 - k))
        lo[ms] = class_lo
        hi[ms] = class_hi
    return lo, hi


def enforce_count_bound(problem: Problem, st: State, window: Window) -> None:
    """Bring every count into its window: members above it give their lightest partitions, which go
    heaviest first to the least-loaded member below it (or with room, when none is below)."""
    if problem.opts.max_count_skew is None:
        return
    lo, hi = window
    for ms in problem.class_members:
        c = st.count[ms]
        if bool(((c <= hi[ms]) & (c >= lo[ms])).all()):
            continue
        give, take = _give_and_take(problem, st, ms, lo[ms], hi[ms])
        moving: list[int] = []
        for i in np.flatnonzero(give).tolist():
            parts = st.movable(int(ms[i]), problem.pinned)
            parts = parts[np.argsort(problem.part_load[parts], kind="stable")][: int(give[i])]
            moving += parts.tolist()
        _to_least_loaded(problem, st, moving, ms, take)


def _give_and_take(problem: Problem, st: State, ms: np.ndarray, lo: np.ndarray,
                   hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per member of class ``ms``, how many partitions it gives and takes so both totals match."""
    c = st.count[ms]
    give = np.maximum(c - hi, 0)
    take = np.maximum(lo - c, 0)
    n_give, n_take = int(give.sum()), int(take.sum())
    tiebreak = problem.tiebreak[ms]
    if n_give > n_take:  # more to give than to fill: the emptiest members with room take the rest
        room = np.where(give > 0, 0, hi - c - take)
        for i in np.lexsort((tiebreak, st.load[ms], c)).tolist():
            if n_give == n_take:
                break
            extra = min(int(room[i]), n_give - n_take)
            take[i] += extra
            n_take += extra
    elif n_take > n_give:  # more to fill than to give: the fullest members with spare give the rest
        spare = np.where(take > 0, 0, c - lo - give)
        for i in np.lexsort((tiebreak, -st.load[ms], -c)).tolist():
            if n_give == n_take:
                break
            extra = min(int(spare[i]), n_take - n_give)
            give[i] += extra
            n_give += extra
    return give, take


def _to_least_loaded(problem: Problem, st: State, moving: list[int], ms: np.ndarray,
                          take: np.ndarray) -> None:
    """``moving``, heaviest first, each to the least-loaded member of ``ms`` still to take some."""
    part_load = problem.part_load_list
    heap = [(float(st.load[int(ms[i])]), int(problem.tiebreak[int(ms[i])]), int(ms[i]),
             int(take[i]))
            for i in np.flatnonzero(take).tolist()]
    heapq.heapify(heap)
    moving.sort(key=lambda p: (-part_load[p], p))
    for p in moving:
        if not heap:
            break
        load, h, m, left = heapq.heappop(heap)
        st.move(p, m, part_load[p])
        if left > 1:
            heapq.heappush(heap, (load + part_load[p] * problem.scale_list[m], h, m, left - 1))


def balance_counts(problem: Problem, st: State) -> None:
    """Even out counts within each class of identical subscriptions with zero-load partitions.

    Moving a partition without load changes no load, so this costs no balance. Targets: the
    members holding most keep ``ceil``, the others ``floor`` of the class mean; the costliest
    partitions to keep (already cross-rack or moved ones first) go preferably to their owner, else
    to a same-rack member short of its target, else to any member short of it.
    """
    free = (problem.part_load <= 0) & ~problem.pinned
    if not free.any():
        return
    for ms in problem.class_members:
        if len(ms) < 2:
            continue
        c = st.count[ms]
        if int(c.max() - c.min()) <= 1:
            continue
        n, total = len(ms), int(c.sum())
        base, extra = divmod(total, n)
        order = np.lexsort((problem.tiebreak[ms], -c))
        target = np.full(n, base, dtype=np.int64)
        target[order[:extra]] += 1
        deficit: dict[int, int] = {}
        shed: list[int] = []
        for i in order.tolist():
            m = int(ms[i])
            d = int(target[i] - c[i])
            if d > 0:
                deficit[m] = d
            elif d < 0:
                parts = np.fromiter((p for p in st.held[m] if free[p]), dtype=np.int64)
                if len(parts) == 0:
                    continue
                parts.sort()
                costs = problem.costs(parts, m)
                shed.extend(parts[np.lexsort((parts, -costs))][: -d].tolist())
        if deficit and shed:
            _fill_deficits(problem, st, shed, deficit)


class _Receivers:
    """Members short of their target, in tie-break order, as a whole and per rack."""

    def __init__(self, problem: Problem, deficit: dict[int, int]) -> None:
        self.deficit = deficit
        self.all = sorted(deficit, key=lambda m: (problem.tiebreak_list[m], m))
        self.by_rack: dict[int, list[int]] = {}
        for m in self.all:
            self.by_rack.setdefault(problem.member_rack_list[m], []).append(m)
        # Members before these positions have no deficit left.
        self.rack_pos: dict[int, int] = dict.fromkeys(self.by_rack, 0)
        self.any_pos = 0

    def on_rack(self, r: int) -> int:
        """The first member of rack ``r`` still short, else -1."""
        pool, i = self.by_rack[r], self.rack_pos[r]
        while i < len(pool) and self.deficit[pool[i]] <= 0:
            i += 1
        self.rack_pos[r] = i
        return pool[i] if i < len(pool) else -1

    def anywhere(self) -> int:
        """The first member still short, else -1."""
        while self.any_pos < len(self.all) and self.deficit[self.all[self.any_pos]] <= 0:
            self.any_pos += 1
        return self.all[self.any_pos] if self.any_pos < len(self.all) else -1


def _fill_deficits(problem: Problem, st: State, shed: list[int], deficit: dict[int, int]) -> None:
    receivers = _Receivers(problem, deficit)
    for p in shed:
        b = -1
        o = problem.owner_list[p]
        if o >= 0 and deficit.get(o, 0) > 0:
            b = o
        mask = problem.rack_mask[p]
        if b < 0 and mask:
            for r in receivers.by_rack:
                if r >= 0 and (mask >> r) & 1:
                    b = receivers.on_rack(r)
                    if b >= 0:
                        break
        if b < 0:
            b = receivers.anywhere()
            if b < 0:
                break
        deficit[b] -= 1
        st.move(p, b, 0.0)

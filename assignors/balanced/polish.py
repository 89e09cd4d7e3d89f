"""Polish: lower a finalist's cross-rack/move cost while every load stays within the cap.

For each partition that costs more where it is than it could anywhere (lightest first), try a *move*
to a cheaper member (its owner, or up to ``k`` least-loaded members on a rack holding a replica),
then a *swap* with one of those members' partitions that lowers the pair's total cost. A move must
keep both loads within ``cap``, both counts in their windows, and must not widen a class's count
spread (past one); a swap keeps counts. A few rounds, until one changes nothing.
"""

from __future__ import annotations

import numpy as np

from .counts import Window
from .options import LARGE, POLISH_FEW, SMALL
from .problem import Problem
from .state import State

_EPS = 1e-9


class _CountSpread:
    """Per class of subscriptions, the least and most partitions a member holds, kept exact as
    partitions move; moves may shift counts inside a class's spread, never widen it (beyond one)."""

    def __init__(self, problem: Problem, st: State) -> None:
        self.member_class: list[int] = problem.member_class.tolist()
        self.least = [int(st.count[ms].min()) for ms in problem.class_members]
        self.most = [int(st.count[ms].max()) for ms in problem.class_members]
        self.allowed = [max(most - least, 1)
                        for least, most in zip(self.least, self.most, strict=True)]
        self.histogram: list[dict[int, int]] = []
        for ms in problem.class_members:
            values, freq = np.unique(st.count[ms], return_counts=True)
            self.histogram.append(dict(zip(values.tolist(), freq.tolist(), strict=True)))

    def allows(self, a: int, count_a: int, b: int, count_b: int) -> bool:
        """Whether members ``a`` and ``b`` may hold ``count_a`` and ``count_b`` partitions."""
        na, nb = self.member_class[a], self.member_class[b]
        least, most, allowed = self.least, self.most, self.allowed
        if na == nb:
            return max(most[na], count_b) - min(least[na], count_a) <= allowed[na]
        return (most[na] - min(least[na], count_a) <= allowed[na]
                and max(most[nb], count_b) - least[nb] <= allowed[nb])

    def shift(self, m: int, old: int, new: int) -> None:
        """Member ``m`` goes from ``old`` to ``new`` partitions."""
        n = self.member_class[m]
        h = self.histogram[n]
        h[old] -= 1
        h[new] = h.get(new, 0) + 1
        if h[old] == 0:
            del h[old]
        self.least[n] = min(self.least[n], new)
        self.most[n] = max(self.most[n], new)
        while self.least[n] not in h:
            self.least[n] += 1
        while self.most[n] not in h:
            self.most[n] -= 1


class _Polisher:
    def __init__(self, problem: Problem, st: State, window: Window, cap: float) -> None:
        self.problem = problem
        self.st = st
        self.cap = cap * (1 + 1e-12)
        self.lo: list[int] = window[0].tolist()
        self.hi: list[int] = window[1].tolist()
        n_parts = problem.n_parts
        self.rounds = 2 if n_parts > LARGE else 4
        # Same-rack targets tried per partition; swap searches scan their partitions: bound the
        # total.
        self.k_targets = 16 if n_parts <= SMALL else 4
        self.swap_budget = max(50,
                               int(300_000 / (self.k_targets * (n_parts / problem.n_members + 1))))
        self.least_costs = problem.least_costs()
        self.least_list: list[float] = self.least_costs.tolist()
        # (group, rack) -> the group's members on that rack.
        self.rack_members: dict[tuple[int, int], np.ndarray] = {}
        if problem.rack_aware:
            for g, ms in enumerate(problem.group_members):
                for r in range(problem.n_racks):
                    on_rack = ms[problem.member_rack[ms] == r]
                    if len(on_rack):
                        self.rack_members[(g, r)] = on_rack
        self.spread = _CountSpread(problem, st)
        self.subscribed: list[list[bool]] = problem.subscribed.tolist()
        # Python mirrors of the state's arrays for one round (numpy scalar access is slow here).
        self.loads: list[float] = []
        self.counts: list[int] = []
        self.member_of: list[int] = []
        self.by_load: dict[tuple[int, int], list[int]] = {}

    def run(self) -> None:
        for _ in range(self.rounds):
            if not self._round():
                return

    def _round(self) -> bool:
        """One pass over the partitions that could cost less; whether anything changed."""
        problem, st = self.problem, self.st
        costly = np.flatnonzero((problem.costs_in(st.member_of) > self.least_costs + _EPS)
                                & ~problem.pinned)
        if len(costly) == 0:
            return False
        # Lighter partitions first: they fit more easily and move less load.
        costly = costly[np.argsort(problem.part_load[costly], kind="stable")]
        self.by_load = {key: ms[np.lexsort((problem.tiebreak[ms], st.load[ms]))].tolist()
                        for key, ms in self.rack_members.items()}
        self.loads = st.load.tolist()
        self.counts = st.count.tolist()
        self.member_of = st.member_of.tolist()
        improved = False
        for p in costly.tolist():
            a = self.member_of[p]
            cost_here = problem.cost(p, a)
            if cost_here <= self.least_list[p] + _EPS:
                continue
            gains = self._gains(p, a, cost_here)
            if self._try_move(p, a, gains):
                improved = True
                continue
            if self.swap_budget <= 0:
                continue
            self.swap_budget -= 1
            if self._try_swap(p, a, gains):
                improved = True
        return improved

    def _gains(self, p: int, a: int, cost_here: float) -> list[tuple[float, float, int, int]]:
        """Members where ``p`` would cost less, best first: (-gain, load, tie-break, member)."""
        problem = self.problem
        o = problem.owner_list[p]
        targets = [o] if o >= 0 and o != a else []
        mask = problem.rack_mask[p]
        r_a = problem.member_rack_list[a]
        if mask and r_a >= 0 and not (mask >> r_a) & 1:
            g = problem.part_group_list[p]
            for r in range(problem.n_racks):
                if (mask >> r) & 1:
                    # Up to k least-loaded members of the group on rack r.
                    n = 0
                    for b in self.by_load.get((g, r), ()):
                        if b != a and b != o:
                            targets.append(b)
                            n += 1
                            if n >= self.k_targets:
                                break
        gains = []
        for b in targets:
            gain = cost_here - problem.cost(p, b)
            if gain > _EPS:
                gains.append((-gain, self.loads[b], problem.tiebreak_list[b], b))
        gains.sort()
        return gains

    def _try_move(self, p: int, a: int, gains: list[tuple[float, float, int, int]]) -> bool:
        """Move ``p`` to the best member where loads, counts and the count spread allow it."""
        counts = self.counts
        count_a = counts[a] - 1
        if count_a < self.lo[a]:
            return False
        load_p = self.problem.part_load_list[p]
        scale = self.problem.scale_list
        for _gain, load_b, _tiebreak, b in gains:
            if load_b + load_p * scale[b] > self.cap or counts[b] + 1 > self.hi[b]:
                continue
            count_b = counts[b] + 1
            if self.spread.allows(a, count_a, b, count_b):
                self.spread.shift(a, count_a + 1, count_a)
                self.spread.shift(b, count_b - 1, count_b)
                self._move(p, b)
                return True
        return False

    def _try_swap(self, p: int, a: int, gains: list[tuple[float, float, int, int]]) -> bool:
        """Swap ``p`` with the partition of one of the first ``k`` members that saves the most."""
        load_p = self.problem.part_load_list[p]
        best: tuple[float, float, int, int] | None = None
        for neg_gain, _load, _tiebreak, b in gains[: self.k_targets]:
            find = self._swap_few if self.counts[b] <= POLISH_FEW else self._swap_many
            candidate = find(p, a, b, -neg_gain, load_p)
            if candidate is not None and (best is None or candidate < best):
                best = candidate
        if best is None:
            return False
        _, _, b, q = best
        self._move(p, b)
        self._move(q, a)
        return True

    def _swap_many(self, p: int, a: int, b: int, gain: float,
                   load_p: float) -> tuple[float, float, int, int] | None:
        """Of ``b``'s partitions ``a`` may take, the one that keeps both loads within the cap and
        saves the most with ``p`` (then the lightest, then the first): ``(-saving, its load, b,
        it)``; None if none saves."""
        problem, st, cap = self.problem, self.st, self.cap
        theirs = st.movable(b, problem.pinned)
        if len(theirs) == 0:
            return None
        theirs = theirs[problem.subscribed[a, problem.part_topic[theirs]]]
        if len(theirs) == 0:
            return None
        their_loads = problem.part_load[theirs]
        s_a, s_b = problem.scale_list[a], problem.scale_list[b]
        ok = ((self.loads[a] - load_p * s_a + their_loads * s_a <= cap)
              & (self.loads[b] + load_p * s_b - their_loads * s_b <= cap))
        if not ok.any():
            return None
        total = gain - (problem.costs(theirs, a) - problem.costs(theirs, b))
        ok &= total > _EPS
        if not ok.any():
            return None
        idx = np.flatnonzero(ok)
        k = idx[np.lexsort((theirs[idx], their_loads[idx], -total[idx]))[0]]
        return (-float(total[k]), float(their_loads[k]), b, int(theirs[k]))

    def _swap_few(self, p: int, a: int, b: int, gain: float,
                  load_p: float) -> tuple[float, float, int, int] | None:
        """:meth:`_swap_many` in plain Python, for a member holding few partitions (the same floats,
        the same pick: the least of a total order, so the order partitions are visited in does not
        matter)."""
        problem, cap = self.problem, self.cap
        subs, topic, pinned = self.subscribed[a], problem.part_topic_list, problem.pinned_list
        weight, cost = problem.part_load_list, problem.cost
        s_a, s_b = problem.scale_list[a], problem.scale_list[b]
        keep_a, keep_b = self.loads[a] - load_p * s_a, self.loads[b] + load_p * s_b
        pick: tuple[float, float, int] | None = None
        for q in self.st.held[b]:
            if pinned[q] or not subs[topic[q]]:
                continue
            w = weight[q]
            if keep_a + w * s_a <= cap and keep_b - w * s_b <= cap:
                total = gain - (cost(q, a) - cost(q, b))
                if total > _EPS and (pick is None or (-total, w, q) < pick):
                    pick = (-total, w, q)
        return None if pick is None else (pick[0], pick[1], b, pick[2])

    def _move(self, p: int, b: int) -> None:
        """Move ``p`` to ``b`` in the state and in the round's mirrors."""
        load_p = self.problem.part_load_list[p]
        a = self.member_of[p]
        self.loads[a] -= load_p * self.problem.scale_list[a]
        self.counts[a] -= 1
        self.loads[b] += load_p * self.problem.scale_list[b]
        self.counts[b] += 1
        self.member_of[p] = b
        self.st.move(p, b, load_p)


def polish(problem: Problem, st: State, window: Window, cap: float) -> None:
    """Moves, then swaps, that lower the cross-rack/move cost while loads stay within ``cap``."""
    if problem.cross_rack_cost == 0 and problem.move_cost == 0:
        return
    _Polisher(problem, st, window, cap).run()

"""Balancing search: lower the max member load by local steps.

Repeatedly take the member with the highest load and apply the best single *move* (one of its
partitions to the eligible member of the partition's group it ends least loaded on: the least-loaded
one when the members are alike) or *swap* (one of its partitions against a lighter one of another
member) that lowers the pair's max, until neither helps or the lower bound is reached. Moves
respect the count windows; swaps keep counts.

Up to ``SMALL`` partitions every lighter member is a swap partner and the iterations are many;
above it both are bounded by counts (never by time, so the result stays deterministic).

The steps of a member holding up to ``FEW`` partitions are found in plain Python (:mod:`.steps`),
the others' with numpy (below): numpy's fixed cost per call dominates on a few dozen entries. Both
compute the same floats in the same order and offer the same step, so the path taken never changes a
result.
"""

from __future__ import annotations

import math

import numpy as np

from . import steps
from .counts import Window
from .options import FEW, SMALL
from .problem import Problem
from .state import State


def _ranked(problem: Problem, st: State) -> list[int]:
    """Members heaviest first, ties by tie-break hash, then index (``np.lexsort`` is stable)."""
    ranked: list[int] = np.lexsort((problem.tiebreak, -st.load)).tolist()
    return ranked


def _partners(order: list[int], loads: list[float], below: float, limit: int) -> list[int]:
    """Up to ``limit`` members after the first of ``order`` with a load below ``below``, lightest
    first."""
    partners: list[int] = []
    for m in reversed(order[1:]):
        if len(partners) >= limit:
            break
        if loads[m] < below:
            partners.append(m)
    return partners


def balance(problem: Problem, st: State, window: Window) -> None:
    """Local search on the most loaded member (see the module docstring)."""
    small = problem.n_parts <= SMALL
    max_iter = 50 + 4 * problem.n_parts if small else min(4 * problem.n_parts, 1500)
    search = _Search(problem, st, window, partner_limit=problem.n_members if small else 12)
    bound = problem.lower_bound
    for _ in range(max_iter):
        loads = st.load.tolist()  # st.move updates st.load: read afresh each round
        order = _ranked(problem, st)
        a = order[0]
        if loads[a] <= bound * (1 + 1e-12) or loads[a] <= 0:
            return
        step = search.best_step(order, loads)
        if step is None:
            return
        p, b, q = step
        st.move(p, b, problem.part_load_list[p])
        search.sides.moved(p, a, b)
        if q >= 0:
            st.move(q, a, problem.part_load_list[q])
            search.sides.moved(q, b, a)


class _Search:
    """One balancing run's fixed figures, and its members' sides as the Python steps keep them."""

    def __init__(self, problem: Problem, st: State, window: Window, partner_limit: int) -> None:
        self.problem, self.st, self.window = problem, st, window
        self.lo: list[int] = window[0].tolist()
        self.hi: list[int] = window[1].tolist()
        self.partner_limit = partner_limit
        self.sides = steps.Sides(problem, st)
        self.finite_scales = all(math.isfinite(x) for x in problem.scale_list)

    def best_step(self, order: list[int], loads: list[float]) -> tuple[int, int, int] | None:
        """The best move or swap of the first member of ``order``, None if none lowers the pair's
        max load. A member holding few partitions takes the Python steps, the others the numpy ones:
        the same step."""
        problem, st = self.problem, self.st
        a = order[0]
        load_a = loads[a]
        eps = load_a * 1e-12
        best = steps.Best(load_a - eps)
        counts = st.count.tolist()
        can_move = counts[a] - 1 >= self.lo[a]
        # Python's max, < and bisect agree with numpy's maximum, argmin and searchsorted on finite
        # loads only (a capacity ratio past 1e308 makes infinite scales, and inf - inf NaN loads):
        # those stay in numpy.
        if counts[a] <= FEW and self.finite_scales and math.isfinite(sum(loads)):
            own = self.sides.own(a)
            if not own:
                return None
            if can_move:
                steps.offer_moves(problem, a, own, loads, counts, self.hi, best)
            if self._swaps_may_help(best, order, loads):
                partners = _partners(order, loads, load_a - eps, self.partner_limit)
                steps.offer_swaps(problem, self.sides, a, partners, loads, best)
        else:
            parts = st.movable(a, problem.pinned)
            if len(parts) == 0:
                return None
            if can_move:
                _offer_moves(problem, st, self.window, a, parts, best)
            if self._swaps_may_help(best, order, loads):
                _offer_swaps(problem, st, a, parts,
                             _partners(order, loads, load_a - eps, self.partner_limit), best)
        return best.step

    def _swaps_may_help(self, best: steps.Best, order: list[int], loads: list[float]) -> bool:
        """Unless a move already brings the first member down to the next member's load (or the
        bound)."""
        next_load = loads[order[1]] if self.problem.n_members > 1 else 0.0
        return best.step is None or best.value > max(next_load, self.problem.lower_bound)


def _offer_moves(problem: Problem, st: State, window: Window, a: int, parts: np.ndarray,
                 best: steps.Best) -> None:
    """Each of ``a``'s partitions to the member of its group with room for one more that it ends
    least loaded on (ties by tie-break, then index): the least-loaded one when the members are
    alike."""
    hi = window[1]
    load = st.load
    load_a = float(load[a])
    groups = problem.part_group[parts]
    weights = problem.part_load[parts]
    for g in np.unique(groups).tolist():
        ms = problem.group_members[g]
        ms = ms[(ms != a) & (st.count[ms] + 1 <= hi[ms])]
        if len(ms) == 0:
            continue
        sel = groups == g
        candidates = weights[sel]
        if problem.alike:
            b = int(ms[np.lexsort((problem.tiebreak[ms], load[ms]))[0]])
            takers = np.full(len(candidates), b)
            after = float(load[b]) + candidates * problem.scale_list[b]
        else:
            ms = ms[np.argsort(problem.tiebreak[ms], kind="stable")]
            ends = load[ms][:, None] + problem.scale[ms][:, None] * candidates[None, :]
            first = np.argmin(ends, axis=0)
            takers = ms[first]
            after = ends[first, np.arange(len(candidates))]
        values = np.maximum(load_a - candidates * problem.scale_list[a], after)
        i = int(np.argmin(values))
        best.offer(float(values[i]), (int(parts[sel][i]), int(takers[i]), -1))


def _offer_swaps(problem: Problem, st: State, a: int, parts: np.ndarray, partners: list[int],
                 best: steps.Best) -> None:
    """Each of ``a``'s partitions against the partner's partition closest to half the load gap
    (members alike; else the difference that evens the pair: ``gap / (scale_a + scale_b)`` of own
    load).

    ``partners`` come lightest first: once the even split with one is no gain, no later one is
    (members alike; with capacities this only bounds the search)."""
    load = st.load
    load_a = float(load[a])
    s_a = problem.scale_list[a]
    weights = problem.part_load[parts]
    topics = problem.part_topic[parts]
    subscribed, part_topic, part_load = problem.subscribed, problem.part_topic, problem.part_load
    for b in partners:
        load_b = float(load[b])
        s_b = problem.scale_list[b]
        gap = load_a - load_b
        if gap * s_b / (s_a + s_b) + load_b >= best.value:
            break
        b_takes = subscribed[b, topics]
        if not b_takes.any():
            continue
        theirs = st.movable(b, problem.pinned)
        if len(theirs) == 0:
            continue
        theirs = theirs[subscribed[a, part_topic[theirs]]]
        if len(theirs) == 0:
            continue
        by_weight = np.argsort(part_load[theirs], kind="stable")
        their_weights = part_load[theirs][by_weight]
        mine, my_weights = parts[b_takes], weights[b_takes]
        # For each p, the q whose weight is closest to w_p - gap/2 (and lighter than w_p).
        idx = np.searchsorted(their_weights, my_weights - gap / (s_a + s_b))
        for off in (0, -1):
            j = np.clip(idx + off, 0, len(their_weights) - 1)
            d = my_weights - their_weights[j]
            valid = (d > 0) & (d * s_b < gap)
            if not valid.any():
                continue
            values = np.where(valid, np.maximum(load_a - d * s_a, load_b + d * s_b), np.inf)
            i = int(np.argmin(values))
            best.offer(float(values[i]), (int(mine[i]), b, int(theirs[by_weight[j[i]]])))

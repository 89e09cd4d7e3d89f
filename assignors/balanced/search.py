"""Balancing search: lower the max member load by local steps.

Repeatedly take the member with the highest load and apply the best single *move* (one of its
partitions to the least-loaded eligible member of the partition's group) or *swap* (one of its
partitions against a lighter one of another member) that lowers the pair's max, until neither helps
or the lower bound is reached. Moves respect the count windows; swaps keep counts.

Up to ``SMALL`` partitions every lighter member is a swap partner and the iterations are many;
above it both are bounded by counts (never by time, so the result stays deterministic).
"""

from __future__ import annotations

import numpy as np

from .counts import Window
from .options import SMALL
from .problem import Problem
from .state import State


class _Best:
    """The best step found so far: the pair's max load after it, and ``(p, b, q)``: ``p`` goes to
    member ``b``, and, for a swap, ``b``'s partition ``q`` comes back (-1 for a move)."""

    __slots__ = ("step", "value")

    def __init__(self, value: float) -> None:
        self.value = value
        self.step: tuple[int, int, int] | None = None

    def offer(self, value: float, step: tuple[int, int, int]) -> None:
        if value < self.value:
            self.value = value
            self.step = step


def balance(problem: Problem, st: State, window: Window) -> None:
    """Local search on the most loaded member (see the module docstring)."""
    n_members, bound = problem.n_members, problem.lower_bound
    small = problem.n_parts <= SMALL
    max_iter = 50 + 4 * problem.n_parts if small else min(4 * problem.n_parts, 1500)
    partner_limit = n_members if small else 12
    load = st.load  # updated in place by st.move
    for _ in range(max_iter):
        order = np.lexsort((problem.tiebreak, -load))
        a = int(order[0])
        load_a = float(load[a])
        if load_a <= bound * (1 + 1e-12) or load_a <= 0:
            return
        eps = load_a * 1e-12
        parts = st.movable(a, problem.pinned)
        if len(parts) == 0:
            return
        best = _Best(load_a - eps)
        if st.count[a] - 1 >= window[0][a]:
            _offer_moves(problem, st, window, a, parts, best)
        # Swaps, unless a move already brings a down to the next member's load.
        next_load = float(load[order[1]]) if n_members > 1 else 0.0
        if best.step is None or best.value > max(next_load, bound):
            partners = order[1:][load[order[1:]] < load_a - eps][::-1][:partner_limit]
            _offer_swaps(problem, st, a, parts, partners.tolist(), best)
        if best.step is None:
            return
        p, b, q = best.step
        st.move(p, b, problem.part_load_list[p])
        if q >= 0:
            st.move(q, a, problem.part_load_list[q])


def _offer_moves(problem: Problem, st: State, window: Window, a: int, parts: np.ndarray, best: _Best) -> None:
    """Each of ``a``'s partitions to the least-loaded member of its group with room for one more."""
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
        b = int(ms[np.lexsort((problem.tiebreak[ms], load[ms]))[0]])
        load_b = float(load[b])
        sel = groups == g
        candidates = weights[sel]
        values = np.maximum(load_a - candidates * problem.scale_list[a], load_b + candidates * problem.scale_list[b])
        i = int(np.argmin(values))
        best.offer(float(values[i]), (int(parts[sel][i]), b, -1))


def _offer_swaps(problem: Problem, st: State, a: int, parts: np.ndarray, partners: list[int],
                 best: _Best) -> None:
    """Each of ``a``'s partitions against the partner's partition closest to half the load gap (members
    alike; else the difference that evens the pair: ``gap / (scale_a + scale_b)`` of own load).

    ``partners`` come lightest first: once the even split with one is no gain, no later one is (members
    alike; with capacities this only bounds the search)."""
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

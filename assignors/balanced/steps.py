"""The balancing search's steps for a member holding few partitions, in plain Python.

:mod:`.search` offers its moves and swaps with numpy. For a member holding a few dozen partitions
(the job's 100 partitions x 4 members: 25 each) numpy's fixed cost per call, a dozen calls per
partner, is most of the work, so up to :data:`.options.FEW` partitions the search takes the steps
here instead: the same floats computed in the same order, the same step picked
(``tests/unit/assignors/test_balanced_steps.py`` runs both on the same states, and whole runs with
and without these). That holds on finite figures: Python's ``max``, ``<`` and ``bisect`` treat NaN
unlike numpy's ``maximum``, ``argmin`` and ``searchsorted``, so the search keeps groups with
infinite scales or loads (capacities over 1e308 apart) on numpy.

Example of a swap: member ``a`` (load 300) holds weights [10, 50, 240], its partner ``b`` (load 100)
holds [5, 40]. The gap is 200, so each of a's partitions looks for one of b's near its own weight
minus 100: 240 finds 40, but that swap (a difference of 200) would only turn the pair around; 50
finds 5, leaving 255 / 145; 10 finds 5 (295 / 105). The swap of 50 for 5 is offered (the move of 50
alone, 250 / 150, beats it).
"""

from __future__ import annotations

from bisect import bisect_left

from .problem import Problem
from .state import State


class Best:
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


Side = tuple[list[int], list[float]]


class Sides:
    """Per member, its movable partitions and their weights as lists, as a swap partner of a given
    class (subscriptions) can take them: in index order (``mine``) and by weight (``theirs``). Built
    once when first asked, then edited in place by :meth:`moved` as each step moves a partition or
    two (rebuilding them after every step cost more than the steps themselves)."""

    def __init__(self, problem: Problem, st: State) -> None:
        self.problem, self.st = problem, st
        self.subscribed: list[list[bool]] = problem.subscribed.tolist()
        self.member_class: list[int] = problem.member_class.tolist()
        self.class_subscribed = [self.subscribed[int(ms[0])] for ms in problem.class_members]
        self._own: list[list[int] | None] = [None] * problem.n_members
        self._mine: list[dict[int, Side]] = [{} for _ in range(problem.n_members)]
        self._theirs: list[dict[int, Side]] = [{} for _ in range(problem.n_members)]

    def moved(self, p: int, src: int, dst: int) -> None:
        """Movable partition ``p`` went from member ``src`` to ``dst``: edit what is kept of
        both."""
        w, t = self.problem.part_load_list[p], self.problem.part_topic_list[p]
        for m, add in ((src, False), (dst, True)):
            own = self._own[m]
            if own is not None:
                _edit(own, None, bisect_left(own, p), p, w, add)
            for c, (parts, weights) in self._mine[m].items():
                if self.class_subscribed[c][t]:
                    _edit(parts, weights, bisect_left(parts, p), p, w, add)
            for c, (parts, weights) in self._theirs[m].items():
                if self.class_subscribed[c][t]:
                    i = bisect_left(weights, w)
                    # ties in index order
                    while i < len(parts) and weights[i] == w and parts[i] < p:
                        i += 1
                    _edit(parts, weights, i, p, w, add)

    def own(self, m: int) -> list[int]:
        """``m``'s movable partitions in index order (:meth:`State.movable` as a list)."""
        kept = self._own[m]
        if kept is None:
            pinned = self.problem.pinned_list
            kept = self._own[m] = sorted(p for p in self.st.held[m] if not pinned[p])
        return kept

    def _taken_by(self, m: int, other: int) -> list[int]:
        """``m``'s movable partitions, in index order, that ``other`` subscribes to."""
        subs = self.subscribed[other]
        part_topic, pinned = self.problem.part_topic_list, self.problem.pinned_list
        return sorted(p for p in self.st.held[m] if not pinned[p] and subs[part_topic[p]])

    def mine(self, a: int, b: int) -> Side:
        """``a``'s partitions that ``b`` may take, in index order, with their weights."""
        kept = self._mine[a].get(self.member_class[b])
        if kept is None:
            parts = self._taken_by(a, b)
            weights = [self.problem.part_load_list[p] for p in parts]
            kept = self._mine[a][self.member_class[b]] = (parts, weights)
        return kept

    def theirs(self, b: int, a: int) -> Side:
        """``b``'s partitions that ``a`` may take, lightest first (ties in index order), with their
        weights."""
        kept = self._theirs[b].get(self.member_class[a])
        if kept is None:
            weight = self.problem.part_load_list
            # stable: ties keep index order
            parts = sorted(self._taken_by(b, a), key=weight.__getitem__)
            kept = self._theirs[b][self.member_class[a]] = (parts, [weight[p] for p in parts])
        return kept


def _edit(parts: list[int], weights: list[float] | None, i: int, p: int, w: float,
          add: bool) -> None:
    """Insert ``p`` (weight ``w``) at position ``i`` of ``parts`` (and ``weights``), or remove it
    from there."""
    if add:
        parts.insert(i, p)
        if weights is not None:
            weights.insert(i, w)
    else:
        del parts[i]
        if weights is not None:
            del weights[i]


def offer_moves(problem: Problem, a: int, parts: list[int], loads: list[float], counts: list[int],
                hi: list[int], best: Best) -> None:
    """Each of ``a``'s partitions (index order) to the member of its group with room for one more
    that it ends least loaded on (ties by tie-break, then index; the least-loaded one when the
    members are alike); per group, the partition giving the least pair max (the first)."""
    group, weight, scale = problem.part_group_list, problem.part_load_list, problem.scale_list
    tiebreak = problem.tiebreak_list
    by_group: dict[int, list[int]] = {}
    for p in parts:
        by_group.setdefault(group[p], []).append(p)
    load_a, s_a = loads[a], scale[a]
    for g in sorted(by_group):
        takers = sorted((tiebreak[m], m) for m in problem.group_members_list[g]
                        if m != a and counts[m] + 1 <= hi[m])
        if not takers:
            continue
        if problem.alike:
            b = min(takers, key=lambda tm: loads[tm[1]])[1]
            takers = [(0, b)]
        value, pick, to = 0.0, -1, -1
        for p in by_group[g]:
            w = weight[p]
            b, y = -1, 0.0
            for _, m in takers:
                end = loads[m] + w * scale[m]
                if b < 0 or end < y:
                    b, y = m, end
            x = load_a - w * s_a
            v = x if x >= y else y
            if pick < 0 or v < value:
                value, pick, to = v, p, b
        best.offer(value, (pick, to, -1))


def offer_swaps(problem: Problem, sides: Sides, a: int, partners: list[int], loads: list[float],
                best: Best) -> None:
    """Each of ``a``'s partitions against each partner's (lightest partner first) closest to the
    even split (:func:`search._offer_swaps` says how); stops at the first partner with whom even
    that is no gain."""
    scale = problem.scale_list
    load_a, s_a = loads[a], scale[a]
    for b in partners:
        load_b, s_b = loads[b], scale[b]
        gap = load_a - load_b
        if gap * s_b / (s_a + s_b) + load_b >= best.value:
            break
        mine, my_weights = sides.mine(a, b)
        if not mine:
            continue
        theirs, their_weights = sides.theirs(b, a)
        if not theirs:
            continue
        _pair(mine, my_weights, theirs, their_weights, (load_a, s_a, load_b, s_b), b, best)


def _pair(mine: list[int], my_weights: list[float], theirs: list[int], their_weights: list[float],
          figures: tuple[float, float, float, float], b: int, best: Best) -> None:
    """For each ``p`` of ``mine``, the ``q`` of ``theirs`` whose weight is nearest above and nearest
    below ``w_p - gap / (s_a + s_b)`` (where ``searchsorted`` lands, and the entry before); each of
    the two rounds offers its least pair max, if any swap of it lightens ``a`` without
    overshooting."""
    load_a, s_a, load_b, s_b = figures
    gap = load_a - load_b
    shift = gap / (s_a + s_b)
    last, lightest, limit = len(their_weights) - 1, their_weights[0], best.value
    # Both rounds in one pass, each keeping its own first least value.
    value0, p0, q0, value1, p1, q1 = 0.0, -1, -1, 0.0, -1, -1
    for p, w in zip(mine, my_weights, strict=True):
        # No swap of p can beat the best so far: a keeps at least this much (rounding is monotone,
        # so the lightest q's figure bounds every q's as computed below). Skipping it changes no
        # pick.
        if load_a - (w - lightest) * s_a >= limit:
            continue
        k = bisect_left(their_weights, w - shift)  # in [0, last + 1]
        j = k if k <= last else last
        d = w - their_weights[j]
        if d > 0:
            e = d * s_b
            if e < gap:
                x, y = load_a - d * s_a, load_b + e
                v = x if x >= y else y
                if p0 < 0 or v < value0:
                    value0, p0, q0 = v, p, theirs[j]
        j = k - 1 if k > 0 else 0
        d = w - their_weights[j]
        if d > 0:
            e = d * s_b
            if e < gap:
                x, y = load_a - d * s_a, load_b + e
                v = x if x >= y else y
                if p1 < 0 or v < value1:
                    value1, p1, q1 = v, p, theirs[j]
    if p0 >= 0:
        best.offer(value0, (p0, b, q0))
    if p1 >= 0:
        best.offer(value1, (p1, b, q1))

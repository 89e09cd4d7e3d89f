"""One assignment under construction, and the figures the assignor compares assignments by."""

from __future__ import annotations

import numpy as np

from .problem import Problem


class State:
    """Which member holds each partition (``member_of``, -1 = nobody yet), and per member its load
    (scaled: :attr:`~assignors.balanced.problem.Problem.scale`; callers pass a partition's own
    load), partition count and the set of partitions it holds (``held``).

    :meth:`movable` is asked for the same few members again and again by the search and the polish
    while only one or two of them change in between: each member's answer is kept until ``put``,
    ``move`` or ``take_off`` changes that member (code that writes ``held`` directly calls
    :meth:`forget_movable`)."""

    __slots__ = ("_movable", "count", "held", "load", "member_of", "name", "scale")

    def __init__(self, name: str, n_members: int, n_parts: int, scale: list[float]) -> None:
        self.name = name
        self.scale = scale
        self.member_of = np.full(n_parts, -1, dtype=np.int64)
        self.load = np.zeros(n_members, dtype=np.float64)
        self.count = np.zeros(n_members, dtype=np.int64)
        self.held: list[set[int]] = [set() for _ in range(n_members)]
        self._movable: list[np.ndarray | None] = [None] * n_members

    def put(self, p: int, m: int, load: float) -> None:
        """Give unassigned partition ``p`` (of load ``load``) to member ``m``."""
        self.member_of[p] = m
        self.load[m] += load * self.scale[m]
        self.count[m] += 1
        self.held[m].add(p)
        self._movable[m] = None

    def take_off(self, p: int, load: float) -> None:
        """Leave partition ``p`` (of load ``load``) unassigned."""
        m = int(self.member_of[p])
        self.held[m].discard(p)
        self.load[m] -= load * self.scale[m]
        self.count[m] -= 1
        self.member_of[p] = -1
        self._movable[m] = None

    def move(self, p: int, to: int, load: float) -> None:
        """Move partition ``p`` (of load ``load``) from its member to member ``to``."""
        m = int(self.member_of[p])
        self.held[m].discard(p)
        self.load[m] -= load * self.scale[m]
        self.count[m] -= 1
        self._movable[m] = None
        self.put(p, to, load)

    def copy(self, name: str) -> State:
        s = State.__new__(State)
        s.name = name
        s.scale = self.scale
        s.member_of = self.member_of.copy()
        s.load = self.load.copy()
        s.count = self.count.copy()
        s.held = [set(x) for x in self.held]
        # read-only arrays: shared until either side changes a member
        s._movable = list(self._movable)
        return s

    def movable(self, m: int, pinned: np.ndarray) -> np.ndarray:
        """The partitions member ``m`` holds that are not pinned to it, in index order (read-only;
        ``pinned`` is always the problem's)."""
        parts = self._movable[m]
        if parts is None:
            parts = np.fromiter((p for p in self.held[m] if not pinned[p]), dtype=np.int64)
            parts.sort()
            parts.flags.writeable = False
            self._movable[m] = parts
        return parts

    def forget_movable(self) -> None:
        """Drop every kept :meth:`movable` answer (after writing ``held`` directly)."""
        self._movable = [None] * len(self._movable)

    def max_load(self) -> float:
        return float(self.load.max())


# -- judging a state -------------------------------------------------------------------------------


def pinned_moved(problem: Problem, st: State) -> bool:
    """Whether a stuck partition left its owner."""
    return bool((st.member_of[problem.pinned] != problem.owner[problem.pinned]).any())


def count_ok(problem: Problem, st: State) -> bool:
    """Whether counts keep the ``max_count_skew`` bound within every class (always, without one)."""
    k = problem.opts.max_count_skew
    if k is None:
        return True
    for ms in problem.class_members:
        c = st.count[ms]
        if int(c.max() - c.min()) > 1 + k:
            return False
    return True


def count_excess(problem: Problem, st: State) -> int:
    """Over every class, how far counts spread beyond one (0 = as even as Kafka's assignors)."""
    excess = 0
    for ms in problem.class_members:
        c = st.count[ms]
        excess += max(0, int(c.max() - c.min()) - 1)
    return excess


def load_moved(problem: Problem, st: State) -> float:
    """Load of the partitions that leave their current owner."""
    return float(problem.part_load[problem.moved(np.arange(problem.n_parts), st.member_of)].sum())


def final_key(problem: Problem, st: State) -> tuple[float, float, int, float]:
    """What finalists are ranked by: cost, then max load, count skew and load moved."""
    return (round(problem.total_cost(st.member_of), 9), st.max_load(), count_excess(problem, st),
            load_moved(problem, st))

"""Lag in seconds for the policy: each member's time to catch up, and a recommendation's
before/after figures.

The figures are those of :mod:`streaming.lag.rules`, read off the group's lag history:

- per member (:func:`members`): its lag (stuck partitions left out: they never catch up wherever
  they go, and are reported apart) over its capacity: the state's estimate
  (:mod:`streaming.lag.capacity`, the one the assignor is given), else, while the estimates are
  unknown, :func:`streaming.lag.rules.member_capacity` (its consume rate when it is behind, else the
  rate members that are behind reach). The skew reading uses these when ``policy.skew_on =
  "seconds"`` (:mod:`streaming.policy.lag_skew`);
- ``before`` / ``after`` (:func:`figures`): the largest member time to catch up under the current
  and under the recommended assignment, each member's lag divided by the same capacity in both, so
  the two differ by the assignment alone. ``inf`` when a member with lag has no rate (nothing
  consumed), ``nan`` when no rate is known yet (one observation);
- ``age``: the oldest unconsumed record of the group's assigned partitions, stuck ones included (the
  same whatever the assignment; ``nan`` when unknown).

One :class:`LagPass` per observation reads each topic's history once (lag, stuck rows, rates, ages,
each on first use), shared by the skew reading and the figures.

Example (a 20 s window): C0 owns two partitions with 9,000 and 8,000 records of lag and consumes 100
records/s in all; C1 owns two with 100 each and consumes 40/s, so it keeps up (200 < 40 x 20). C0 is
behind, so both members are taken at 100/s: before, max(17,000, 200) / 100 = 170 s; after a split
9,100 / 8,100, 91 s.

``after`` can equal or exceed ``before`` while the max member lag in records drops: the
records count stuck partitions and the seconds do not. A member holding one lagging
partition and one stuck one gives the lagging one to a member that keeps up: in records
its max drops by the stuck lag; in seconds the lagging partition takes as long as
before (at the same reference rate) plus the new owner's own lag (docs/operating.md's
metrics example, ``tests/unit/streaming/policy/test_skew_on_seconds.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np

from streaming.lag import capacity, owners
from streaming.lag import rules as lag_time
from streaming.state.group_state import GroupState

ByTopic = Mapping[str, tuple[np.ndarray, np.ndarray]]
"""An assignment as topic -> (partitions, member indexes), int64 arrays (as
:attr:`streaming.lag.owners.Owners.by_topic`)."""


class MemberSeconds(NamedTuple):
    """Per member (the ``ids`` of :func:`figures`, by index): its time to catch up under the current
    and the recommended assignment, and the rate both divide its lag by."""

    before: np.ndarray
    after: np.ndarray
    capacity: np.ndarray


class LagSeconds(NamedTuple):
    before: float
    after: float
    age: float
    members: MemberSeconds | None = None
    """What ``before`` and ``after`` are the max of."""


class MemberLag(NamedTuple):
    """Per member (by index): lag in records (stuck partitions left out) and the rate it
    is divided by."""

    lag: np.ndarray
    capacity: np.ndarray

    def seconds(self) -> np.ndarray:
        return lag_time.catch_up(self.lag, self.capacity)


_UNREAD = object()


class LagPass:
    """One observation's read of the group's lag history, each topic's arrays computed
    on first use."""

    def __init__(self, state: GroupState, stuck_after: int, headroom: float) -> None:
        self.hist = state.lag
        self._state = state
        self.stuck_after = stuck_after
        self.headroom = headroom
        self._lag: dict[str, np.ndarray] = {}
        self._rate: dict[str, np.ndarray] = {}
        self._age: dict[str, np.ndarray] = {}
        self._window: float | None = None
        self._capacity: dict[str, float] | object | None = _UNREAD

    def lag(self, topic: str) -> np.ndarray:
        """float64 per row: the latest lag, 0 on stuck rows."""
        if topic not in self._lag:
            hist = self.hist[topic]
            lag = hist.latest_lag().astype(np.float64)
            stuck = hist.stuck(self.stuck_after)
            self._lag[topic] = np.where(stuck, 0.0, lag) if stuck.any() else lag
        return self._lag[topic]

    def rate(self, topic: str) -> np.ndarray:
        if topic not in self._rate:
            self._rate[topic] = self.hist[topic].consume_rate()
        return self._rate[topic]

    def age(self, topic: str) -> np.ndarray:
        if topic not in self._age:
            self._age[topic] = self.hist[topic].lag_age().seconds
        return self._age[topic]

    @property
    def capacity(self) -> dict[str, float] | None:
        """member id -> the state's capacity estimate; None while unknown (read once:
        functools.cached_property takes a lock on every read, and each observation asks)."""
        if self._capacity is _UNREAD:
            state = self._state
            self._capacity = capacity.records_per_s(state.known_capacity(), state.lag, state.owners,
                                                    self.stuck_after, self.headroom)
        return self._capacity  # type: ignore[return-value]

    @property
    def window(self) -> float:
        if self._window is None:
            self._window = max((h.window_s() for h in self.hist.values()), default=0.0)
        return self._window


def member_lag(lp: LagPass, by_topic: ByTopic, count: int) -> np.ndarray:
    """Per member: its partitions' lag (records, float), stuck partitions left out (the sums the
    capacity estimate made of this observation, when it did)."""
    out = np.zeros(count)
    for topic, (parts, who) in by_topic.items():
        if topic in lp.hist:
            out += owners.sums(lp.hist[topic], parts, who, count, lp.stuck_after).lag
    return out


def members(lp: LagPass, by_topic: ByTopic, ids: Sequence[str]) -> MemberLag:
    """Per member (``ids``, by index) under ``by_topic`` (the current assignment):
    lag and capacity."""
    count = len(ids)
    lag = np.zeros(count)
    rate = np.zeros(count)
    known = np.zeros(count, dtype=bool)
    for topic, (parts, who) in by_topic.items():
        if topic not in lp.hist:
            continue
        rows, found = lp.hist[topic].lookup(parts)
        who, rows = who[found], rows[found]
        lag += np.bincount(who, weights=lp.lag(topic)[rows], minlength=count)
        r = lp.rate(topic)[rows]
        ok = ~np.isnan(r)
        rate += np.bincount(who[ok], weights=r[ok], minlength=count)
        known |= np.bincount(who[ok], minlength=count) > 0
    if lp.capacity is not None:
        return MemberLag(lag, np.array([lp.capacity[m] for m in ids], dtype=np.float64))
    return MemberLag(lag, lag_time.member_capacity(lag, np.where(known, rate, np.nan), lp.window))


def _max(values: np.ndarray) -> float:
    """The max; inf if any is inf, else nan if any is unknown (the max could be that one), 0
    for no value."""
    if not len(values):
        return 0.0
    if np.isinf(values).any():
        return float("inf")
    return float(values.max())  # nan when any is nan


def figures(state: GroupState, ids: Sequence[str], current: Mapping[str, Sequence[tuple[str, int]]],
            proposed: Mapping[str, Sequence[tuple[str, int]]], stuck_after: int,
            headroom: float, lp: LagPass | None = None) -> LagSeconds:
    """``ids``: the member ids; ``current`` / ``proposed``: member id -> its (topic, partition)
    list; ``headroom``: ``policy.capacity_headroom``; ``lp``: this observation's pass when the
    caller has one."""
    lp = lp or LagPass(state, stuck_after, headroom)
    index = {m: i for i, m in enumerate(ids)}
    now_by, after_by = by_topic(current, index), by_topic(proposed, index)
    now = members(lp, now_by, ids)
    after = member_lag(lp, after_by, len(ids))
    ages = []
    for t, (parts, _) in now_by.items():
        if t in lp.hist:
            rows, found = lp.hist[t].lookup(parts)
            ages.append(lp.age(t)[rows[found]])
    each = MemberSeconds(now.seconds(), lag_time.catch_up(after, now.capacity), now.capacity)
    return LagSeconds(_max(each.before), _max(each.after),
                      _max(np.concatenate(ages)) if ages else float("nan"), each)


def by_topic(assignment: Mapping[str, Sequence[tuple[str, int]]], index: Mapping[str, int]
             ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """topic -> (partitions, member indexes) of ``assignment`` (members not in
    ``index`` left out)."""
    out: dict[str, tuple[list[int], list[int]]] = {}
    for member, tps in assignment.items():
        i = index.get(member)
        if i is None:
            continue
        for t, p in tps:
            parts, who = out.setdefault(t, ([], []))
            parts.append(int(p))
            who.append(i)
    return {t: (np.asarray(p, dtype=np.int64), np.asarray(w, dtype=np.int64))
            for t, (p, w) in out.items()}

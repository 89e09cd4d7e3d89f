"""A recommendation's lag in seconds: the max member time to catch up before and after, and the lag's age.

The figures are those of :mod:`streaming.lag_time`, read off the group's lag history:

- ``before`` / ``after``: the largest member time to catch up under the current and under the recommended
  assignment. Each member's lag (stuck partitions left out: they never catch up wherever they go, and are
  reported apart) is divided by the same per-member rate in both (:func:`streaming.lag_time.member_capacity`:
  its measured consume rate when it is behind, else the rate members that are behind reach), so the two
  differ by the assignment alone. ``inf`` when a member with lag has no rate (nothing consumed), ``nan`` when
  no rate is known yet (one observation);
- ``age``: the oldest unconsumed record of the group's assigned partitions, stuck ones included (the same
  whatever the assignment; ``nan`` when unknown).

Example (a 20 s window): C0 owns two partitions with 9,000 and 8,000 records of lag and consumes 100
records/s in all; C1 owns two with 100 each and consumes 40/s, so it keeps up (200 < 40 x 20). C0 is behind,
so both members are taken at 100/s: before, max(17,000, 200) / 100 = 170 s; after a split 9,100 / 8,100,
91 s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np

from streaming import lag_time
from streaming.state.group_state import GroupState


class LagSeconds(NamedTuple):
    before: float
    after: float
    age: float


def _max(values: np.ndarray) -> float:
    """The max; inf if any is inf, else nan if any is unknown (the max could be that one), 0 for no value."""
    if not len(values):
        return 0.0
    if np.isinf(values).any():
        return float("inf")
    return float(values.max())  # nan when any is nan


def figures(state: GroupState, members: Sequence[str], current: Mapping[str, Sequence[tuple[str, int]]],
            proposed: Mapping[str, Sequence[tuple[str, int]]], stuck_after: int) -> LagSeconds:
    """``members``: the member ids; ``current`` / ``proposed``: member id -> its (topic, partition) list."""
    index = {m: i for i, m in enumerate(members)}
    count = len(members)
    lag_now = np.zeros(count)
    lag_after = np.zeros(count)
    rate = np.zeros(count)
    rate_known = np.zeros(count, dtype=bool)
    ages: list[np.ndarray] = []
    window = max((h.window_s() for h in state.lag.values()), default=0.0)
    by_topic = (_by_topic(current, index), _by_topic(proposed, index))
    for topic, hist in state.lag.items():
        lag = hist.latest_lag().astype(np.float64)
        lag = np.where(hist.stuck(stuck_after), 0.0, lag)
        r = hist.consume_rate()
        age = hist.lag_age().seconds
        for owned, into, now in ((by_topic[0], lag_now, True), (by_topic[1], lag_after, False)):
            who, parts = (np.asarray(a, dtype=np.int64) for a in owned.get(topic, ([], [])))
            rows, found = hist.lookup(parts)
            who, rows = who[found], rows[found]
            into += np.bincount(who, weights=lag[rows], minlength=count)
            if now:
                known = ~np.isnan(r[rows])
                rate += np.bincount(who[known], weights=r[rows][known], minlength=count)
                rate_known |= np.bincount(who[known], minlength=count) > 0
                ages.append(age[rows])
    capacity = lag_time.member_capacity(lag_now, np.where(rate_known, rate, np.nan), window)
    return LagSeconds(_max(lag_time.catch_up(lag_now, capacity)), _max(lag_time.catch_up(lag_after, capacity)),
                      _max(np.concatenate(ages)) if ages else float("nan"))


def _by_topic(assignment: Mapping[str, Sequence[tuple[str, int]]], index: Mapping[str, int]
              ) -> dict[str, tuple[list[int], list[int]]]:
    """topic -> (member indexes, partitions) of ``assignment`` (members not in ``index`` left out)."""
    out: dict[str, tuple[list[int], list[int]]] = {}
    for member, tps in assignment.items():
        i = index.get(member)
        if i is None:
            continue
        for t, p in tps:
            who, parts = out.setdefault(t, ([], []))
            who.append(i)
            parts.append(int(p))
    return out

"""The collector's own window of its last polls, per group, for live lag in seconds and stuck partitions.

The job's state keeps this history, but the job writes figures only with a recommendation; the collector
sees every poll, so ``/metrics`` keeps the last ``depth`` observations (``policy.lag_history``) of each
partition it exports and reads them with the job's definitions (:mod:`streaming.lag_time`): the age of the
oldest unconsumed record, the consume rate, and stuck after ``policy.stuck_observations`` observations. One
poll is one observation at the snapshot's time. Memory: three int64 per partition and observation, for the
groups of the latest poll only (a group that is not in a poll is forgotten).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from streaming import lag_time

TP = tuple[str, int]


@dataclass(frozen=True)
class Live:
    """Per partition of one group's latest poll: lag seconds (age, nan unknown), consume rate (nan unknown)
    and whether it is stuck."""

    age: Mapping[TP, float]
    rate: Mapping[TP, float]
    stuck: frozenset[TP]


class _Group:
    __slots__ = ("committed", "end", "index", "n", "ts")

    def __init__(self, depth: int) -> None:
        self.index: dict[TP, int] = {}
        self.ts, self.committed, self.end = (np.zeros((0, depth), dtype=np.int64) for _ in range(3))
        self.n = np.zeros(0, dtype=np.int64)


class Windows:
    def __init__(self, depth: int, stuck_after: int) -> None:
        self.depth = max(1, depth)
        self.stuck_after = stuck_after
        self._groups: dict[str, _Group] = {}

    def observe(self, ts: int, group: str, offsets: Iterable[tuple[TP, int, int]]) -> Live:
        """One poll of ``group``: (partition, committed, end) for each partition with a committed offset."""
        g = self._groups.setdefault(group, _Group(self.depth))
        seen = sorted({tp: (c, e) for tp, c, e in offsets}.items())
        tps = [tp for tp, _ in seen]
        rows = len(tps)
        ts_, committed, end = (np.zeros((rows, self.depth), dtype=np.int64) for _ in range(3))
        n = np.zeros(rows, dtype=np.int64)
        old = np.array([g.index.get(tp, -1) for tp in tps], dtype=np.int64)
        kept = old >= 0
        if kept.any():
            for new, prev in ((ts_, g.ts), (committed, g.committed), (end, g.end)):
                new[kept] = prev[old[kept]]
            n[kept] = g.n[old[kept]]
        # a poll not newer than a partition's last observation (a clock step back) replaces it
        last = np.maximum(n - 1, 0)
        stale = (n > 0) & (ts_[np.arange(rows), last] >= ts)
        n[stale] -= 1
        full = n == self.depth
        for arr in (ts_, committed, end):
            arr[full, :-1] = arr[full, 1:]
        n[full] -= 1
        at = np.arange(rows)
        ts_[at, n] = ts
        committed[at, n] = [c for _, (c, _) in seen]
        end[at, n] = [e for _, (_, e) in seen]
        n += 1
        g.index = {tp: i for i, tp in enumerate(tps)}
        g.ts, g.committed, g.end, g.n = ts_, committed, end, n
        age = lag_time.oldest_age(ts_, committed, end, n).seconds
        rate = lag_time.rate(ts_, committed, end, n)
        stuck = lag_time.stuck_mask(committed, end, n, self.stuck_after)
        return Live(dict(zip(tps, age.tolist(), strict=True)), dict(zip(tps, rate.tolist(), strict=True)),
                    frozenset(tp for tp, s in zip(tps, stuck.tolist(), strict=True) if s))

    def retain(self, groups: Iterable[str]) -> None:
        """Forget every group but ``groups``."""
        keep = set(groups)
        for g in list(self._groups):
            if g not in keep:
                del self._groups[g]

"""The collector's own window of its last polls, per group, for live lag in seconds and stuck partitions.

The job's state keeps this history, but the job writes figures only with a recommendation; the collector
sees every poll, so ``/metrics`` keeps the last ``depth`` observations (``policy.lag_history``) of each
partition it exports, in the job's own ring buffer (:class:`~streaming.lag.history.LagHistory`, one per group
and topic), and reads them with the job's rules (:mod:`streaming.lag.rules`): the age of the oldest unconsumed
record, the consume rate, and stuck after ``policy.stuck_observations`` observations. One poll is one
observation at the snapshot's time; as in the job, a poll at the time of the last one kept counts as that
observation again and an earlier one (a clock step back) is not kept. Memory: three int64 per partition and
observation, for the partitions of each group's latest poll only (a group not in a poll is forgotten).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from streaming.lag.history import LagHistory

TP = tuple[str, int]


@dataclass(frozen=True)
class Live:
    """Per partition of one group's latest poll: lag seconds (age, nan unknown), consume rate (nan unknown)
    and whether it is stuck."""

    age: Mapping[TP, float]
    rate: Mapping[TP, float]
    stuck: frozenset[TP]


class Windows:
    def __init__(self, depth: int, stuck_after: int) -> None:
        self.depth = max(1, depth)
        self.stuck_after = stuck_after
        self._groups: dict[str, dict[str, LagHistory]] = {}

    def observe(self, ts: int, group: str, offsets: Iterable[tuple[TP, int, int]]) -> Live:
        """One poll of ``group``: (partition, committed, end) for each partition with a committed offset."""
        by_topic: dict[str, dict[int, tuple[int, int]]] = {}
        for (topic, partition), committed, end in offsets:
            by_topic.setdefault(topic, {})[partition] = (committed, end)
        held = self._groups.setdefault(group, {})
        for topic in set(held) - set(by_topic):
            del held[topic]
        age: dict[TP, float] = {}
        rate: dict[TP, float] = {}
        stuck: set[TP] = set()
        for topic, seen in sorted(by_topic.items()):
            history = held.setdefault(topic, LagHistory(self.depth))
            partitions = np.array(sorted(seen), dtype=np.int64)
            offsets_ = np.array([seen[p] for p in partitions.tolist()], dtype=np.int64).reshape(-1, 2)
            history.retain(partitions)
            history.observe(ts, partitions, offsets_[:, 0], offsets_[:, 1])
            tps = [(topic, p) for p in history.ids.tolist()]
            age |= zip(tps, history.lag_age().seconds.tolist(), strict=True)
            rate |= zip(tps, history.consume_rate().tolist(), strict=True)
            stuck |= {tp for tp, s in zip(tps, history.stuck(self.stuck_after).tolist(), strict=True) if s}
        return Live(age, rate, frozenset(stuck))

    def retain(self, groups: Iterable[str]) -> None:
        """Forget every group but ``groups``."""
        keep = set(groups)
        for g in list(self._groups):
            if g not in keep:
                del self._groups[g]

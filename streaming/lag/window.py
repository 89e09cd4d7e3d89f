"""The collector's own window of its last polls, per group, for live lag in
seconds and stuck partitions.

The job's state keeps this history, but the job writes figures only with a recommendation; the
collector sees every poll, so ``/metrics`` keeps the last ``depth`` observations
(``policy.lag_history``) of each partition it exports, in the job's own ring buffer
(:class:`~streaming.lag.history.LagHistory`, one per group and topic), and reads them with the job's
rules (:mod:`streaming.lag.rules`): the age of the oldest unconsumed record, the consume rate, stuck
after ``policy.stuck_observations`` observations, and the seconds until its committed offset falls
below the log start (:mod:`streaming.lag.loss_risk`); per member, its capacity by the job's estimate
(:mod:`streaming.lag.capacity`, its memory kept here per group). Per topic it keeps one more window
of the end offsets of every partition, for produce rates (hot partitions, :mod:`streaming.lag.hot`).
One poll is one observation at the snapshot's time; as in the job, a poll at the time of the last
one kept counts as that observation again and an earlier one (a clock step back) is not kept.
Memory: four int64 per partition and observation, for the partitions of each group's latest poll
only (a group or topic not in a poll is forgotten).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from assignors.model import Member
from streaming.lag import capacity
from streaming.lag.history import LagHistory
from streaming.lag.owners import Owners

TP = tuple[str, int]


@dataclass(frozen=True)
class Live:
    """Per partition of one group's latest poll: lag seconds (age, nan unknown), consume rate (nan
    unknown), whether it is stuck, and seconds until its committed offset falls below the log start
    (0 lost, inf never at these rates, nan unknown)."""

    age: Mapping[TP, float]
    rate: Mapping[TP, float]
    stuck: frozenset[TP]
    loss_s: Mapping[TP, float] = field(default_factory=dict)


class Windows:
    def __init__(self, depth: int, stuck_after: int) -> None:
        self.depth = max(1, depth)
        self.stuck_after = stuck_after
        self._groups: dict[str, dict[str, LagHistory]] = {}
        self._topics: dict[str, LagHistory] = {}
        self._capacity: dict[str, capacity.Held] = {}

    def observe(self, ts: int, group: str, offsets: Iterable[tuple[TP, int, int, int]]) -> Live:
        """One poll of ``group``: (partition, committed, end, log start or -1) for each partition
        with a committed offset."""
        by_topic: dict[str, dict[int, tuple[int, int, int]]] = {}
        for (topic, partition), committed, end, start in offsets:
            by_topic.setdefault(topic, {})[partition] = (committed, end, start)
        held = self._groups.setdefault(group, {})
        for topic in set(held) - set(by_topic):
            del held[topic]
        age: dict[TP, float] = {}
        rate: dict[TP, float] = {}
        stuck: set[TP] = set()
        loss: dict[TP, float] = {}
        for topic, seen in sorted(by_topic.items()):
            history = held.setdefault(topic, LagHistory(self.depth))
            partitions = np.array(sorted(seen), dtype=np.int64)
            offsets_ = np.array([seen[p] for p in partitions.tolist()],
                                dtype=np.int64).reshape(-1, 3)
            history.retain(partitions)
            history.observe(ts, partitions, offsets_[:, 0], offsets_[:, 1], offsets_[:, 2])
            tps = [(topic, p) for p in history.ids.tolist()]
            age |= zip(tps, history.lag_age().seconds.tolist(), strict=True)
            rate |= zip(tps, history.consume_rate().tolist(), strict=True)
            stuck_now = history.stuck(self.stuck_after).tolist()
            stuck |= {tp for tp, s in zip(tps, stuck_now, strict=True) if s}
            loss |= zip(tps, history.retention().seconds.tolist(), strict=True)
        return Live(age, rate, frozenset(stuck), loss)

    def capacities(self, ts: int, group: str, members: Sequence[Member], headroom: float
                   ) -> dict[str, float] | None:
        """member id -> its capacity (records/s) by :mod:`streaming.lag.capacity`, the job's rule,
        over this group's window and its members' assignment at ``ts`` (call after :meth:`observe`);
        None while unknown."""
        owners = Owners.of(members)
        held, lag = self._capacity.setdefault(group, {}), self._groups.get(group, {})
        capacity.observe(held, lag, owners, ts, self.stuck_after)
        return capacity.records_per_s(held, lag, lambda: owners, self.stuck_after, headroom)

    def observe_topics(self, ts: int, end: Mapping[TP, int]) -> None:
        """One poll's end offsets of every partition read, for :meth:`produce_rates` (topics not in
        it are forgotten)."""
        by_topic: dict[str, dict[int, int]] = {}
        for (topic, partition), offset in end.items():
            by_topic.setdefault(topic, {})[partition] = offset
        for topic in set(self._topics) - set(by_topic):
            del self._topics[topic]
        for topic, seen in by_topic.items():
            history = self._topics.setdefault(topic, LagHistory(self.depth))
            partitions = np.array(sorted(seen), dtype=np.int64)
            ends = np.array([seen[p] for p in partitions.tolist()], dtype=np.int64)
            history.retain(partitions)
            history.observe(ts, partitions, ends, ends)

    def produce_rates(self, topic: str) -> dict[int, float]:
        """partition -> records/s produced over the topic's window (nan: one observation); {} for a
        topic not observed."""
        history = self._topics.get(topic)
        if history is None:
            return {}
        return dict(zip(history.ids.tolist(), history.produce_rate().tolist(), strict=True))

    def retain(self, groups: Iterable[str]) -> None:
        """Forget every group but ``groups``."""
        keep = set(groups)
        for g in list(self._groups):
            if g not in keep:
                del self._groups[g]
        for g in list(self._capacity):
            if g not in keep:
                del self._capacity[g]

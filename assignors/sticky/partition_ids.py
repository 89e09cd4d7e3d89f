"""Partitions as integers, so the per-partition bookkeeping of a million partitions runs in numpy.

Partition ``p`` of the ``k``-th topic in ``String.compareTo`` order has the id ``base[k] + p``; ids
in increasing order are therefore partitions sorted by topic name, then number, the order in which
the constrained builder hands out free partitions. Python tuples are made only for the partitions a
result lists, as the builder reads them: :class:`FreeRuns` holds them as runs of one topic's
partition numbers (a fresh assignment of a million partitions needs no list of them all) and hands
out any stretch of them as an iterator that makes them, and their partition numbers are shared int
objects (:func:`numbers`): above 256 CPython would otherwise allocate an int beside every tuple of a
fresh assignment.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from itertools import chain, repeat
from operator import itemgetter
from typing import Any

import numpy as np

from assignors.model import TopicPartition

TP = TopicPartition
_topic = itemgetter(0)
_partition = itemgetter(1)
_NUMBERS: list[int] = []
_NUMBERS_CAP = 1 << 16  # partition numbers worth keeping (a topic rarely has more)


def numbers(count: int) -> Sequence[int]:
    """``0 .. count - 1``: the same int objects on every call (up to ``_NUMBERS_CAP``)."""
    global _NUMBERS
    known = _NUMBERS
    if count > len(known):
        if count > _NUMBERS_CAP:
            return range(count)
        # a new list, rebound at once: a thread reading the old one still sees 0, 1, 2, ...
        known = _NUMBERS = [*known, *range(len(known), count)]
    return known if count == len(known) else known[:count]  # read only: no copy needed


class PartitionIds:
    """The id of every partition of the subscribed topics, and back."""

    def __init__(self, partitions_per_topic: Mapping[str, int],
                 topic_rank: Mapping[str, int]) -> None:
        self.topics: list[str] = sorted(partitions_per_topic, key=topic_rank.__getitem__)
        self.index: dict[str, int] = {t: k for k, t in enumerate(self.topics)}
        counts = [partitions_per_topic[t] for t in self.topics]
        # the extra 0: "no such topic" (index -1)
        self.counts = np.array([*counts, 0], dtype=np.int64)
        self.base = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=self.base[1:])
        self.total = int(self.base[-1])
        self.base[-1] = 0

    def ids(self, tps: Sequence[TP]) -> tuple[np.ndarray, np.ndarray]:
        """The ids of ``tps`` and which of them exist (topic subscribed, 0 <= partition < count).

        Raises ``TypeError``/``OverflowError`` for a partition number that is no machine integer."""
        n = len(tps)
        topic = np.fromiter(map(self.index.get, map(_topic, tps), repeat(-1)), np.int64, n)
        number = np.fromiter(map(_partition, tps), np.int64, n)
        exists = (number >= 0) & (number < self.counts[topic])
        return self.base[topic] + number, exists

    def all_partitions(self) -> FreeRuns:
        """Every partition, by topic, then number (``partitions`` of every id)."""
        counts = self.counts.tolist()
        return FreeRuns([(topic, numbers(counts[k])) for k, topic in enumerate(self.topics)])

    def partitions(self, ids: np.ndarray) -> FreeRuns:
        """The partitions of ``ids`` (increasing), by topic, then number."""
        return FreeRuns(list(self._topic_runs(ids)))

    def _topic_runs(self, ids: np.ndarray) -> Iterator[tuple[str, Sequence[int]]]:
        """The partitions of ``ids`` (increasing): each topic and its partition numbers among
        them."""
        if not len(ids):
            return
        bounds = np.searchsorted(ids, self.base[1:len(self.topics)], side="left").tolist()
        start = 0
        for k, end in enumerate([*bounds, len(ids)]):
            if end == start:
                continue
            topic, count = self.topics[k], int(self.counts[k])
            if end - start == count:
                yield topic, numbers(count)
            else:
                yield topic, (ids[start:end] - self.base[k]).tolist()
            start = end


class FreeRuns:
    """Partitions in order, held as runs: ``(topic, partition numbers)``, or ``(None, tuples)`` for
    partitions already made. :meth:`take` hands out the next ones as an iterator that makes each
    tuple as it is read, so that a caller can make them in the order it places them (e.g. member by
    member) without any list of them all."""

    def __init__(self, runs: list[tuple[str | None, Sequence[Any]]]) -> None:
        self._runs = runs
        self._run = 0  # the run the next partition is in
        self._at = 0  # its position in that run
        self._left = sum(len(items) for _, items in runs)

    def __len__(self) -> int:
        """How many partitions are left."""
        return self._left

    def __iter__(self) -> Iterator[TP]:
        """The partitions left, all of them handed out."""
        return self.take(self._left)

    def take(self, count: int) -> Iterator[TP]:
        """The next ``count`` partitions (``count <= len(self)``), handed out."""
        pieces: list[Iterator[TP]] = []
        self._left -= count
        while count:
            topic, items = self._runs[self._run]
            end = min(len(items), self._at + count)
            part = items if self._at == 0 and end == len(items) else items[self._at:end]
            pieces.append(iter(part) if topic is None else zip(repeat(topic), part))
            count -= end - self._at
            self._run, self._at = (self._run + 1, 0) if end == len(items) else (self._run, end)
        if len(pieces) == 1:
            return pieces[0]
        return chain.from_iterable(pieces)

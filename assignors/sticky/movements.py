"""Kafka's PartitionMovements: the moves the general builder has made, to keep them from cycling.

Each partition that moved is recorded with its (first source, current destination); per topic the
partitions are grouped by that pair in a Java ``HashSet``. When the builder wants to move a
partition of topic ``t`` from ``a`` to ``b`` while some partition of ``t`` already went from ``b``
to ``a``, Kafka moves that one back instead (the first in the set's iteration order), so no
partition keeps bouncing: :meth:`PartitionMovements.actual_partition` picks it.
"""

from __future__ import annotations

from assignors._java import JavaHashSet, string_hash, topic_partition_hash
from assignors.model import TopicPartition

TP = TopicPartition


class PartitionMovements:
    """Partition moves recorded per topic and (source, destination)."""

    __slots__ = ("by_topic", "moves")

    def __init__(self) -> None:
        self.by_topic: dict[str, dict[tuple[str, str], JavaHashSet]] = {}
        self.moves: dict[TP, tuple[str, str]] = {}

    def _remove(self, tp: TP) -> tuple[str, str]:
        pair = self.moves.pop(tp)
        per_topic = self.by_topic[tp[0]]
        s = per_topic[pair]
        s.discard(tp)
        if not len(s):
            del per_topic[pair]
        if not per_topic:
            del self.by_topic[tp[0]]
        return pair

    def _add(self, tp: TP, pair: tuple[str, str]) -> None:
        self.moves[tp] = pair
        per_topic = self.by_topic.setdefault(tp[0], {})
        s = per_topic.get(pair)
        if s is None:
            s = per_topic[pair] = JavaHashSet(_tp_hash)
        s.add(tp)

    def move(self, tp: TP, old: str, new: str) -> None:
        """Record that ``tp`` went from ``old`` to ``new`` (a move back to its first source
        cancels)."""
        if tp in self.moves:
            src, _dst = self._remove(tp)
            if src != new:
                self._add(tp, (src, new))
        else:
            self._add(tp, (old, new))

    def actual_partition(self, tp: TP, old: str, new: str) -> TP:
        """The partition to move when the builder asks to move ``tp`` from ``old`` to ``new``."""
        per_topic = self.by_topic.get(tp[0])
        if per_topic is None:
            return tp
        rec = self.moves.get(tp)
        if rec is not None:
            old = rec[0]
        s = per_topic.get((new, old))
        if s is None:
            return tp
        return s.first()


_TOPIC_HASH: dict[str, int] = {}


def _tp_hash(tp: TP) -> int:
    """``TopicPartition.hashCode()`` with the topic's ``String.hashCode()`` cached."""
    h = _TOPIC_HASH.get(tp[0])
    if h is None:
        if len(_TOPIC_HASH) > 100_000:
            _TOPIC_HASH.clear()
        h = _TOPIC_HASH[tp[0]] = string_hash(tp[0])
    x = (31 * (31 + tp[1]) + h) & 0xFFFFFFFF
    return x - 0x100000000 if x & 0x80000000 else x


assert _tp_hash(("t", 3)) == topic_partition_hash("t", 3)

"""Which collector polls which group: the shard rule, and the shard sets that follow from it.

Collectors share the groups by shard: a group belongs to shard ``shard_of(group_id, N)``, and each
shard is polled by one collector. Who holds which shards is decided either by the user
(``--shard i/N``, :class:`StaticShards`) or by Kafka's own group protocol (``--shards N``: the
collectors join one consumer group on a coordination topic of N partitions and the partitions each
is assigned ARE its shards; :class:`ShardSet` is what the rebalance listener keeps,
:mod:`streaming.collector.coordination` the consumer around it). Nothing here talks to Kafka: the
rule and the bookkeeping are pure.

**The hash is Kafka's murmur2**, as ``org.apache.kafka.common.utils.Utils.murmur2`` computes it on
the UTF-8 bytes of the group id, made positive the way Kafka's default partitioner does
(``& 0x7fffffff``), modulo N. Why murmur2 rather than CRC-32 or another stable hash: it is exactly
the partition Kafka's default partitioner gives a record keyed by the group id on an N-partition
topic, so a group's shard is the coordination-topic partition of the same number, and anyone can
work it out with Kafka's own tools and libraries (Java, kafka-python, librdkafka's ``murmur2``
partitioner) without this project's code. It is stable across processes, machines and Python
versions, which Python's ``hash()`` (salted per process for strings) is not: two collectors must
agree on every group's shard.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from streaming.collector.errors import ShardSpecError


def murmur2(data: bytes) -> int:
    """Kafka's 32-bit murmur2 (``Utils.murmur2``, seed 0x9747b28c), as an unsigned int."""
    m, r = 0x5BD1E995, 24
    length = len(data)
    h = (0x9747B28C ^ length) & 0xFFFFFFFF
    for i in range(0, length - length % 4, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = ((h * m) & 0xFFFFFFFF) ^ k
    tail = data[length - length % 4:]
    if tail:
        for j in range(len(tail) - 1, -1, -1):
            h ^= tail[j] << (8 * j)
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h


def shard_of(group_id: str, count: int) -> int:
    """The shard of ``group_id`` among ``count``: the partition Kafka's default partitioner would
    give a record keyed by the group id on a topic of ``count`` partitions."""
    if count < 1:
        raise ShardSpecError(f"the number of shards must be >= 1, got {count}")
    return (murmur2(group_id.encode("utf-8")) & 0x7FFFFFFF) % count


@dataclass(frozen=True)
class StaticShards:
    """``--shard i/N``: this collector polls the groups of shard ``index`` alone, for as long as it
    runs. Nothing checks that another collector holds every other shard, or that no other holds this
    one: that is the user's arrangement (dynamic sharding is the one that watches over itself)."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if self.count < 1 or not 0 <= self.index < self.count:
            raise ShardSpecError(f"shard {self.index}/{self.count}: expected i/N with 0 <= i < N")

    @classmethod
    def parse(cls, spec: str) -> StaticShards:
        """``"i/N"`` -> StaticShards(i, N)."""
        index, sep, count = spec.partition("/")
        try:
            if not sep:
                raise ValueError(spec)
            return cls(int(index), int(count))
        except ValueError:
            raise ShardSpecError(
                f"--shard {spec!r}: expected i/N with 0 <= i < N, e.g. 0/3") from None

    def owns(self, group_id: str) -> bool:
        return shard_of(group_id, self.count) == self.index

    def owned(self) -> frozenset[int]:
        return frozenset({self.index})

    def sync(self) -> None:
        """Nothing to keep alive."""

    def wait(self, stop: threading.Event, seconds: float) -> None:
        stop.wait(seconds)

    def describe(self) -> str:
        return f"shard {self.index} of {self.count} (static)"

    def close(self) -> None:
        """Nothing to give back."""


class ShardSet:
    """The shards a collector holds under dynamic sharding, as its rebalance listener reports them.

    Eager rebalancing (the assignor the coordination consumer uses) revokes every shard of every
    collector before any is assigned, so between :meth:`revoke` and :meth:`assign` the set is empty:
    the collector polls nothing rather than a shard another may already hold. Thread-safe:
    kafka-python may call the listener from its IO thread while the collector reads :meth:`owns`.
    """

    def __init__(self, count: int) -> None:
        if count < 1:
            raise ShardSpecError(f"the number of shards must be >= 1, got {count}")
        self.count = count
        self._owned: frozenset[int] = frozenset()
        self._lock = threading.Lock()
        self.changes = 0
        """how many times the set changed (revoke or assign): a reader compares it to notice a
        rebalance."""

    def assign(self, shards: Iterable[int]) -> None:
        """The shards of a completed rebalance (all of them: eager assignment hands the whole set).

        A partition at or above ``count`` (the coordination topic grew after this collector started)
        is held but owns no group, so every group still has exactly one owner among the collectors
        that agree on ``count``."""
        new = frozenset(shards)
        with self._lock:
            if new != self._owned:
                self.changes += 1
            self._owned = new

    def revoke(self, shards: Iterable[int]) -> None:
        """Shards given up (before a rebalance, on leaving, or lost on eviction)."""
        gone = frozenset(shards)
        with self._lock:
            if self._owned & gone:
                self.changes += 1
            self._owned = self._owned - gone

    def owned(self) -> frozenset[int]:
        with self._lock:
            return self._owned

    def owns(self, group_id: str) -> bool:
        return shard_of(group_id, self.count) in self.owned()


def describe_shards(owned: Iterable[int], count: int) -> str:
    """``shards 0, 3 of 6`` / ``no shard of 6`` (one line the collector prints when its set
    changes)."""
    shards = sorted(owned)
    if not shards:
        return f"no shard of {count}"
    return f"shard{'s' if len(shards) > 1 else ''} {', '.join(map(str, shards))} of {count}"


class Shards(Protocol):
    """What the collector asks of its shards (:class:`StaticShards`, or
    :class:`~streaming.collector.coordination.DynamicShards`)."""

    def owns(self, group_id: str) -> bool: ...

    def owned(self) -> frozenset[int]: ...

    def sync(self) -> None:
        """Catch up with ownership changes (dynamic: poll the coordination consumer)."""

    def wait(self, stop: threading.Event, seconds: float) -> None:
        """Wait between poll rounds, keeping ownership alive."""

    def describe(self) -> str: ...

    def close(self) -> None: ...

"""Java collection behaviour that Kafka's assignor results depend on.

Kafka's sticky assignors walk ``java.util.HashMap``/``HashSet`` collections in a few places where
the walk order decides the result (which member keeps an extra partition, which of several
equivalent partitions moves). To give the same answer as Kafka we reproduce that order here:

* :func:`string_hash` is ``String.hashCode()``: ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 code
  units, in 32-bit two's complement arithmetic.
* :func:`topic_partition_hash` is ``TopicPartition.hashCode()``: ``31 * (31 + partition) +
  topic.hashCode()``.
* :func:`hashmap_order` is the iteration order of a ``HashMap``/``HashSet`` after inserting keys in
  a given order. A HashMap keeps a power-of-two table (16 by default, doubling whenever the size
  exceeds 3/4 of it); a key lives in bucket ``(h ^ (h >>> 16)) & (capacity - 1)`` and iteration
  walks the buckets in index order and each bucket in insertion order (a resize splits each bucket
  in two and keeps the relative order). Buckets that Java turns into red-black trees (9+ colliding
  keys in a table of at least 64) are not modelled; with ordinary member ids that does not happen.
* :class:`JavaHashSet` answers ``set.iterator().next()`` for a set that is added to and removed
  from.
* :func:`java_sorted` sorts strings as ``String.compareTo`` does (UTF-16 code units), which differs
  from Python's code point order only for characters outside the Basic Multilingual Plane.

Example: ``hashmap_order(["consumer1", "consumer2", "consumer3"])`` is
``["consumer3", "consumer2", "consumer1"]``, the order Kafka's tests see.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from functools import lru_cache
from typing import Generic, TypeVar

_MASK = 0xFFFFFFFF
H = TypeVar("H", bound=Hashable)


def _to_int32(x: int) -> int:
    x &= _MASK
    return x - 0x100000000 if x & 0x80000000 else x


def _utf16_units(s: str) -> list[int]:
    if s.isascii() or all(ord(c) < 0x10000 for c in s):
        return [ord(c) for c in s]
    data = s.encode("utf-16-be", "surrogatepass")
    return [(data[i] << 8) | data[i + 1] for i in range(0, len(data), 2)]


@lru_cache(maxsize=1 << 16)
def string_hash(s: str) -> int:
    """``java.lang.String.hashCode()`` of ``s`` (a signed 32-bit int)."""
    h = 0
    for unit in _utf16_units(s):
        h = (31 * h + unit) & _MASK
    return _to_int32(h)


def topic_partition_hash(topic: str, partition: int) -> int:
    """``org.apache.kafka.common.TopicPartition.hashCode()``."""
    return _to_int32(31 * (31 + partition) + string_hash(topic))


def spread(h: int) -> int:
    """``HashMap.hash()``: the hash with its high half folded into the low half (unsigned
    32-bit)."""
    h &= _MASK
    return h ^ (h >> 16)


def table_capacity(max_size: int, initial_capacity: int = 16) -> int:
    """Table length of a HashMap created with ``initial_capacity`` that has held ``max_size``
    keys."""
    cap = 1
    while cap < max(initial_capacity, 1):
        cap <<= 1
    while max_size > cap * 3 // 4:
        cap <<= 1
    return cap


def hashmap_order(keys: Iterable[Hashable], hash_fn: Callable[[Hashable], int] | None = None,
                  initial_capacity: int = 16, compute_if_absent: bool = False) -> list:
    """Iteration order of a ``new HashMap<>(initial_capacity)`` after inserting ``keys`` in order.

    Keys are strings unless ``hash_fn`` gives their Java ``hashCode()``. Repeated keys keep their
    first position. ``put`` appends a new key to its bucket; ``computeIfAbsent`` (and ``compute``,
    ``merge``) put it at the head of the bucket instead, so colliding keys come out in reverse
    insertion order: pass ``compute_if_absent=True`` for maps built that way.
    """
    seen: dict = {}
    for k in keys:
        if k not in seen:
            seen[k] = len(seen)
    fn = hash_fn or string_hash
    mask = table_capacity(len(seen), initial_capacity) - 1
    sign = -1 if compute_if_absent else 1
    return sorted(seen, key=lambda k: (spread(fn(k)) & mask, sign * seen[k]))


class JavaHashSet(Generic[H]):
    """A ``java.util.HashSet`` of hashable values, enough to answer ``iterator().next()``.

    ``hash_fn`` gives each value's Java ``hashCode()``. Within a bucket Java keeps insertion order,
    so the first element is the one with the lowest (bucket, insertion number).
    """

    __slots__ = ("_hash", "_items", "_max", "_seq")

    def __init__(self, hash_fn: Callable[[H], int]) -> None:
        self._items: dict[H, tuple[int, int]] = {}
        self._seq = 0
        self._max = 0
        self._hash = hash_fn

    def add(self, value: H) -> None:
        if value not in self._items:
            self._items[value] = (spread(self._hash(value)), self._seq)
            self._seq += 1
            if len(self._items) > self._max:
                self._max = len(self._items)

    def discard(self, value: H) -> None:
        self._items.pop(value, None)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, value: object) -> bool:
        return value in self._items

    def first(self) -> H:
        """What ``iterator().next()`` returns; ``KeyError`` when empty."""
        if not self._items:
            raise KeyError("empty set")
        mask = table_capacity(self._max) - 1
        return min(self._items, key=lambda v: (self._items[v][0] & mask, self._items[v][1]))


def java_sorted(strings: Iterable[str]) -> list[str]:
    """``strings`` sorted by ``String.compareTo``."""
    items = list(strings)
    # no character beyond the BMP: Python's order
    if max("".join(items), default="") < "\U00010000":
        return sorted(items)
    return sorted(items, key=lambda s: s.encode("utf-16-be", "surrogatepass"))


def java_ranks(strings: Iterable[str]) -> dict[str, int]:
    """Each distinct string's position in ``String.compareTo`` order (0 = smallest)."""
    return {s: i for i, s in enumerate(java_sorted(set(strings)))}

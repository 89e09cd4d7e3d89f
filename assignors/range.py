"""Kafka's RangeAssignor, bit for bit (including KIP-881 rack-aware assignment).

The range assignor works per topic. For each topic the partitions are laid out in numeric order and
the topic's subscribers in Kafka's member order: static members (with ``group.instance.id``) first,
by instance id, then dynamic members by member id. Each subscriber gets ``n // c`` partitions; the
first ``n % c`` get one more. Topics subscribed to but absent from the metadata are ignored.

Example: consumers C0 and C1 both subscribe to t0 and t1, three partitions each::

    C0: [t0p0, t0p1, t1p0, t1p1]
    C1: [t0p2, t1p2]

Rack-aware mode (KIP-881) is decided per topic. It is on when some subscriber of the topic has a
rack, that rack holds a replica of some partition of the topic, and either some partition is not on
every rack, or ``prefer_rack_aware_logic`` is set (Kafka's test-only flag). When any topic needs it,
a rack pass runs before the plain pass:

* Topics with the same subscribers and the same partition count are co-partitioned: partition ``p``
  of all of them goes to the first subscriber (member order) whose rack holds a replica of ``p`` in
  every one of them and that still has room within its quota. Co-partitioning beats rack alignment.
* Any other topic that needs rack mode gives each subscriber, in member order, the first unassigned
  partitions on its rack, up to its quota (a subscriber without a rack matches everything).
* The plain pass then gives each subscriber, in order, the first unassigned partitions up to its
  quota.

A subscriber's quota is ``n // c`` plus one while fewer than ``n % c`` subscribers have gone over
``n // c``, so in rack mode the extra partitions go to the first subscribers that take them.

Example (rack mode): t0 with four partitions, replicas of t0p0 and t0p2 on rack a, of t0p1 and t0p3
on rack b; C0 on rack a, C1 on rack b::

    C0: [t0p0, t0p2]
    C1: [t0p1, t0p3]

In rack mode each member's list is sorted by (topic, partition); otherwise it is one block per
topic, in the iteration order of Kafka's ``partitionsPerTopic`` HashMap (:func:`java_topic_order`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import repeat

from assignors._java import hashmap_order, spread, string_hash, table_capacity
from assignors.model import Assignment, GroupSnapshot, Member

NAME = "range"

__all__ = ["NAME", "assign", "java_string_key", "java_topic_order", "kafka_member_order"]


def java_string_key(s: str) -> bytes:
    """Sort key ordering strings as Java's ``String.compareTo`` does (UTF-16 code units)."""
    return s.encode("utf-16-be", "surrogatepass")


def _member_key(m: Member) -> tuple:
    # Kafka's MemberInfo.compareTo: static members first by instance id, then dynamic by member id.
    # Kafka leaves two members with one instance id in HashMap order; we break that tie by member id
    # so that the result never depends on input order.
    if m.instance_id is not None:
        return (0, java_string_key(m.instance_id), java_string_key(m.member_id))
    return (1, java_string_key(m.member_id))


def kafka_member_order(members: Iterable[Member]) -> list[Member]:
    """Members in the order of Kafka's ``AbstractPartitionAssignor.MemberInfo``."""
    return sorted(members, key=_member_key)


class _TopicState:
    """One topic during assignment, as Kafka's ``TopicAssignmentState`` (counters per consumer
    index)."""

    __slots__ = ("assigned", "consumers", "extra", "n", "needs_rack", "owner", "part_racks", "ptr",
                 "quota", "rack_queues", "racks", "remaining", "topic")

    def __init__(self, topic: str, n: int, consumers: list[str], racks: list[str | None],
                 replica_racks: Sequence[Sequence[str | None]] | None, prefer: bool) -> None:
        self.topic = topic
        self.n = n
        self.consumers = consumers
        self.racks = racks
        c = len(consumers)
        self.quota = n // c
        self.extra = n % c
        self.assigned = [0] * c
        self.owner: list[int] = [-1] * n
        self.remaining = n
        self.ptr = 0  # every partition below ptr is assigned
        self.rack_queues: dict[str, list[int]] = {}
        consumer_racks = {r for r in racks if r is not None}
        # each partition's replica racks; built only when some consumer has a rack, and read only
        # for such one
        self.part_racks: list[frozenset[str]] = []
        self.needs_rack = False
        if consumer_racks:
            distinct: dict[tuple, frozenset[str]] = {}
            part_racks = []
            empty: frozenset[str] = frozenset()
            for p in range(n):
                if replica_racks is None:
                    part_racks.append(empty)
                    distinct[()] = empty
                    continue
                rs = replica_racks[p]
                key = rs if isinstance(rs, tuple) else tuple(rs)
                fs = distinct.get(key)
                if fs is None:
                    fs = distinct[key] = frozenset(r for r in key if r is not None)
                part_racks.append(fs)
            self.part_racks = part_racks
            union = frozenset().union(*distinct.values())
            if not consumer_racks.isdisjoint(union):
                self.needs_rack = prefer or any(fs != union for fs in distinct.values())

    def max_assignable(self, ci: int) -> int:
        return max(0, self.quota + (1 if self.extra > 0 else 0) - self.assigned[ci])

    def on_assigned(self, ci: int, partitions: list[int]) -> None:
        owner = self.owner
        for p in partitions:
            owner[p] = ci
        self.assigned[ci] += len(partitions)
        if self.assigned[ci] > self.quota:
            self.extra -= 1
        self.remaining -= len(partitions)

    def rack_match(self, ci: int, p: int) -> bool:
        rack = self.racks[ci]
        return rack is None or rack in self.part_racks[p]

    def first_unassigned(self, k: int) -> list[int]:
        owner, n, p = self.owner, self.n, self.ptr
        while p < n and owner[p] >= 0:
            p += 1
        self.ptr = p
        taken: list[int] = []
        while p < n and len(taken) < k:
            if owner[p] < 0:
                taken.append(p)
            p += 1
        return taken

    def first_unassigned_on_rack(self, rack: str, k: int) -> list[int]:
        queue = self.rack_queues.get(rack)
        if queue is None:
            racks_of = self.part_racks
            # Reversed so that the lowest partitions pop off the end cheaply.
            queue = self.rack_queues[rack] = [p for p in range(self.n - 1, -1, -1)
                                              if rack in racks_of[p]]
        owner = self.owner
        taken: list[int] = []
        while queue and len(taken) < k:
            p = queue.pop()
            if owner[p] < 0:
                taken.append(p)
        return taken

    def assign_ranges(self, rack_matching: bool) -> None:
        """Each consumer in order takes its first ``max_assignable`` unassigned (rack-matching)
        partitions."""
        for ci in range(len(self.consumers)):
            if self.remaining == 0:
                break
            k = self.max_assignable(ci)
            if k == 0:
                continue
            rack = self.racks[ci]
            if rack_matching and rack is not None:
                taken = self.first_unassigned_on_rack(rack, k)
            else:
                taken = self.first_unassigned(k)
            if taken:
                self.on_assigned(ci, taken)


def _assign_co_partitioned(states: list[_TopicState], n: int) -> None:
    """Partition p of every topic goes to the first consumer that matches racks in all of them."""
    first = states[0]
    size = len(first.consumers)
    # The topics start equal and are assigned in lock step, so their counters stay equal: the first
    # topic answers max_assignable for all. A consumer whose max_assignable drops to 0 never
    # recovers, so it can be dropped from the candidate queues lazily.
    queues: dict[str | None, list[int]] = {}
    for ci in range(size - 1, -1, -1):
        queues.setdefault(first.racks[ci], []).append(ci)
    rackless = queues.pop(None, [])
    removed = 0
    for p in range(n):
        best = size
        if rackless:
            while rackless and first.max_assignable(rackless[-1]) == 0:
                rackless.pop()
            if rackless:
                best = rackless[-1]
        for rack, queue in queues.items():
            if not queue or queue[-1] > best:
                continue
            if not all(rack in st.part_racks[p] for st in states):
                continue
            while queue and first.max_assignable(queue[-1]) == 0:
                queue.pop()
            if queue and queue[-1] < best:
                best = queue[-1]
        if best == size:
            continue
        for st in states:
            st.on_assigned(best, [p])
        if first.max_assignable(best) == 0:
            queue = rackless if first.racks[best] is None else queues[first.racks[best]]
            queue.pop()  # best is at the end of its queue
            removed += 1
            if removed == size:
                break


def java_topic_order(snapshot: GroupSnapshot, subscribed: Iterable[str] | None = None) -> list[str]:
    """The topics with partitions in the iteration order of Kafka's ``partitionsPerTopic`` map.

    ``AbstractPartitionAssignor.assign`` adds every member's subscribed topics (members in the order
    of the subscriptions ``HashMap``, filled in snapshot order; each member's topics in list order)
    to a ``HashSet``, then puts the topics that have metadata into a ``HashMap`` in that set's
    order. Topics without metadata still count towards the set's table size. ``subscribed`` (every
    subscribed topic once, in any order) saves walking the subscriptions when the caller has them.
    """
    if subscribed is None:
        subscribed = {t for m in snapshot.members for t in m.topics}
    elif not isinstance(subscribed, (set, frozenset, dict)):
        subscribed = set(subscribed)
    mask = table_capacity(len(subscribed)) - 1
    buckets: dict[int, list[str]] = {}
    for t in subscribed:
        buckets.setdefault(spread(string_hash(t)) & mask, []).append(t)
    colliding = {t for ts in buckets.values() if len(ts) > 1 for t in ts}
    first_seen: dict[str, int] = {}
    if colliding:
        # Only topics sharing a bucket depend on insertion order: walk the members as Java does
        # until each of them has been seen once.
        by_id = {m.member_id: m for m in snapshot.members}
        for mid in hashmap_order(by_id):
            for t in by_id[mid].topics:
                if t in colliding and t not in first_seen:
                    first_seen[t] = len(first_seen)
            if len(first_seen) == len(colliding):
                break
    in_set = [t for b in sorted(buckets)
              for t in sorted(buckets[b], key=lambda t: first_seen.get(t, 0))]
    topics = snapshot.topics
    return hashmap_order(t for t in in_set if topics.get(t, 0) > 0)


def _subscribers_and_racks(
        ordered: Sequence[Member]) -> tuple[dict[str, list[str]], dict[str, str | None]]:
    """Each topic's subscribers in member order, and each member's rack (``None`` for none)."""
    subscribers: dict[str, list[str]] = {}
    rack_of: dict[str, str | None] = {}
    for m in ordered:
        rack_of[m.member_id] = m.rack or None  # Kafka treats an empty client.rack as none
        for t in dict.fromkeys(m.topics):
            subscribers.setdefault(t, []).append(m.member_id)
    return subscribers, rack_of


def _assign_plain_ranges(snapshot: GroupSnapshot, subscribers: dict[str, list[str]],
                         result: Assignment) -> None:
    """No rack anywhere: contiguous ranges per topic, no per-partition work."""
    for t in java_topic_order(snapshot, subscribers):
        consumers = subscribers.get(t)
        n = snapshot.topics[t]
        if not consumers:
            continue
        quota, extra = divmod(n, len(consumers))
        # sliced below, one tuple per partition
        tps = list(zip(repeat(t, n), range(n), strict=True))
        cut = (quota + 1) * extra
        for i in range(min(extra, len(consumers))):
            result[consumers[i]] += tps[i * (quota + 1):(i + 1) * (quota + 1)]
        if quota:
            for i in range(extra, len(consumers)):
                start = cut + (i - extra) * quota
                result[consumers[i]] += tps[start:start + quota]


def _topic_states(snapshot: GroupSnapshot, subscribers: dict[str, list[str]],
                  rack_of: dict[str, str | None], prefer_rack_aware_logic: bool
                  ) -> list[_TopicState]:
    """One state per subscribed topic with partitions, in Kafka's topic order."""
    replica_racks = snapshot.replica_racks
    states: list[_TopicState] = []
    for t in java_topic_order(snapshot, subscribers):
        consumers = subscribers.get(t)
        n = snapshot.topics[t]
        if not consumers:
            continue
        states.append(_TopicState(t, n, consumers, [rack_of[c] for c in consumers],
                                  None if replica_racks is None else replica_racks.get(t),
                                  prefer_rack_aware_logic))
    return states


def _assign_rack_pass(states: list[_TopicState]) -> None:
    """The rack pass: co-partitioned topics together, then each other topic that needs rack mode."""
    by_consumers: dict[tuple, dict[int, list[_TopicState]]] = {}
    for st in states:
        size = len(st.part_racks)
        key = (tuple(st.consumers), tuple(st.racks))
        by_consumers.setdefault(key, {}).setdefault(size, []).append(st)
    for groups in by_consumers.values():
        for size, group in groups.items():
            if len(group) > 1:
                _assign_co_partitioned(group, size)
            elif group[0].needs_rack:
                group[0].assign_ranges(rack_matching=True)


def _collect(states: list[_TopicState], sort_by_topic: bool, result: Assignment) -> None:
    """Append each topic's partitions to their owners' lists (topics sorted by name in rack
    mode)."""
    order = sorted(states, key=lambda s: java_string_key(s.topic)) if sort_by_topic else states
    for st in order:
        buckets: list[list[int]] = [[] for _ in st.consumers]
        for p, ci in enumerate(st.owner):
            buckets[ci].append(p)
        t = st.topic
        for ci, parts in enumerate(buckets):
            if parts:
                result[st.consumers[ci]].extend(zip(repeat(t, len(parts)), parts, strict=True))


def assign(snapshot: GroupSnapshot, prefer_rack_aware_logic: bool = False) -> Assignment:
    """Kafka's RangeAssignor on ``snapshot``; every member is in the result, possibly with no
    partition."""
    subscribers, rack_of = _subscribers_and_racks(kafka_member_order(snapshot.members))
    result: Assignment = {m.member_id: [] for m in snapshot.members}
    if all(r is None for r in rack_of.values()):
        _assign_plain_ranges(snapshot, subscribers, result)
        return result
    states = _topic_states(snapshot, subscribers, rack_of, prefer_rack_aware_logic)
    use_rack_aware = any(st.needs_rack for st in states)
    if use_rack_aware:
        _assign_rack_pass(states)
    for st in states:
        st.assign_ranges(rack_matching=False)
    # Kafka sorts every list by (topic, partition) in rack mode
    _collect(states, use_rack_aware, result)
    return result

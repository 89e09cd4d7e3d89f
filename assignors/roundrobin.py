"""Kafka's RoundRobinAssignor, bit for bit.

All subscribed topics present in the metadata are sorted by name, and their partitions laid out in
that order (``t0p0, t0p1, ..., t1p0, ...``). Members are sorted in Kafka's member order (static
members by ``group.instance.id`` first, then dynamic members by member id) and placed on a circle.
Each partition in turn goes to the next member on the circle that subscribes to its topic; the
pointer then moves one past that member. Racks, lag and previous ownership play no part.

Example: C0 and C1 both subscribe to t0 and t1, three partitions each::

    C0: [t0p0, t0p2, t1p1]
    C1: [t0p1, t1p0, t1p2]

With unequal subscriptions it can be far from balanced. C0 subscribes to t0, C1 to t0 and t1, C2 to
t0, t1 and t2; t0 has one partition, t1 two, t2 three::

    C0: [t0p0]
    C1: [t1p0]
    C2: [t1p1, t2p0, t2p1, t2p2]
"""

from __future__ import annotations

from itertools import repeat

from assignors.model import Assignment, GroupSnapshot
from assignors.range import java_string_key, kafka_member_order

NAME = "roundrobin"

__all__ = ["NAME", "assign"]


def assign(snapshot: GroupSnapshot) -> Assignment:
    """Kafka's RoundRobinAssignor on ``snapshot``; every member is in the result."""
    ordered = kafka_member_order(snapshot.members)
    size = len(ordered)
    ids = [m.member_id for m in ordered]
    # topic -> circle positions of its subscribers, ascending
    subscribed_at: dict[str, list[int]] = {}
    for i, m in enumerate(ordered):
        for t in dict.fromkeys(m.topics):
            subscribed_at.setdefault(t, []).append(i)
    result: Assignment = {m.member_id: [] for m in snapshot.members}

    pointer = 0
    for t in sorted(subscribed_at, key=java_string_key):
        n = snapshot.topics.get(t)
        if not n:  # absent from the metadata (or no partitions): nothing to lay out
            continue
        positions = subscribed_at[t]
        s = len(positions)
        # Walking the circle and skipping non-subscribers visits the topic's subscribers cyclically,
        # starting with the first one at or after the pointer: partition p goes to subscriber
        # (start + p) % s. No per-partition loop is needed.
        start = next((k for k, pos in enumerate(positions) if pos >= pointer), 0)
        # sliced by stride, one tuple per partition
        tps = list(zip(repeat(t, n), range(n), strict=True))
        for j in range(min(s, n)):
            result[ids[positions[(start + j) % s]]] += tps[j::s]
        last = positions[(start + n - 1) % s]
        pointer = (last + 1) % size
    return result

"""Kafka's StickyAssignor (``sticky``, eager protocol), bit for bit with kafka-clients 4.3: the
entry point.

The assignment is (1) as balanced as possible — member partition counts differ by at most one
where the subscriptions allow it — and (2) as close as possible to what each member owned before.
Owned partitions and their generation are what each member reported (Kafka reads them from the
assignor's user data); when two members claim a partition the higher generation wins, and a claim
shared by two members of the same generation is dropped. When every member subscribes to the same
topics the quota-based "constrained" builder runs; otherwise the "general" builder assigns free
partitions to the least loaded subscriber and then moves partitions until no member holds two more
than another subscriber of the same topic. Rack-aware (KIP-881) when member racks and replica racks
make it matter. The full step-by-step description is in :mod:`assignors.sticky`.

Worked example (Kafka's javadoc): members C0, C1, C2; topics t0..t3 with 2 partitions each; all
subscribe to everything. The first assignment is::

    C0: [t0p0, t1p1, t3p0]    C1: [t0p1, t2p0, t3p1]    C2: [t1p0, t2p1]

When C1 leaves, a round robin would move partitions between C0 and C2 as well. Sticky keeps
everything C0 and C2 had and only hands out C1's three partitions (C0 lists its kept partitions
sorted by partition number, then topic; this is Kafka 4.3's exact output)::

    C0: [t0p0, t3p0, t1p1, t0p1]    C2: [t1p0, t2p1, t2p0, t3p1]

Example with unequal subscriptions: C0 subscribes to t0 (1 partition), C1 to t0, t1 (2 partitions)
and C2 to t0, t1, t2 (3 partitions). Sticky gives C0 [t0p0], C1 [t1p0, t1p1], C2 [t2p0, t2p1, t2p2];
if C0 then leaves, C1 takes t0p0 and nothing else moves.
"""

from __future__ import annotations

import dataclasses
from itertools import chain, groupby
from operator import itemgetter, ne
from typing import Any

from assignors._java import hashmap_order
from assignors.model import Assignment, GroupSnapshot
from assignors.sticky.algorithm import TP, sticky_assign

NAME = "sticky"
_topic = itemgetter(0)


def as_user_data(owned: tuple[TP, ...]) -> tuple[TP, ...]:
    """Owned partitions in the order the eager assignor reads them back from its user data.

    Kafka's StickyAssignor serializes a member's last assignment grouped by topic, the topics in the
    iteration order of a ``HashMap`` filled with ``computeIfAbsent``
    (``CollectionUtils.groupPartitionsByTopic``), the partitions of each topic in their original
    order. That order decides the order of kept partitions in the result of the general builder.
    Returns ``owned`` itself when it is in that order already (the usual case at scale).
    """
    topic_of = list(map(_topic, owned))
    first_seen = tuple(dict.fromkeys(topic_of))
    if len(first_seen) < 2:
        return owned
    order = _topic_order(first_seen)
    # grouped by topic already: each topic appears once, or the topic changes once per topic
    if (len(first_seen) == len(topic_of)
            or sum(map(ne, topic_of, topic_of[1:])) == len(first_seen) - 1):
        if order == first_seen:
            return owned
        if len(owned) == len(first_seen):  # one partition per topic
            return tuple(map(dict(zip(topic_of, owned, strict=True)).__getitem__, order))
        groups = {t: tuple(g) for t, g in groupby(owned, key=_topic)}
        return tuple(chain.from_iterable(map(groups.__getitem__, order)))
    by_topic: dict[str, list[TP]] = {}
    for tp in owned:
        by_topic.setdefault(tp[0], []).append(tp)
    return tuple(tp for t in order for tp in by_topic[t])


_TOPIC_ORDERS: dict[tuple[str, ...], tuple[str, ...]] = {}


def _topic_order(first_seen: tuple[str, ...]) -> tuple[str, ...]:
    """The ``computeIfAbsent`` HashMap order of topics inserted in ``first_seen`` order; members of
    one group mostly own the same topics, so the order is worked out once per topic list."""
    order = _TOPIC_ORDERS.get(first_seen)
    if order is None:
        if len(_TOPIC_ORDERS) > 4096:
            _TOPIC_ORDERS.clear()
        order = _TOPIC_ORDERS[first_seen] = tuple(hashmap_order(first_seen, compute_if_absent=True))
    return order


def assign(snapshot: GroupSnapshot, *, prefer_rack_aware_logic: bool = False,
           kafka_bugs: bool = False, **_options: Any) -> Assignment:
    """Member id -> partitions, as Kafka's StickyAssignor returns them (list order included).

    ``kafka_bugs`` reproduces a Kafka defect that can assign a partition to a member no longer
    subscribed to its topic (see :func:`assignors.sticky.algorithm.sticky_assign`); off by default.
    """
    members = []
    for m in snapshot.members:
        owned = as_user_data(m.owned) if len(m.owned) > 1 else m.owned
        members.append(m if owned is m.owned else dataclasses.replace(m, owned=owned))
    if any(a is not b for a, b in zip(members, snapshot.members, strict=True)):
        snapshot = dataclasses.replace(snapshot, members=tuple(members))
    result, _transferring = sticky_assign(snapshot, prefer_rack_aware_logic=prefer_rack_aware_logic,
                                          kafka_bugs=kafka_bugs)
    return result

"""grantneale's LagBasedPartitionAssignor (kafka-lag-based-assignor 2.0.0), bit for bit.

Each topic is assigned on its own, among the members subscribed to it. Its partitions are sorted by
lag, largest first (equal lags: lowest partition first). Each partition in turn goes to the
subscriber with the fewest partitions **of this topic** so far, then the least total lag **of this
topic** so far, then the smallest member id (Java ``String.compareTo``). Both tallies start from
zero for every topic, so there is no balancing across topics. Lag is taken from ``snapshot.lag``
(records; unknown = 0), as :func:`assignors.model.partition_lag` computes it from offsets and
``auto.offset.reset``.

Example: C0 and C1 subscribe to t0, whose partitions have lags t0p0 = 100,000, t0p1 = 50,000 and
t0p2 = 60,000. t0p0 goes to C0 (tie on everything, C0 < C1), t0p2 to C1 (fewest partitions), t0p1 to
C1 (both have one partition, C1 has less lag)::

    C0: [t0p0]          total lag 100,000
    C1: [t0p2, t0p1]    total lag 110,000

RangeAssignor would give C0 [t0p0, t0p1] (160,000) and C1 [t0p2] (50,000).

Because the partition count comes first, the greedy runs in rounds: at the start of each round every
subscriber has the same count, and the next ``c`` partitions go to the subscribers in order of
(total lag, member id) as they stood at the start of the round. This computes the same result as the
per-partition minimum in O(n log c) instead of O(n c).
"""

from __future__ import annotations

from itertools import repeat

from assignors.model import Assignment, GroupSnapshot
from assignors.range import java_string_key

NAME = "lag"

__all__ = ["NAME", "assign"]


def assign(snapshot: GroupSnapshot) -> Assignment:
    """grantneale's lag-based assignment of ``snapshot``; every member is in the result."""
    subscribers: dict[str, list[str]] = {}
    for m in snapshot.members:
        for t in dict.fromkeys(m.topics):
            subscribers.setdefault(t, []).append(m.member_id)
    result: Assignment = {m.member_id: [] for m in snapshot.members}

    for t, n in snapshot.topics.items():
        consumers = subscribers.get(t)
        if not consumers or n <= 0:
            continue
        # Index consumers in member-id order so that a stable sort on total lag breaks ties by id.
        consumers = sorted(consumers, key=java_string_key)
        c = len(consumers)
        lag = snapshot.lag.get(t)
        if lag is None:
            partitions: list[int] = list(range(n))
            lags = [0] * n
        else:
            lags = [int(x) for x in lag]
            neg = [-x for x in lags]
            # stable: equal lags keep p ascending
            partitions = sorted(range(n), key=neg.__getitem__)
        total = [0] * c
        taken: list[list[int]] = [[] for _ in range(c)]
        for start in range(0, n, c):
            turn = sorted(range(c), key=total.__getitem__) if start else range(c)
            for ci, p in zip(turn, partitions[start:start + c]):  # noqa: B905 - last round is short
                taken[ci].append(p)
                total[ci] += lags[p]
        for ci, parts in enumerate(taken):
            if parts:
                result[consumers[ci]].extend(zip(repeat(t, len(parts)), parts, strict=True))
    return result

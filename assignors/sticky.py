"""Kafka's StickyAssignor (``sticky``, eager protocol), bit for bit with kafka-clients 4.3.

The assignment is (1) as balanced as possible — member partition counts differ by at most one
where the subscriptions allow it — and (2) as close as possible to what each member owned before.
Owned partitions and their generation are what each member reported (Kafka reads them from the
assignor's user data); when two members claim a partition the higher generation wins, and a claim
shared by two members of the same generation is dropped. When every member subscribes to the same
topics the quota-based "constrained" builder runs; otherwise the "general" builder assigns free
partitions to the least loaded subscriber and then moves partitions until no member holds two more
than another subscriber of the same topic. Rack-aware (KIP-881) when member racks and replica racks
make it matter. The full step-by-step description is in :mod:`assignors._sticky_core`.

Worked example (Kafka's javadoc): members C0, C1, C2; topics t0..t3 with 2 partitions each; all
subscribe to everything. The first assignment is::

    C0: [t0p0, t1p1, t3p0]    C1: [t0p1, t2p0, t3p1]    C2: [t1p0, t2p1]

When C1 leaves, a round robin would move five partitions between C0 and C2. Sticky keeps everything
C0 and C2 had and only hands out C1's three partitions::

    C0: [t0p0, t1p1, t3p0, t2p0]    C2: [t1p0, t2p1, t0p1, t3p1]

Example with unequal subscriptions: C0 subscribes to t0 (1 partition), C1 to t0, t1 (2 partitions)
and C2 to t0, t1, t2 (3 partitions). Sticky gives C0 [t0p0], C1 [t1p0, t1p1], C2 [t2p0, t2p1, t2p2];
if C0 then leaves, C1 takes t0p0 and nothing else moves.
"""

from __future__ import annotations

from typing import Any

from assignors._sticky_core import sticky_assign
from assignors.model import Assignment, GroupSnapshot

NAME = "sticky"


def assign(snapshot: GroupSnapshot, *, prefer_rack_aware_logic: bool = False, **_options: Any) -> Assignment:
    """Member id -> partitions, as Kafka's StickyAssignor returns them (list order included)."""
    result, _transferring = sticky_assign(snapshot, prefer_rack_aware_logic=prefer_rack_aware_logic)
    return result

"""What share of its capacity a member's partitions ask of it: its utilisation.

A member's utilisation is the produce rate of the partitions it holds, stuck ones included (what is
produced to a stuck partition comes to its owner all the same), over the records/s it can consume
(``GroupSnapshot.capacity``). Above 1 its lag grows without end. The balanced assignor plans to a
target of it (:mod:`assignors.balanced.utilisation`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from assignors.model import Assignment, GroupSnapshot


def member_utilisation(snapshot: GroupSnapshot, assignment: Assignment,
                       capacity: Mapping[str, float] | None = None) -> dict[str, float]:
    """Member -> its utilisation under ``assignment``: the produce rate of the partitions it holds,
    stuck ones included (what arrives comes to their owner all the same), over its capacity
    (``capacity``, else the snapshot's); {} without capacities (the members alike)."""
    capacity = snapshot.capacity if capacity is None else capacity
    if capacity is None:
        return {}
    # an unknown or broken rate (NaN, negative) brings nothing, as in partition_loads
    rates = {t: [float(r) if math.isfinite(r) and r > 0 else 0.0 for r in values]
             for t, values in snapshot.produce_rate.items()}
    out = {m.member_id: 0.0 for m in snapshot.members}
    for mid, tps in assignment.items():
        if mid in out:
            out[mid] = sum(rates[t][p] for t, p in tps if t in rates) / float(capacity[mid])
    return out


def measured_utilisation(snapshot: GroupSnapshot, assignment: Assignment) -> float | None:
    """The highest :func:`member_utilisation` of a measured member (one not in
    ``snapshot.capacity_at_least``); None when there is none to read: capacities or rates unknown,
    or no member measured."""
    if not any(snapshot.produce_rate.values()):
        return None
    found = [u for mid, u in member_utilisation(snapshot, assignment).items()
             if mid not in snapshot.capacity_at_least]
    return max(found) if found else None

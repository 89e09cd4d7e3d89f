"""Rack change: the set of replica racks of a subscribed partition changed.

This is KIP-881's rule for when a rack-aware group must rebalance: a reassignment or a broker move
changes which racks hold a partition, and consumers keep reading across racks until the next
rebalance. The trigger fires only if the recommended assignment then lowers the number of cross-rack
partitions (checked in ``decide``), so a change that no assignment can exploit stays quiet.

Example: t0p0 was on racks {a, b}, read by C0 on rack a. A reassignment moves it to {b, c}: the rack
set changed, so a recommendation is computed; it moves t0p0 to C1 (rack b) and cross-rack partitions
drop from 1 to 0, so it is emitted.
"""

from __future__ import annotations

from collections.abc import Sequence


def changed_partitions(
    old: Sequence[Sequence[str | None]], new: Sequence[Sequence[str | None]]
) -> list[dict]:
    """Partitions (present in both) whose set of replica racks differs; racks of None are ignored."""
    out = []
    for p in range(min(len(old), len(new))):
        before = {r for r in old[p] if r is not None}
        after = {r for r in new[p] if r is not None}
        if before != after:
            out.append({"partition": p, "before": sorted(before), "after": sorted(after)})
    return out

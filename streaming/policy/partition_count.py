"""Partition-count change: a subscribed topic gained (or, after a re-creation, lost) partitions.

Kafka's assignors see new partitions only at the next rebalance; until then nobody reads them. The
recommendation covers the new shape.

Example: t0 had 4 partitions and gets 6: t0p4 and t0p5 are unassigned until a rebalance; the
recommendation places them (and whatever else balance needs).
"""

from __future__ import annotations


def changed(before: int, after: int) -> dict | None:
    """The change as trigger figures, or None when the count is the same."""
    return None if before == after else {"before": before, "after": after}

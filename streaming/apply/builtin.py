"""kafka-python's own assignors by name: the protocols a consumer offers after the rebalancer's, for
groups where not every member runs it (and the workload's plain consumers)."""

from __future__ import annotations

from typing import Any

BUILTIN_ASSIGNORS = ("range", "roundrobin", "sticky", "cooperative-sticky")


def builtin_assignor(name: str) -> Any:
    """A fresh instance of one of kafka-python's built-in assignors."""
    if name == "range":
        from kafka.coordinator.assignors.range import RangePartitionAssignor
        return RangePartitionAssignor()
    if name == "roundrobin":
        from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
        return RoundRobinPartitionAssignor()
    if name == "sticky":
        from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
        return StickyPartitionAssignor()
    if name == "cooperative-sticky":
        from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
        return CooperativeStickyAssignor()
    raise ValueError(f"unknown assignor {name!r}; built-ins: {', '.join(BUILTIN_ASSIGNORS)}")

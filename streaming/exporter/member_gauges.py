"""The job's per-member gauges of a group's latest recommendation: each member's capacity, and the
members it names slow.

A ``lag_skew`` recommendation names the members over their capacity (``slow_members`` in its
trigger details, :mod:`streaming.policy.slow_members`), each with its measured records/s and its
peers' median. ``kafka_rebalancer_recommendation_slow_members`` counts them (0: the skew was the
partitions', or another trigger), and ``kafka_rebalancer_recommendation_slow_member_peer_ratio``
gives each one's rate over its peers' (0.4: it reads 40% of what they do; NaN without measured
peers). Example: C1 measured at 60/s while its peers' median is 150/s gives the series
``{group="orders", member="C1", client_id="c-C1"} 0.4`` and the count 1. A member's series go with
the next recommendation of its group that does not name it; at most :data:`MAX_MEMBER_SERIES`
members of a group get series (the first by member id).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Gauge

from streaming.operator_view.sentences import slow_members

MAX_MEMBER_SERIES = 200
"""Members of one group with a capacity or slow-member series: a group's cardinality stays
bounded."""

Labels = tuple[str, str]
"""(member id, client id)"""


class MemberGauges:
    """Three gauges in the job's registry, set from a group's latest recommendation row."""

    def __init__(self, registry: CollectorRegistry, prefix: str) -> None:
        member = ["group", "member", "client_id"]
        self.capacity = Gauge(f"{prefix}_member_capacity_records_per_second",
                              "Capacity of each member the latest recommendation was made with: "
                              "records/s consumed while it had backlog, else taken from its peers "
                              "(docs/deciding.md)", member, registry=registry)
        self.slow = Gauge(f"{prefix}_recommendation_slow_members",
                          "Members the latest recommendation names over their capacity (0: the "
                          "skew was the partitions')", ["group"], registry=registry)
        self.slow_ratio = Gauge(f"{prefix}_recommendation_slow_member_peer_ratio",
                                "Records/s of each member the latest recommendation names slow, "
                                "over its peers' median", member, registry=registry)
        self._held: dict[tuple[str, str], set[Labels]] = {}

    def update(self, group: str, row: Mapping[str, Any]) -> None:
        """From the group's latest recommendation row: its ``member_capacity`` and the members its
        ``trigger_details`` name slow."""
        entries = _parsed(row.get("member_capacity")) or []
        self._set(self.capacity, group, "capacity", {
            (e["member_id"], e.get("client_id") or ""): or_nan(e["records_per_s"])
            for e in entries[:MAX_MEMBER_SERIES]})
        slow = slow_members(row)
        self.slow.labels(group).set(len(slow))
        self._set(self.slow_ratio, group, "slow", {
            (m["member_id"], m.get("client_id") or ""): _ratio(m)
            for m in slow[:MAX_MEMBER_SERIES]})

    def _set(self, gauge: Gauge, group: str, kind: str, now: dict[Labels, float]) -> None:
        """``now``'s series of ``group``; those of an earlier recommendation not in it go."""
        for labels in self._held.get((group, kind), set()) - now.keys():
            gauge.remove(group, *labels)
        for labels, value in now.items():
            gauge.labels(group, *labels).set(value)
        self._held[group, kind] = set(now)


def _parsed(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) and value else value


def _ratio(member: dict[str, Any]) -> float:
    rate, peers = member.get("records_per_s"), member.get("peers_records_per_s")
    return math.nan if rate is None or not peers else float(rate) / float(peers)


def or_nan(value: float | None) -> float:
    """A gauge's value for a figure that may be missing (null in Delta, not known yet)."""
    return math.nan if value is None else float(value)

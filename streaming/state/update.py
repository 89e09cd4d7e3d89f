"""Applying events to a group's state, and noticing the metadata changes that may trigger.

Metadata events come as plain dicts (the parsed, validated rows of the metadata topic) and change the
state in place through :func:`apply_metadata`, which records what it saw: members joined/left, partition
counts and replica racks changed. Lag events come as arrays, one topic's poll at a time
(:func:`observe_lag`). The first ``members`` event, and the first ``partitions`` event of a topic, are
the group's baseline: they change nothing that could trigger.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from streaming.events import LAG, MEMBERS, PARTITIONS
from streaming.policy import membership, partition_count, rack_change
from streaming.state.group_state import GroupState, PartitionMeta
from streaming.state.lag_history import LagHistory

# Within one observation (one ts), metadata first: the lag is read against the newest shape.
TYPE_ORDER = {MEMBERS: 0, PARTITIONS: 1, LAG: 2}


@dataclass
class Changes:
    joined: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)
    partition_counts: dict[str, dict] = field(default_factory=dict)
    racks: dict[str, list[dict]] = field(default_factory=dict)
    saw_lag: bool = False

    def triggers(self) -> dict[str, Any]:
        """Trigger name -> figures for the metadata changes seen."""
        out: dict[str, Any] = {}
        if self.joined or self.left:
            out["membership_change"] = {"joined": self.joined, "left": self.left}
        if self.partition_counts:
            out["partition_count_change"] = self.partition_counts
        if self.racks:
            out["rack_change"] = self.racks
        return out


def apply_metadata(state: GroupState, events: Iterable[dict[str, Any]], changes: Changes) -> None:
    """Apply one observation's metadata events (members before partitions) to ``state``."""
    for e in events:
        state.last_ts = max(state.last_ts, int(e["ts"]))
        if e["type"] == MEMBERS:
            _apply_members(state, e, changes)
        elif e["type"] == PARTITIONS:
            _apply_partitions(state, e, changes)


def observe_lag(state: GroupState, topic: str, ts: int, partitions: np.ndarray, committed: np.ndarray,
                end: np.ndarray, depth: int) -> None:
    """One poll of one topic's lag: unique partitions with their committed and end offsets."""
    hist = state.lag.get(topic)
    if hist is None:
        hist = state.lag[topic] = LagHistory(int(partitions.max()) + 1 if len(partitions) else 0, depth)
    hist.observe(ts, partitions, committed, end)
    state.last_ts = max(state.last_ts, ts)


def _apply_members(state: GroupState, e: dict[str, Any], changes: Changes) -> None:
    members = e["members"] if isinstance(e["members"], list) else json.loads(e["members"])
    members = [
        {
            "member_id": m["member_id"],
            "instance_id": m.get("instance_id"),
            "client_id": m.get("client_id"),
            "host": m.get("host"),
            "rack": m.get("rack"),
            "topics": sorted(m.get("topics") or []),
            "assigned": sorted([str(t), int(p)] for t, p in (m.get("assigned") or [])),
        }
        for m in members
    ]
    members.sort(key=lambda m: m["member_id"])
    if state.members is not None:
        joined, left = membership.diff(state.members, members)
        changes.joined += joined
        changes.left += left
    state.members = members
    state.generation = int(e["generation"]) if e.get("generation") is not None else state.generation
    state.protocol = e.get("protocol")


def _apply_partitions(state: GroupState, e: dict[str, Any], changes: Changes) -> None:
    parts = e["partitions"] if isinstance(e["partitions"], list) else json.loads(e["partitions"])
    parts = sorted(parts, key=lambda p: int(p["partition"]))
    topic = e["topic"]
    new = [PartitionMeta(p.get("leader"), [int(r) for r in p.get("replicas") or []],
                         list(p.get("replica_racks") or [])) for p in parts]
    old = state.partitions.get(topic)
    if old is not None:
        count = partition_count.changed(len(old), len(new))
        if count:
            changes.partition_counts[topic] = count
        racks = rack_change.changed_partitions([m.racks for m in old], [m.racks for m in new])
        if racks:
            changes.racks[topic] = racks
    state.partitions[topic] = new
    # the lag history follows the partition count (partitions beyond it are gone: a re-created topic)
    lag = state.lag.get(topic)
    if lag is not None:
        lag.resize(len(new))

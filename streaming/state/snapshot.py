"""A group's state as the assignors' :class:`~assignors.model.GroupSnapshot`."""

from __future__ import annotations

from assignors.model import GroupSnapshot, Member
from streaming.policy import stuck
from streaming.state.group_state import GroupState


def stuck_partitions(state: GroupState, k: int) -> list[tuple[str, int]]:
    return sorted(
        (topic, int(p)) for topic, parts in state.lag.items() for p, hist in parts.items() if stuck.is_stuck(hist, k)
    )


def to_snapshot(state: GroupState, stuck_after: int) -> GroupSnapshot | None:
    """The snapshot the assignors take, or None while the group has no members or no known topic."""
    if not state.members:
        return None
    topics = {t: state.partition_count(t) for t in state.subscribed_topics()}
    topics = {t: n for t, n in topics.items() if n > 0}
    if not topics:
        return None
    lag: dict[str, list[int]] = {}
    produce: dict[str, list[float]] = {}
    consume: dict[str, list[float]] = {}
    for t, n in topics.items():
        lag[t] = [state.latest_lag(t, p) or 0 for p in range(n)]
        hist = state.lag.get(t, {})
        produce[t] = [_rate(hist.get(str(p)), 2) for p in range(n)]
        consume[t] = [_rate(hist.get(str(p)), 1) for p in range(n)]
    racks = None
    if any(r is not None for t in topics for meta in state.partitions.get(t, []) for r in meta.racks):
        racks = {
            t: [tuple(meta.racks) for meta in state.partitions[t]] if t in state.partitions else [()] * n
            for t, n in topics.items()
        }
    members = tuple(
        Member(
            member_id=m["member_id"],
            topics=tuple(m["topics"]),
            instance_id=m.get("instance_id"),
            rack=m.get("rack"),
            owned=tuple((t, int(p)) for t, p in m["assigned"] if t in topics and int(p) < topics[t]),
            generation=state.generation,
            client_id=m.get("client_id"),
        )
        for m in state.members
        if m["topics"]
    )
    if not members:
        return None
    return GroupSnapshot(
        topics=topics, members=members, replica_racks=racks, lag=lag, produce_rate=produce, consume_rate=consume,
        stuck=frozenset(stuck_partitions(state, stuck_after)),
    )


def _rate(hist: list[list[int]] | None, column: int) -> float:
    """Records per second of the end (column 2) or committed (column 1) offset over the kept history."""
    if not hist or len(hist) < 2:
        return 0.0
    dt = (hist[-1][0] - hist[0][0]) / 1000.0
    return max(0.0, (hist[-1][column] - hist[0][column]) / dt) if dt > 0 else 0.0

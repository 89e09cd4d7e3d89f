"""Loads: what a partition weighs, what a member holds, and how members of unlike capacity compare.

Load of a partition
    ``lag + produce_rate * horizon_s`` when produce rates are known, else the lag alone. With the
    default ``horizon_s = 0`` the load is the lag in records. A stuck partition its owner still
    holds (:func:`held_stuck`) weighs 0: its owner gets through none of its records, so it spends
    none of its capacity on it, and its ever-growing lag would otherwise make the owner look busier
    than it is.

Members of different capacity
    With ``snapshot.capacity`` (records/s per member) member ``m`` takes ``w / c_m`` seconds for a
    load ``w``; :func:`capacity_scales` (the fastest capacity over each member's own) turns that
    time into records at the fastest member's rate, the unit ``balanced`` minimises (all 1.0 when
    capacities are equal or unknown).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from assignors.model import Assignment, GroupSnapshot, TopicPartition


def held_stuck(snapshot: GroupSnapshot) -> frozenset[TopicPartition]:
    """The stuck partitions a member subscribed to their topic owns (``balanced`` pins them
    there)."""
    if not snapshot.stuck:
        return frozenset()
    held = {tp for m in snapshot.members for tp in m.owned if tp[0] in m.topics}
    return frozenset(tp for tp in snapshot.stuck
                     if tp in held and 0 <= tp[1] < snapshot.topics.get(tp[0], 0))


def partition_loads(snapshot: GroupSnapshot, horizon_s: float = 0.0) -> dict[str, list[float]]:
    """Topic -> load of each partition: lag, plus produce rate times ``horizon_s`` where rates are
    known; 0 for a stuck partition its owner holds (see the module docstring).

    Lags stay ints when no rate term applies, so sums of them stay exact.
    """
    loads: dict[str, list[float]] = {}
    for topic, n in snapshot.topics.items():
        lag = snapshot.lag.get(topic)
        values: list[float] = [0] * n if lag is None else list(lag)
        rates = snapshot.produce_rate.get(topic) if horizon_s else None
        if rates is not None:
            values = [v + r * horizon_s for v, r in zip(values, rates, strict=True)]
        loads[topic] = values
    for topic, p in held_stuck(snapshot):
        loads[topic][p] = 0
    return loads


def member_loads(
    snapshot: GroupSnapshot,
    assignment: Assignment,
    horizon_s: float = 0.0,
    loads: Mapping[str, Sequence[float]] | None = None,
) -> dict[str, float]:
    """Member -> total load of its partitions; every snapshot member is present (0 when idle)."""
    if loads is None:
        loads = partition_loads(snapshot, horizon_s)
    result: dict[str, float] = {m.member_id: 0 for m in snapshot.members}
    for member, tps in assignment.items():
        total: float = 0
        for t, p in tps:
            values = loads.get(t)
            if values is not None:
                total += values[p]
        result[member] = result.get(member, 0) + total
    return result


def capacity_scales(snapshot: GroupSnapshot) -> dict[str, float] | None:
    """Member -> the fastest member's capacity over its own; None when capacities are unknown
    (members alike)."""
    capacity = snapshot.capacity
    if capacity is None or not snapshot.members:
        return None
    fastest = max(float(capacity[m.member_id]) for m in snapshot.members)
    return {m.member_id: fastest / float(capacity[m.member_id]) for m in snapshot.members}

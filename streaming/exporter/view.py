"""What an operator sees of a consumer group, computed from one live :class:`ClusterSnapshot`.

Pure: a snapshot (as :class:`streaming.collector.poll.ClusterReader` reads it) and optionally the latest
recommendation in, plain rows out. ``rebalancer describe`` prints these rows, ``rebalancer verify`` compares
them with the recommendation and the collector's ``/metrics`` exports their per-group figures.

Rows follow ``kafka-consumer-groups --describe``: a partition appears when a member owns it or the group
committed an offset for it; with no commit its current offset and lag are unknown (None). A share group
(KIP-932) has rows of its own, as ``kafka-share-groups --describe`` shows it (:func:`share_partition_rows`,
:func:`share_member_rows`); in the figures no member owns its partitions (the broker hands their records to
whichever member fetches), so its lag counts per topic and none per member. Cross-rack, as in
:func:`assignors.metrics.cross_rack_partitions`: the owner has a rack and no replica of the partition is in
it, while some replica's rack is known.

Lag in seconds comes from the caller (a snapshot has no history): ``describe`` passes the age of the record
at each committed offset, the collector's ``/metrics`` its window of polls (:mod:`.window`). A member's is the
max over its partitions whose figure is known; None when it has lag and none is known.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from streaming.collector import kip848
from streaming.collector.diff import partition_entries
from streaming.collector.poll import ClusterSnapshot
from streaming.lag import rules as lag_time

TP = tuple[str, int]


@dataclass(frozen=True)
class PartitionRow:
    group: str
    topic: str
    partition: int
    current_offset: int | None
    log_end_offset: int | None
    lag: int | None
    consumer_id: str | None
    host: str | None
    client_id: str | None
    rack: str | None
    replica_racks: tuple[str | None, ...]
    cross_rack: bool | None
    """None when the owner's rack or every replica's rack is unknown (or nobody owns it)."""
    recommended_owner: str | None = None
    """member id the latest recommendation gives the partition to (None: no recommendation covers it)."""
    lag_seconds: float | None = None
    """age of the oldest unconsumed record (0 without lag; None when not known)."""

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["replica_racks"] = list(self.replica_racks)
        return d


@dataclass(frozen=True)
class MemberRow:
    group: str
    consumer_id: str
    instance_id: str | None
    host: str
    client_id: str
    rack: str | None
    partitions: int
    lag: int
    """sum of the known lags of the member's partitions."""
    cross_rack: int
    lag_seconds: float | None = None
    """max of its partitions' known lag seconds (0 without lag; None with lag and none known)."""
    capacity: float | None = None
    """records/s the latest recommendation took it at (:mod:`streaming.state.capacity`; None: not known)."""
    capacity_confidence_s: float | None = None
    """seconds of backlog that capacity rests on (0: the group's median, never measured)."""
    member_epoch: int | None = None
    """KIP-848 members: the member's epoch (None for classic members)."""
    target: tuple[TP, ...] | None = None
    """KIP-848 members: the partitions the group's target assignment gives it."""
    converging: bool | None = None
    """KIP-848 members: still on the way to the target (:func:`streaming.collector.kip848.converging`)."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class GroupFigures:
    """Per-group figures the collector exports (the same definitions as the recommendation rows)."""

    group: str
    state: str | None
    members: int
    partitions: int
    max_member_lag: int
    imbalance: float
    """max member lag / mean member lag over members that own partitions (1.0 when there is no lag)."""
    cross_rack: int
    lag_by_topic: dict[str, int]
    max_member_lag_seconds: float | None = None
    """max over members of their lag seconds (None when some member with lag has none known)."""
    max_member_catch_up_seconds: float | None = None
    """max over members of lag / consume rate, stuck partitions left out (inf: a member with lag consumed
    nothing; None: not known)."""
    stuck_partitions: int = 0


@dataclass(frozen=True)
class SharePartitionRow:
    """A share-partition as ``kafka-share-groups --describe --offsets`` shows it, and its log end offset."""

    group: str
    topic: str
    partition: int
    leader_epoch: int | None
    start_offset: int | None
    """the share-partition start offset (None: not initialised yet)."""
    lag: int | None
    """records not yet delivered to completion, as the broker counts them (KIP-1226; None: not reported)."""
    log_end_offset: int | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ShareMemberRow:
    """A share consumer as ``kafka-share-groups --describe --members --verbose`` shows it, and its rack."""

    group: str
    consumer_id: str
    host: str
    client_id: str
    rack: str | None
    member_epoch: int | None
    assignment: tuple[TP, ...]
    """the partitions the broker gives it records of (other members may be given them too)."""

    @property
    def partitions(self) -> int:
        return len(self.assignment)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"partitions": self.partitions, "assignment": [list(tp) for tp in self.assignment]}


def share_partition_rows(snap: ClusterSnapshot, group: str) -> list[SharePartitionRow]:
    """The share group's share-partitions the broker reports, sorted by topic and partition."""
    return [SharePartitionRow(group, tp[0], tp[1], o.leader_epoch, None if o.start_offset < 0 else o.start_offset,
                              o.lag, snap.end.get(tp))
            for tp, o in sorted(snap.share_offsets.get(group, {}).items())]


def share_member_rows(snap: ClusterSnapshot, group: str) -> list[ShareMemberRow]:
    """The share group's members, sorted by client id then member id."""
    rows = [ShareMemberRow(group, m.member_id, m.host, m.client_id, m.rack, m.member_epoch, tuple(m.assigned))
            for m in snap.groups[group].members]
    return sorted(rows, key=lambda r: (r.client_id, r.consumer_id))


def is_cross_rack(rack: str | None, replica_racks: Sequence[str | None]) -> bool | None:
    if not rack or not any(r is not None for r in replica_racks):
        return None
    return rack not in replica_racks


def partition_rows(snap: ClusterSnapshot, group: str, recommended: Mapping[TP, str] | None = None,
                   lag_seconds: Mapping[TP, float | None] | None = None) -> list[PartitionRow]:
    """The group's rows, sorted by topic and partition; ``lag_seconds``: per partition with lag (nan or
    absent: unknown)."""
    info = snap.groups[group]
    committed = snap.committed.get(group, {})
    # several share consumers may be given one partition: none owns it
    owners = {} if info.share else {tp: m for m in info.members for tp in m.assigned}
    racks: dict[TP, tuple[str | None, ...]] = {}
    for topic, parts in snap.topics.items():
        for e in partition_entries(parts, snap.broker_racks):
            racks[(topic, e["partition"])] = tuple(e["replica_racks"])
    rows = []
    for tp in sorted(set(owners) | set(committed)):
        m = owners.get(tp)
        current, end = committed.get(tp), snap.end.get(tp)
        lag = end - current if current is not None and end is not None else None
        replica_racks = racks.get(tp, ())
        rows.append(PartitionRow(
            group, tp[0], tp[1], current, end, lag,
            m.member_id if m else None, m.host if m else None, m.client_id if m else None, m.rack if m else None,
            replica_racks, is_cross_rack(m.rack, replica_racks) if m else None,
            (recommended or {}).get(tp), _seconds(lag, (lag_seconds or {}).get(tp))))
    return rows


def member_rows(snap: ClusterSnapshot, group: str, rows: Sequence[PartitionRow],
                capacity: Mapping[str, tuple[float, float]] | None = None) -> list[MemberRow]:
    """One row per member (``--members``), sorted by client id then member id; ``capacity``: as
    :func:`recommended_capacity` gives it."""
    capacity = capacity or {}
    by_member: dict[str, list[PartitionRow]] = {}
    for r in rows:
        if r.consumer_id is not None:
            by_member.setdefault(r.consumer_id, []).append(r)
    out = []
    info = snap.groups[group]
    for m in info.members:
        mine = by_member.get(m.member_id, [])
        lag = sum(r.lag or 0 for r in mine)
        known = [r.lag_seconds for r in mine if r.lag and r.lag_seconds is not None]
        # 0 s only when every partition's lag is known to be 0: one never committed (lag unknown) or one
        # whose age was not read leaves the member's unknown too, as its partitions show
        settled = all(r.lag == 0 for r in mine)
        rate, confidence = capacity.get(m.member_id) or capacity.get(f"client:{m.client_id}") or (None, None)
        out.append(MemberRow(group, m.member_id, m.instance_id, m.host, m.client_id, m.rack, len(m.assigned),
                             lag, sum(1 for r in mine if r.cross_rack),
                             max(known) if known else (0.0 if settled else None), rate, confidence,
                             m.member_epoch, m.target,
                             kip848.converging(m.member_epoch, info.assignment_epoch, m.assigned, m.target)))
    return sorted(out, key=lambda r: (r.client_id, r.consumer_id))


def figures(snap: ClusterSnapshot, group: str, rows: Sequence[PartitionRow],
            rates: Mapping[TP, float] | None = None, stuck: frozenset[TP] = frozenset()) -> GroupFigures:
    """The group's figures; ``rates``: consume rate per partition (records/s, nan unknown) for the time to
    catch up, ``stuck``: the partitions stuck now (counted, and left out of the time to catch up)."""
    info = snap.groups[group]
    members = member_rows(snap, group, rows)
    loads = [m.lag for m in members if m.partitions]
    mean = sum(loads) / len(loads) if loads else 0.0
    by_topic: dict[str, int] = {}
    for r in rows:
        by_topic[r.topic] = by_topic.get(r.topic, 0) + (r.lag or 0)
    owning = [m for m in members if m.partitions]
    seconds = None if any(m.lag_seconds is None for m in owning) else max(
        (m.lag_seconds or 0.0 for m in owning), default=0.0)
    return GroupFigures(group, info.state, len(info.members), len(rows), max(loads, default=0),
                        max(loads) / mean if mean > 0 else 1.0, sum(1 for r in rows if r.cross_rack), by_topic,
                        seconds, _catch_up(rows, owning, rates, stuck) if rates is not None else None,
                        sum(1 for r in rows if (r.topic, r.partition) in stuck))


def _catch_up(rows: Sequence[PartitionRow], owning: Sequence[MemberRow], rates: Mapping[TP, float],
              stuck: frozenset[TP]) -> float | None:
    """Max member time to catch up (:func:`streaming.lag.rules.member_catch_up`); None when not known."""
    if not owning:
        return 0.0
    index = {m.consumer_id: i for i, m in enumerate(owning)}
    mine = [(index[r.consumer_id], r) for r in rows
            if r.consumer_id is not None and r.consumer_id in index and (r.topic, r.partition) not in stuck]
    per_member = lag_time.member_catch_up(
        np.array([r.lag or 0 for _, r in mine], dtype=np.float64),
        np.array([rates.get((r.topic, r.partition), math.nan) for _, r in mine], dtype=np.float64),
        np.array([i for i, _ in mine], dtype=np.int64), len(owning))
    if np.isinf(per_member).any():
        return math.inf
    return None if np.isnan(per_member).any() else float(per_member.max())


def _seconds(lag: int | None, seconds: float | None) -> float | None:
    if lag is None:
        return None
    if lag <= 0:
        return 0.0
    return None if seconds is None or math.isnan(seconds) else float(seconds)


def recommended_owners(rec: Mapping[str, Any] | None) -> dict[TP, str]:
    """(topic, partition) -> member id, from a recommendations row (Delta: partitions as structs) or a feed
    message (partitions as ``[topic, partition]`` pairs)."""
    out: dict[TP, str] = {}
    for entry in (rec or {}).get("assignment") or ():
        for p in entry.get("partitions") or ():
            tp = (p["topic"], int(p["partition"])) if isinstance(p, Mapping) else (str(p[0]), int(p[1]))
            out[tp] = entry["member_id"]
    return out


def recommended_capacity(rec: Mapping[str, Any] | None) -> dict[str, tuple[float, float]]:
    """member id, and ``client:`` + client id (a member that rejoined since), -> (records/s, confidence s)
    the recommendation was made with."""
    out: dict[str, tuple[float, float]] = {}
    for e in (rec or {}).get("member_capacity") or ():
        figures = (float(e["records_per_s"]), float(e["confidence_s"]))
        out[e["member_id"]] = figures
        if e.get("client_id"):
            out.setdefault(f"client:{e['client_id']}", figures)
    return out

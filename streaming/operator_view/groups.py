"""What an operator sees of a consumer group, computed from one live :class:`ClusterSnapshot`.

Pure: a snapshot (as :class:`streaming.collector.poll.ClusterReader` reads it) and optionally the
latest recommendation in, plain rows out. ``rebalancer describe`` prints these rows,
``rebalancer verify`` compares them with the recommendation and the collector's ``/metrics`` exports
their per-group figures.

Rows follow ``kafka-consumer-groups --describe``: a partition appears when a member owns it or the
group committed an offset for it; with no commit its current offset and lag are unknown (None). A
share group (KIP-932) has rows of its own, as ``kafka-share-groups --describe`` shows it
(:mod:`.share_groups`); in the figures no member owns its partitions (the broker hands their records
to whichever member fetches), so its lag counts per topic and none per member. Cross-rack, as in
:func:`assignors.metrics.cross_rack_partitions`: the owner has a rack and no replica of the
partition is in it, while some replica's rack is known.

Lag in seconds comes from the caller (a snapshot has no history): ``describe`` passes the age of the
record at each committed offset, the collector's ``/metrics`` its window of polls
(:mod:`streaming.lag.window`). A member's is the max over its partitions whose figure is known; None
when it has lag and none is known.

Data-loss risk (:mod:`streaming.lag.loss_risk`): the log start offset and, from it and the committed
offset, the records until loss (headroom) or already lost come from the snapshot itself; the seconds
until loss need rates, so they come from the caller's window like lag seconds (a member's: the
soonest of its partitions). Hot partitions (:mod:`streaming.lag.hot`) need produce rates too: the
caller passes them per topic. So do the consumers needed (:mod:`streaming.lag.sizing`), with the
members' capacities (the collector's window estimates them as the job does; ``describe`` takes those
of the latest recommendation).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from streaming.collector import kip848
from streaming.collector.cluster_snapshot import ClusterSnapshot
from streaming.collector.poll_events import partition_entries
from streaming.lag import hot, sizing
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
    """member id the latest recommendation gives the partition to (None: no recommendation covers
    it)."""
    lag_seconds: float | None = None
    """age of the oldest unconsumed record (0 without lag; None when not known)."""
    log_start_offset: int | None = None
    """the partition's log start offset (None: not read)."""
    retention_headroom: int | None = None
    """records retention may delete before the group loses any: committed - log start (None: not
    known)."""
    lost_records: int | None = None
    """records deleted before the group read them: log start - committed when above it (None: not
    known)."""
    loss_seconds: float | None = None
    """seconds until the committed offset falls below the log start at current rates (0: lost; None:
    never at these rates, or not known)."""

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
    """records/s the latest recommendation took it at (:mod:`streaming.lag.capacity`; None: not
    known)."""
    capacity_confidence_s: float | None = None
    """seconds of backlog that capacity rests on (0: never measured, taken from its peers)."""
    member_epoch: int | None = None
    """KIP-848 members: the member's epoch (None for classic members)."""
    target: tuple[TP, ...] | None = None
    """KIP-848 members: the partitions the group's target assignment gives it."""
    converging: bool | None = None
    """KIP-848 members: still on the way to the target
    (:func:`streaming.collector.kip848.converging`)."""
    lost_records: int | None = None
    """records its partitions lost to retention (None: no log start read)."""
    loss_seconds: float | None = None
    """the soonest seconds until one of its partitions loses records (0: lost; None: never, or not
    known)."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Consumers:
    """How many consumers the group needs (:mod:`streaming.lag.sizing`)."""

    consumers: int
    """what to run: :func:`streaming.lag.sizing.to_run` (the value an autoscaler reads)."""
    fewest: int | None
    """the fewest that keep each under its capacity with the headroom (None: capacity not known, or
    one partition alone exceeds a consumer)."""
    most: int
    """the most that all get a partition (the partition count)."""
    members: int
    capacity_records_per_s: float | None
    """the capacity of one consumer the count rests on: the median of the members' (None: not known
    yet)."""
    headroom: float
    known: bool
    """the capacity and the rates are known (else ``consumers`` holds at the members there are)."""

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if self.capacity_records_per_s is not None:
            d["capacity_records_per_s"] = round(self.capacity_records_per_s, 3)
        return d


@dataclass(frozen=True)
class GroupFigures:
    """Per-group figures the collector exports (the same definitions as the recommendation rows)."""

    group: str
    state: str | None
    members: int
    partitions: int
    max_member_lag: int
    imbalance: float
    """max member lag / mean member lag over members that own partitions (1.0 when there is no
    lag)."""
    cross_rack: int
    lag_by_topic: dict[str, int]
    max_member_lag_seconds: float | None = None
    """max over members of their lag seconds (None when some member with lag has none known)."""
    max_member_catch_up_seconds: float | None = None
    """max over members of lag / consume rate, stuck partitions left out (inf: a member with lag
    consumed nothing; None: not known)."""
    stuck_partitions: int = 0
    loss_seconds: float = math.nan
    """the soonest seconds until a partition of the group loses records (0: lost; inf: none at these
    rates; nan: not known, no log start or rate read)."""
    retention_headroom: int | None = None
    """the least records until loss over its partitions with lag (None: none with a log start
    read)."""
    lost_records: int = 0
    hot_partitions: tuple[hot.HotPartition, ...] = ()
    consumers: Consumers | None = None


def is_cross_rack(rack: str | None, replica_racks: Sequence[str | None]) -> bool | None:
    if not rack or not any(r is not None for r in replica_racks):
        return None
    return rack not in replica_racks


def partition_rows(snap: ClusterSnapshot, group: str, recommended: Mapping[TP, str] | None = None,
                   lag_seconds: Mapping[TP, float | None] | None = None,
                   loss_seconds: Mapping[TP, float] | None = None) -> list[PartitionRow]:
    """The group's rows, sorted by topic and partition; ``lag_seconds``: per partition with lag (nan
    or absent: unknown); ``loss_seconds``: seconds to loss per partition
    (:mod:`streaming.lag.loss_risk`)."""
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
            m.member_id if m else None, m.host if m else None, m.client_id if m else None,
            m.rack if m else None, replica_racks,
            is_cross_rack(m.rack, replica_racks) if m else None,
            (recommended or {}).get(tp), _seconds(lag, (lag_seconds or {}).get(tp)),
            *_retention(current, snap.begin.get(tp), (loss_seconds or {}).get(tp))))
    return rows


def _retention(committed: int | None, start: int | None, seconds: float | None
               ) -> tuple[int | None, int | None, int | None, float | None]:
    """(log start, headroom, lost, seconds to loss) of a row: the records exact, the seconds finite
    or None."""
    if committed is None or start is None:
        return start, None, None, None
    lost = max(start - committed, 0)
    if lost:
        return start, 0, lost, 0.0
    return (start, committed - start, 0,
            round(seconds, 3) if seconds is not None and math.isfinite(seconds) else None)


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
        # 0 s only when every partition's lag is known to be 0: one never committed (lag unknown) or
        # one whose age was not read leaves the member's unknown too, as its partitions show
        settled = all(r.lag == 0 for r in mine)
        rate, confidence = (capacity.get(m.member_id) or capacity.get(f"client:{m.client_id}")
                            or (None, None))
        read = [r for r in mine if r.lost_records is not None]
        soonest = [r.loss_seconds for r in read if r.loss_seconds is not None]
        out.append(MemberRow(group, m.member_id, m.instance_id, m.host, m.client_id, m.rack,
                             len(m.assigned), lag, sum(1 for r in mine if r.cross_rack),
                             max(known) if known else (0.0 if settled else None), rate, confidence,
                             m.member_epoch, m.target,
                             kip848.converging(m.member_epoch, info.assignment_epoch, m.assigned,
                                               m.target),
                             sum(r.lost_records or 0 for r in read) if read else None,
                             min(soonest, default=None)))
    return sorted(out, key=lambda r: (r.client_id, r.consumer_id))


def figures(snap: ClusterSnapshot, group: str, rows: Sequence[PartitionRow],
            rates: Mapping[TP, float] | None = None, stuck: frozenset[TP] = frozenset(),
            loss_seconds: Mapping[TP, float] | None = None,
            produce: Mapping[str, Mapping[int, float]] | None = None,
            needed: Consumers | None = None) -> GroupFigures:
    """The group's figures; ``rates``: consume rate per partition (records/s, nan unknown) for the
    time to catch up, ``stuck``: the partitions stuck now (counted, and left out of the time to
    catch up), ``loss_seconds``: seconds to loss per partition (nan unknown, inf never),
    ``produce``: topic -> partition -> produce rate, for the hot partitions of the group's topics;
    ``needed``: its :func:`consumers`."""
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
    read = [r for r in rows if r.retention_headroom is not None]
    return GroupFigures(group, info.state, len(info.members), len(rows), max(loads, default=0),
                        max(loads) / mean if mean > 0 else 1.0,
                        sum(1 for r in rows if r.cross_rack), by_topic, seconds,
                        _catch_up(rows, owning, rates, stuck) if rates is not None else None,
                        sum(1 for r in rows if (r.topic, r.partition) in stuck),
                        _soonest_loss(read, loss_seconds or {}),
                        min((r.retention_headroom or 0 for r in read
                             if r.lag and not r.lost_records), default=None),
                        sum(r.lost_records or 0 for r in read),
                        tuple(hot_partitions(snap, group, produce or {})), needed)


def _soonest_loss(read: Sequence[PartitionRow], loss_seconds: Mapping[TP, float]) -> float:
    """The soonest seconds to loss over rows with a log start read: 0 if one lost records, else the
    least finite one; inf when every row is known never to lose any at these rates; else (some
    unknown, none finite, or no log start read at all) nan."""
    if any(r.lost_records for r in read):
        return 0.0
    figures = [loss_seconds.get((r.topic, r.partition), math.nan) for r in read]
    finite = [s for s in figures if math.isfinite(s)]
    if finite:
        return min(finite)
    return math.inf if figures and not any(math.isnan(s) for s in figures) else math.nan


def consumers(snap: ClusterSnapshot, group: str, rows: Sequence[PartitionRow],
              capacities: Mapping[str, float] | None, produce: Mapping[str, Mapping[int, float]],
              headroom: float) -> Consumers:
    """The consumers the group needs at the produce rates of its topics' partitions (``produce``:
    topic -> partition -> records/s) and ``capacities`` (member id -> records/s; None: not
    known)."""
    rates = [(produce.get(t) or {}).get(p, math.nan) for t in sorted(snap.group_topics(group))
             for p in range(len(snap.topics.get(t, ())))]
    members = sum(1 for m in snap.groups[group].members if m.member.topics)
    capacity = float(np.median(list(capacities.values()))) if capacities else None
    known = capacity is not None and bool(rates) and not any(math.isnan(r) for r in rates)
    found = sizing.size(rates, capacity, headroom) if known and capacity is not None else None
    busy = any(r.lag for r in rows) or any(r > 0 for r in rates if not math.isnan(r))
    return Consumers(sizing.to_run(found, members, busy), found.fewest if found else None,
                     len(rates), members, capacity, headroom, known)


def hot_partitions(snap: ClusterSnapshot, group: str, produce: Mapping[str, Mapping[int, float]]
                   ) -> list[hot.HotPartition]:
    """The hot partitions (:mod:`streaming.lag.hot`) of the topics the group reads, from their
    produce rates."""
    rates = {}
    for t in sorted(snap.group_topics(group)):
        by_partition = produce.get(t) or {}
        count = len(snap.topics.get(t, ()))
        if by_partition and count:
            rates[t] = [by_partition.get(p, math.nan) for p in range(count)]
    return hot.hot_partitions(rates)


def _catch_up(rows: Sequence[PartitionRow], owning: Sequence[MemberRow], rates: Mapping[TP, float],
              stuck: frozenset[TP]) -> float | None:
    """Max member time to catch up (:func:`streaming.lag.rules.member_catch_up`); None when not
    known."""
    if not owning:
        return 0.0
    index = {m.consumer_id: i for i, m in enumerate(owning)}
    mine = [(index[r.consumer_id], r) for r in rows
            if r.consumer_id is not None and r.consumer_id in index
            and (r.topic, r.partition) not in stuck]
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
    """(topic, partition) -> member id, from a recommendations row (Delta: partitions as structs) or
    a feed message (partitions as ``[topic, partition]`` pairs)."""
    out: dict[TP, str] = {}
    for entry in (rec or {}).get("assignment") or ():
        for p in entry.get("partitions") or ():
            tp = ((p["topic"], int(p["partition"])) if isinstance(p, Mapping)
                  else (str(p[0]), int(p[1])))
            out[tp] = entry["member_id"]
    return out


def recommended_capacity(rec: Mapping[str, Any] | None) -> dict[str, tuple[float, float]]:
    """member id, and ``client:`` + client id (a member that rejoined since), -> (records/s,
    confidence s) the recommendation was made with."""
    out: dict[str, tuple[float, float]] = {}
    for e in (rec or {}).get("member_capacity") or ():
        figures = (float(e["records_per_s"]), float(e["confidence_s"]))
        out[e["member_id"]] = figures
        if e.get("client_id"):
            out.setdefault(f"client:{e['client_id']}", figures)
    return out

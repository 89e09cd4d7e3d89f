"""How good an assignment is: load, balance, rack locality and movement, as plain numbers.

Every function takes plain values (a :class:`~assignors.model.GroupSnapshot` and an
:class:`~assignors.model.Assignment`) and returns plain values, so the streaming job, the CLI, the
benchmarks and the demo share one definition of each figure.

Loads (of a partition, of a member; members of unlike capacity) are :mod:`assignors.loads`'s, the
lower bounds on the max member load :mod:`assignors.bounds`'s; both are re-exported here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field

from assignors.bounds import lower_bound, max_scaled_lower_bound
from assignors.errors import InvalidAssignment
from assignors.loads import capacity_scales, held_stuck, member_loads, partition_loads
from assignors.model import Assignment, GroupSnapshot

__all__ = [
    "InvalidAssignment",
    "Metrics",
    "capacity_scales",
    "compute_metrics",
    "count_spread",
    "cross_rack_by_member",
    "cross_rack_partitions",
    "held_stuck",
    "imbalance",
    "lower_bound",
    "max_scaled_load",
    "max_scaled_lower_bound",
    "member_loads",
    "movement",
    "partition_loads",
]


# -- loads -----------------------------------------------------------------------------------------

def max_scaled_load(snapshot: GroupSnapshot, m: Metrics) -> float:
    """The max member load of ``m`` in records at the fastest member's rate (``m.max_load`` when
    alike)."""
    scales = capacity_scales(snapshot)
    if scales is None:
        return m.max_load
    return max((load * scales[mid] for mid, load in m.member_loads.items()), default=0.0)


def imbalance(loads: Sequence[float]) -> float:
    """max / mean of member loads; 1.0 when the mean is zero (nothing to balance)."""
    if not loads:
        return 1.0
    mean = sum(loads) / len(loads)
    return 1.0 if mean <= 0 else max(loads) / mean


def count_spread(snapshot: GroupSnapshot, assignment: Assignment) -> int:
    """max - min partitions per member, over every member of the snapshot."""
    ids = {m.member_id for m in snapshot.members}
    counts = [len(assignment.get(m, ())) for m in ids]
    counts += [len(v) for k, v in assignment.items() if k not in ids]
    return max(counts) - min(counts) if counts else 0


# -- racks and movement ----------------------------------------------------------------------------

def cross_rack_partitions(snapshot: GroupSnapshot, assignment: Assignment) -> int:
    """Assigned partitions whose member's rack holds none of the partition's replicas.

    A member without a rack, or a partition whose replica racks are unknown, never counts.
    """
    return sum(cross_rack_by_member(snapshot, assignment).values())


def cross_rack_by_member(snapshot: GroupSnapshot, assignment: Assignment) -> dict[str, int]:
    """Member -> its partitions read across racks (:func:`cross_rack_partitions`, member by
    member)."""
    racks_of = {m.member_id: m.rack for m in snapshot.members}
    replica_racks = snapshot.replica_racks or {}
    out: dict[str, int] = {}
    for member, tps in assignment.items():
        rack = racks_of.get(member)
        count = 0
        for t, p in tps if rack else ():
            replicas = replica_racks.get(t)
            if (replicas is not None and rack not in replicas[p]
                    and any(r is not None for r in replicas[p])):
                count += 1
        out[member] = out.get(member, 0) + count
    return out


def _owners(snapshot: GroupSnapshot, assignment: Assignment) -> dict[str, list[str | None]]:
    """Topic -> owner of each partition (None when unowned); topics outside the metadata are
    dropped."""
    owners: dict[str, list[str | None]] = {}
    for member, tps in assignment.items():
        for t, p in tps:
            n = snapshot.topics.get(t)
            if n is None or not 0 <= p < n:
                continue
            row = owners.get(t)
            if row is None:
                row = owners[t] = [None] * n
            row[p] = member
    return owners


def movement(
    snapshot: GroupSnapshot,
    assignment: Assignment,
    current: Assignment | None = None,
    loads: Mapping[str, Sequence[float]] | None = None,
    horizon_s: float = 0.0,
) -> tuple[int, float]:
    """(partitions moved, load moved): partitions that had an owner in ``current`` and get another
    one.

    A partition nobody owned before is a new assignment, not a move. ``current`` defaults to what
    the members report they own.
    """
    if current is None:
        current = snapshot.current_assignment()
    if loads is None:
        loads = partition_loads(snapshot, horizon_s)
    before = _owners(snapshot, current)
    moved = 0
    moved_load: float = 0
    for member, tps in assignment.items():
        for t, p in tps:
            row = before.get(t)
            if row is None or not 0 <= p < len(row):
                continue
            owner = row[p]
            if owner is not None and owner != member:
                moved += 1
                moved_load += loads[t][p]
    return moved, moved_load


# -- all together ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Metrics:
    """Figures of one assignment of one snapshot."""

    member_loads: dict[str, float] = field(repr=False)
    member_counts: dict[str, int] = field(repr=False)
    total_load: float
    max_load: float
    mean_load: float
    imbalance: float
    lower_bound: float
    count_spread: int
    cross_rack_partitions: int
    partitions_moved: int
    load_moved: float
    partitions: int
    members: int

    @property
    def fully_balanced(self) -> bool:
        """Partition counts differ by at most one between members (Kafka's test property)."""
        return self.count_spread <= 1

    def to_dict(self) -> dict:
        d = asdict(self)
        for k, v in d.items():  # JSON has no inf/nan; keep figures finite and plain
            if isinstance(v, float) and not math.isfinite(v):
                d[k] = None
        return d


def compute_metrics(
    snapshot: GroupSnapshot,
    assignment: Assignment,
    current: Assignment | None = None,
    horizon_s: float = 0.0,
    bound: float | None = None,
) -> Metrics:
    """Every figure of ``assignment`` against ``snapshot`` (``current`` defaults to members' owned).

    ``bound``: the snapshot's lower bound when the caller has it already (it depends on the snapshot
    only, and is an LP for unequal subscriptions)."""
    loads = partition_loads(snapshot, horizon_s)
    per_member = member_loads(snapshot, assignment, loads=loads)
    values = list(per_member.values())
    total = sum(values)
    mean = total / len(values) if values else 0.0
    moved, moved_load = movement(snapshot, assignment, current, loads=loads)
    counts = {m.member_id: 0 for m in snapshot.members}
    for member, tps in assignment.items():
        counts[member] = len(tps)
    return Metrics(
        member_loads=per_member,
        member_counts=counts,
        total_load=total,
        max_load=max(values, default=0),
        mean_load=mean,
        imbalance=imbalance(values),
        lower_bound=lower_bound(snapshot, loads=loads) if bound is None else bound,
        count_spread=(max(counts.values()) - min(counts.values())) if counts else 0,
        cross_rack_partitions=cross_rack_partitions(snapshot, assignment),
        partitions_moved=moved,
        load_moved=moved_load,
        partitions=sum(counts.values()),
        members=len(counts),
    )

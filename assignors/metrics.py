"""How good an assignment is: load, balance, rack locality and movement, as plain numbers.

Every function takes plain values (a :class:`~assignors.model.GroupSnapshot` and an
:class:`~assignors.model.Assignment`) and returns plain values, so the streaming job, the CLI, the
benchmarks and the demo share one definition of each figure.

Load of a partition
    ``lag + produce_rate * horizon_s`` when produce rates are known, else the lag alone. With the
    default ``horizon_s = 0`` the load is the lag in records. A stuck partition its owner still
    holds (:func:`held_stuck`) weighs 0: its owner gets through none of its records, so it spends
    none of its capacity on it, and its ever-growing lag would otherwise make the owner look busier
    than it is.

Lower bound on the max member load
    A true bound: no assignment of the snapshot can have a smaller max member load. With equal
    subscriptions it is ``max(mean, heaviest partition)``. With unequal ones, partitions are grouped
    into classes by the set of members allowed to take them, members into groups by subscription,
    and the fractional min-max load is solved as a small linear program (HiGHS). The bound is read
    from a repaired dual solution, so it stays valid even when the solver stops a little above the
    optimum.

Members of different capacity
    With ``snapshot.capacity`` (records/s per member) member ``m`` takes ``w / c_m`` seconds for a
    load ``w``; :func:`capacity_scales` (the fastest capacity over each member's own) turns that
    time into records at the fastest member's rate, the unit ``balanced`` minimises (all 1.0 when
    capacities are equal or unknown).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field

from assignors.errors import InvalidAssignment
from assignors.model import Assignment, GroupSnapshot, TopicPartition

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


# -- lower bound -----------------------------------------------------------------------------------

def _effective_subscriptions(snapshot: GroupSnapshot) -> dict[str, frozenset[str]]:
    """Member -> the subscribed topics that have at least one partition."""
    return {
        m.member_id: frozenset(t for t in m.topics if snapshot.topics.get(t, 0) > 0)
        for m in snapshot.members
    }


def lower_bound(snapshot: GroupSnapshot, horizon_s: float = 0.0,
                loads: Mapping[str, Sequence[float]] | None = None) -> float:
    """A lower bound on the max member load that every valid assignment of ``snapshot`` must
    reach."""
    if loads is None:
        loads = partition_loads(snapshot, horizon_s)
    subs = _effective_subscriptions(snapshot)
    wanted = set().union(*subs.values()) if subs else set()
    topic_load = {t: sum(loads[t]) for t in wanted}
    heaviest = max((max(loads[t]) for t in wanted), default=0)
    total = sum(topic_load.values())
    if total <= 0:
        return max(heaviest, 0)
    # Members that can take nothing cannot help; the rest form groups of equal subscription.
    groups: dict[frozenset[str], int] = {}
    for topics in subs.values():
        if topics:
            groups[topics] = groups.get(topics, 0) + 1
    if len(groups) == 1:
        (count,) = groups.values()
        return max(total / count, heaviest)
    return max(_fractional_min_max(topic_load, groups), heaviest)


def max_scaled_lower_bound(snapshot: GroupSnapshot, horizon_s: float = 0.0,
                           bound: float | None = None) -> float:
    """A lower bound on :func:`max_scaled_load` for every valid assignment: the bound on the max
    load (``bound`` when known; scales are at least 1) and, with capacities, the fastest capacity
    times the whole load over the capacities of the members that can take any (all eligible)."""
    capacity = snapshot.capacity
    subs = _effective_subscriptions(snapshot)
    able = [float(capacity[mid]) for mid, topics in subs.items() if topics] if capacity else []
    if bound is not None and not able:
        return bound  # the policy's usual case: nothing to add, no loads to compute again
    loads = partition_loads(snapshot, horizon_s)
    plain = lower_bound(snapshot, loads=loads) if bound is None else bound
    if not able:
        return plain
    total = sum(sum(loads[t]) for t in set().union(*subs.values()))
    fastest = max(float(capacity[m.member_id]) for m in snapshot.members)  # type: ignore[index]
    return max(plain, fastest * total / sum(able))


def _fractional_min_max(topic_load: Mapping[str, float],
                        groups: Mapping[frozenset[str], int]) -> float:
    """Min over fractional assignments of the max member load, from below.

    Partition classes are the topics grouped by their set of eligible member groups. Primal:
    minimise T subject to sum_g x[c,g] = L_c, sum_c x[c,g] <= k_g T, x >= 0. Its dual is: maximise
    sum_c L_c u_c subject to u_c <= v_g for eligible (c, g), sum_g k_g v_g <= 1, v >= 0, and any
    feasible (u, v) is a bound. We repair the solver's dual to exact feasibility before using it.
    """
    import numpy as np
    from scipy.optimize import linprog

    group_keys = list(groups)
    by_groups: dict[tuple[int, ...], float] = {}
    for t, load in topic_load.items():
        if load <= 0:
            continue
        eligible = tuple(i for i, g in enumerate(group_keys) if t in g)
        by_groups[eligible] = by_groups.get(eligible, 0) + load
    classes = list(by_groups)
    if not classes:
        return 0.0
    scale = max(by_groups.values())  # keep the LP well scaled whatever the unit of load
    L = [by_groups[c] / scale for c in classes]
    k = [groups[g] for g in group_keys]

    pairs = [(ci, gi) for ci, c in enumerate(classes) for gi in c]
    nvar = len(pairs) + 1  # x per eligible pair, then T
    a_eq = np.zeros((len(classes), nvar))
    a_ub = np.zeros((len(group_keys), nvar))
    for j, (ci, gi) in enumerate(pairs):
        a_eq[ci, j] = 1.0
        a_ub[gi, j] = 1.0
    for gi, kg in enumerate(k):
        a_ub[gi, -1] = -kg
    cost = np.zeros(nvar)
    cost[-1] = 1.0
    res = linprog(cost, A_ub=a_ub, b_ub=np.zeros(len(group_keys)), A_eq=a_eq, b_eq=np.array(L),
                  bounds=[(0, None)] * nvar, method="highs")
    if res.status != 0:  # cannot happen for a feasible snapshot; fall back to the plain mean bound
        return sum(topic_load.values()) / sum(k)
    bound = _dual_bound(res.ineqlin.marginals, L, k, classes)
    if bound is None:
        return sum(topic_load.values()) / sum(k)
    return bound * scale * (1 - 1e-12)


def _dual_bound(marginals: Sequence[float], L: Sequence[float], k: Sequence[int],
                classes: Sequence[tuple[int, ...]]) -> float | None:
    """The bound of the solver's dual, repaired to exact feasibility (None: no usable dual), or
    the mean over all members where that is higher."""
    # HiGHS marginals: d(objective)/d(b). For "<=" rows they are <= 0; v_g = -marginal.
    v = [max(0.0, -float(x)) for x in marginals]
    norm = sum(kg * vg for kg, vg in zip(k, v, strict=True))
    if norm <= 0:
        return None
    v = [vg / norm for vg in v]
    bound = sum(L[ci] * min(v[gi] for gi in c) for ci, c in enumerate(classes))
    # The mean over all members is always valid too; keep the better of the two.
    return max(bound, sum(L) / sum(k))


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

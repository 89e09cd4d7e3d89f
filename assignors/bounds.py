"""Lower bounds on the max member load: no assignment of a snapshot goes below them, so an
assignment's distance to its bound says how much better any could do.

Lower bound on the max member load
    A true bound: no assignment of the snapshot can have a smaller max member load. With equal
    subscriptions it is ``max(mean, heaviest partition)``. With unequal ones, partitions are grouped
    into classes by the set of members allowed to take them, members into groups by subscription,
    and the fractional min-max load is solved as a small linear program (HiGHS). The bound is read
    from a repaired dual solution, so it stays valid even when the solver stops a little above the
    optimum.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from assignors.loads import partition_loads
from assignors.model import GroupSnapshot


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
    """A lower bound on :func:`assignors.metrics.max_scaled_load` for every valid assignment: the
    bound on the max load (``bound`` when known; scales are at least 1) and, with capacities, the
    fastest capacity times the whole load over the capacities of the members that can take any (all
    eligible)."""
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

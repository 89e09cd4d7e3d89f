"""Planning to a target utilisation: no member is handed more production than it can read with
room to spare, where some plan allows it.

Why. The search minimises the max member time, (lag + produce rate x ``horizon_s``) / capacity:
a look ``horizon_s`` seconds ahead. A member given more production than it can read, but no
backlog, looks fine over that horizon, and its lag grows without end after it. So a plan can
leave a slow member over its capacity rather than hand a backlog to its peers.

The rule. A member's utilisation is the produce rate of the partitions it holds over its capacity,
stuck ones included. A stuck partition stays with its owner and weighs nothing in the time
(:func:`assignors.metrics.partition_loads`), but what is produced to it still comes to its owner:
on a slow member a partition often only looks stuck, starved while its owner reads another one for
longer than the stuck rule waits, and it comes back. The plans below weigh its production there.
Only a member whose capacity was measured is held to a target: for one in
``snapshot.capacity_at_least`` the figure is a lower bound (what it reads now, never behind), and
the plan may give it more, to be measured in turn. With ``target_utilisation`` set, and both
capacities and rates known:

1. plan as usual (:func:`.solve.solve`, at ``horizon_s``); if every measured member is at or
   under the target, that is the plan;
2. else find the *floor*: how busy the group must be by what is known, the least max utilisation
   the search reaches with the rates alone, a measured member at its capacity and one never
   measured at its figure over the target (it keeps no headroom: it may be read to all of its
   lower bound, and then the measured member is at the target). The bound is the target, or the
   floor (plus ``load_tolerance``) where no plan reaches the target: no measured member is asked to
   be busier than the group must be. The first plan within the bound stands;
3. plan again, looking further ahead each time (``horizon_s`` x 4, x 16, ... :data:`STEPS` times,
   from at least :data:`SHORTEST_S`): the first plan within the bound is the plan. The further
   ahead, the more the production weighs against the backlog, so the backlog moves only as far as
   the bound allows;
4. none within it: the floor's own plan.

Every step is the deterministic search, tried in a fixed order, so the result stays deterministic.
Where the plan at the configured horizon is within the target (the usual case), nothing more runs.

Worked example. Twelve partitions of one topic, 5 records/s each (60/s in all). ``m0`` reads 12.5/s
and owns p0-p3, each 400 records behind; ``m1`` and ``m2`` were measured at 25/s and own p4-p7 and
p8-p11, caught up. Target 0.8, ``horizon_s`` 60.

- The plan at 60 s gives ``m0`` p0 and p10, ``m1`` six partitions (one of them behind) and ``m2``
  four: the max time is ``m1``'s, (400 + 60 x 30) / 25 = 88 s. But ``m1`` reads 30/s, 1.2 of its
  capacity, and its lag grows by 5 records a second for ever.
- No plan keeps every member at 0.8 (60/s against 0.8 x 62.5 = 50/s). The floor is 1.0: two
  partitions for ``m0`` (10/s) and five for each peer (25/s); the bound is 1.0 x 1.02.
- Looking 240 s ahead the plan is within it: ``m0`` keeps p0 and p1 (800 behind) at 0.8 of its
  capacity and drains them in 800 / 2.5 = 320 s; each peer takes one backlogged partition and reads
  all it can, as the group must. Its max time is ``m0``'s, 112 s: more than 88, but nobody's lag
  grows.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from assignors import utilisation as busy
from assignors.model import Assignment, GroupSnapshot

from .options import BalancedOptions
from .solve import solve

# Plans tried beyond the first, each looking four times further ahead than the one before.
STEPS = 4
FACTOR = 4.0
# The shortest horizon the steps start from, for a plan on the lag alone (``horizon_s`` 0).
SHORTEST_S = 15.0


def plan(snapshot: GroupSnapshot, opts: BalancedOptions) -> Assignment:
    """The balanced assignment of ``snapshot`` under ``opts``, kept to ``opts.target_utilisation``
    where a plan allows it (see the module docstring)."""
    first = solve(snapshot, opts)
    target = opts.target_utilisation
    worst = None if target is None else busy.measured_utilisation(snapshot, first)
    if target is None or worst is None or worst <= target:
        return first
    whole = _lower_bounds_whole(snapshot, target)
    # the rates alone, a stuck partition pinned to its owner weighing its own
    floor = solve(dataclasses.replace(snapshot, lag={}, capacity=whole),
                  dataclasses.replace(opts, horizon_s=1.0), stuck_weigh_production=True)
    least = max(busy.member_utilisation(snapshot, floor, whole).values(), default=0.0)
    bound = max(target, least * (1 + opts.load_tolerance))
    if worst <= bound:
        return first
    for ahead in _further_ahead(snapshot, opts):
        if (busy.measured_utilisation(snapshot, ahead) or 0.0) <= bound:
            return ahead
    return floor


def _further_ahead(snapshot: GroupSnapshot, opts: BalancedOptions) -> Iterator[Assignment]:
    """The plans looking :data:`FACTOR` times further ahead each, :data:`STEPS` of them."""
    horizon = max(opts.horizon_s, SHORTEST_S)
    for _ in range(STEPS):
        horizon *= FACTOR
        yield solve(snapshot, dataclasses.replace(opts, horizon_s=horizon),
                    stuck_weigh_production=True)


def _lower_bounds_whole(snapshot: GroupSnapshot, target: float) -> dict[str, float]:
    """The capacities with each unmeasured member's figure over ``target``: read to all of it, it
    is at the target's utilisation of that."""
    capacity = snapshot.capacity
    assert capacity is not None
    return {mid: c / target if mid in snapshot.capacity_at_least else c
            for mid, c in capacity.items()}

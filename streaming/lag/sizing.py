"""Consumers needed: the fewest consumers that keep every one under its capacity with headroom, and
the most that still get work.

Given each partition's produce rate (records/s) and what one consumer consumes at most (its
capacity, records/s; :mod:`streaming.lag.capacity` estimates it), a consumer may be given up to
``capacity x (1 - headroom)`` of rate: the headroom is what it keeps free to drain a backlog and
absorb bursts. :func:`size` answers

- **fewest**: the least n for which the optimiser's assignment of the partitions to n alike
  consumers keeps each at or under that load. The optimiser is LPT (heaviest partition first, each
  to the least loaded consumer), the first start of the ``balanced`` assignor
  (:mod:`assignors.balanced`), within 4/3 of the best possible max load (Graham, 1969). It starts
  from the lower bound ``ceil(total / usable)`` (no assignment fits fewer) and adds one consumer at
  a time. ``None`` when a single partition's rate exceeds the usable capacity: one partition is
  never split between consumers (:mod:`streaming.lag.hot`), so no count suffices;
- **most**: the partition count. One more consumer than partitions gets nothing to read.

Backlog is not counted: a group that keeps up at n consumers drains a backlog with the headroom.

What to run (:func:`to_run`, the number an autoscaler reads): fewest when known; the partition count
when one partition exceeds a consumer (more cannot help); while the capacity is not known yet, the
members there are now (at least one when the group has work): an autoscaler holds instead of
guessing.

Example: rates 300, 200, 200, 100, 100 records/s, capacity 500/s, headroom 0.2 (usable 400/s). Lower
bound ceil(900 / 400) = 3; LPT on 3: {300, 100}, {200, 100}, {200}: max 400 <= 400, so fewest 3,
most 5. At headroom 0.5 (usable 250/s), the 300/s partition alone is over it: fewest None.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from typing import NamedTuple


class Sizing(NamedTuple):
    fewest: int | None
    """consumers that keep each at or under the usable capacity (None: one partition alone exceeds
    it)."""
    most: int
    """consumers that all get a partition: the partition count."""


def lpt_max(rates: Sequence[float], consumers: int) -> float:
    """The max consumer load of LPT's assignment of ``rates`` to ``consumers`` alike consumers."""
    loads = [0.0] * max(consumers, 1)
    for r in sorted(rates, reverse=True):
        heapq.heapreplace(loads, loads[0] + r)
    return max(loads)


def size(rates: Sequence[float], capacity: float, headroom: float) -> Sizing:
    """Consumers needed for partitions producing ``rates`` (records/s, unknown ones left out),
    consumers of ``capacity`` records/s each, keeping ``headroom`` (a fraction in [0, 1)) of it
    free."""
    known = [float(r) for r in rates if r is not None and math.isfinite(r) and r >= 0]
    most = len(rates)
    usable = capacity * (1.0 - headroom)
    if not any(known):  # nothing produced (or nothing known): nobody is needed for the rate
        return Sizing(0, most)
    if usable <= 0 or max(known) > usable:
        return Sizing(None, most)
    # one below the bound: the float sum of partitions that fit n consumers exactly can round
    # above n x usable (3 x 5461.666448410595 sums to 3.0000000000000004 of it)
    n = max(1, math.ceil(sum(known) / usable) - 1)
    # LPT's max is at most total / n + the largest rate, so this ends by total / (usable - largest)
    while n < most and lpt_max(known, n) > usable:
        n += 1
    return Sizing(min(n, most), most)


def to_run(found: Sizing | None, members: int, busy: bool) -> int:
    """The consumers to run: ``found`` (None: the capacity is not known yet), the group's
    ``members`` now, and whether it has work (lag, or records produced)."""
    if found is None:
        return max(members, 1 if busy else 0)
    return found.most if found.fewest is None else found.fewest

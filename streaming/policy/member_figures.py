"""Per member of a recommendation: the partitions it owned, and its figures under the current and
the recommended assignment (the ``member_figures`` column of the recommendations table, read by
``rebalancer recommendations --diff`` through :mod:`streaming.proposals.diff`).

Each figure is the member's share of a figure the row has for the whole group, computed by the same
code on the same snapshot, so the row's figure is their max or sum:

- ``load_before`` / ``load_after``: records (lag, plus produce rate x ``policy.rate_horizon_s``; a
  stuck partition it holds weighs 0; :func:`assignors.metrics.member_loads`); the max is
  ``before_max_lag`` / ``after_max_lag``;
- ``rate_before`` / ``rate_after``: records/s produced to its partitions (a partition without a rate
  yet: 0);
- ``capacity``: the records/s its lag is divided by, the same before and after
  (:mod:`streaming.policy.lag_seconds`);
- ``catch_up_before_s`` / ``catch_up_after_s``: its time to catch up, stuck partitions left out; the
  max is ``before_catch_up_s`` / ``after_catch_up_s``. Null when not finite (no rate, or none known
  yet): the row's is null then too;
- ``cross_rack_before`` / ``cross_rack_after``: its partitions whose replicas are all on other
  racks; the sum is ``before_cross_rack`` / ``after_cross_rack``.

Example: C0 owns t-0 and t-1 (9,000 and 8,000 records of lag), C1 owns t-2 and t-3 (100 each); each
partition is produced to and consumed at 10/s. C0 is behind, so both are taken at its 20/s. The
recommendation gives t-1 to C1: C0 goes from load 17,000, 20/s, 850 s to 9,000, 10/s, 450 s, and C1
from 200, 20/s, 10 s to 8,200, 30/s, 410 s; ``owned`` keeps C0's t-0, t-1 and C1's t-2, t-3, so the
diff reads that C0 loses t-1 and C1 gains it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from assignors import metrics
from assignors.model import Assignment, GroupSnapshot
from streaming.contracts.recommendation import finite, records
from streaming.policy.lag_seconds import MemberSeconds


def of(snapshot: GroupSnapshot, current: Assignment, proposed: Assignment, before: metrics.Metrics,
       after: metrics.Metrics, seconds: MemberSeconds | None) -> list[dict[str, Any]]:
    """One entry per member of ``snapshot`` (sorted by member id); ``before`` / ``after``: the
    metrics of ``current`` / ``proposed``; ``seconds``: per member in ``snapshot.members`` order
    (None: not computed)."""
    cross = (metrics.cross_rack_by_member(snapshot, current),
             metrics.cross_rack_by_member(snapshot, proposed))
    out = []
    for i, m in enumerate(snapshot.members):
        mid = m.member_id
        out.append({
            "member_id": mid,
            "owned": [{"topic": t, "partition": int(p)} for t, p in sorted(current.get(mid, ()))],
            "load_before": records(before.member_loads.get(mid, 0)),
            "load_after": records(after.member_loads.get(mid, 0)),
            "rate_before": _rate(snapshot, current.get(mid, ())),
            "rate_after": _rate(snapshot, proposed.get(mid, ())),
            "capacity": None if seconds is None else _seconds(seconds.capacity[i]),
            "catch_up_before_s": None if seconds is None else _seconds(seconds.before[i]),
            "catch_up_after_s": None if seconds is None else _seconds(seconds.after[i]),
            "cross_rack_before": cross[0].get(mid, 0), "cross_rack_after": cross[1].get(mid, 0),
        })
    return sorted(out, key=lambda e: e["member_id"])


def _rate(snapshot: GroupSnapshot, tps: Iterable[tuple[str, int]]) -> float:
    total = 0.0
    for t, p in tps:
        rates = snapshot.produce_rate.get(t)
        r = rates[p] if rates is not None and 0 <= p < len(rates) else None
        if r is not None and math.isfinite(r):
            total += float(r)
    return round(total, 3)


def _seconds(value: np.floating | float) -> float | None:
    return finite(float(value))  # unrounded: the row's figure is exactly the max of these

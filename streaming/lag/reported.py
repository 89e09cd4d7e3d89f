"""A member's capacity from its own load report (:mod:`streaming.contracts.member_load`), beside
the lag's estimate (:mod:`streaming.lag.capacity`).

A consumer that reports how busy it is has a capacity at once: records/s over its busy fraction.
:func:`with_reports` puts the reports into the estimates every decision reads. A report measures
its member when the member is saturated:

- records waiting after every poll of its window (``records_lag_min`` above 0): records/s itself,
  whatever its busy figure (it read all it could; Flink's autoscaler's rate while backlogged). Live,
  on a loaded host, a consumer at its capacity with a backlog that held read busy 0.85-0.91, and
  records/s over that said 10-15% more than it could do: the slow member was left at its capacity
  and its backlog never drained;
- at or above :data:`streaming.contracts.member_load.SATURATED_BUSY`: records/s over busy;
- at or above :data:`BEHIND_BUSY` while its lag grows (more arrives on its partitions than it
  consumes, :func:`streaming.lag.capacity.behind`): records/s itself. A member that cannot keep up
  does all it can; a busy figure below 1 is then time the meter counts as idle though the poll
  works (fetching, decoding: kafka-python's poll, on a loaded host), so over busy it would read
  high.

Busy alone cannot tell a saturated consumer from one busy with what each poll costs (the fetch,
the commit); whether it keeps up can.

Once a member is measured so, a new report below :data:`COST_BUSY`, from a member with no backlog
(:mod:`streaming.state.update` leaves the cost out otherwise), that says what one record costs
(``record_cost_s``, read from the consumer's batches with their own cost taken out:
:class:`streaming.apply.load.LoadMeter`) moves its measure half way (in ratio, the geometric mean)
to one over that cost, at no less than what it consumes: a member back to speed shows it, where
busy, inflated by each small batch's commit, would keep it low. Nearer saturation the batches grow
alike and the cost says little (live, the loop's consumers catching up read 2-6x their speed).
A cost does not measure a member never measured slow: live, alike members measured by one early
reading each got moves on its noise (``balanced``). Any other report is a lower bound.

Example: C0 reports 60 records/s at busy 1.0 and C1 80/s at busy 0.5: C0 is measured at 60/s,
counted as confident at once (as it would be reporting 60/s at busy 0.85 with its lag growing);
C1 is taken at no less than 160/s (not measured: a plan may give it more, and if it cannot keep
up its next reports say so). C2, measured at 60/s when it was slow, reports 40/s at busy 0.66 (each
of its small batches has a commit) and a record's cost of 1/120 s: its measure goes to 85/s, then
on towards 120/s, where busy alone said 61/s.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from streaming.contracts.member_load import SATURATED_BUSY
from streaming.lag.capacity import AT_LEAST, CONFIDENT_S, OVER, Held

MIN_BUSY = 0.05
"""The least busy fraction a member's own load report is read at: below it, records/s over busy is
mostly the meter's rounding."""
BEHIND_BUSY = 0.8
"""The busy fraction from which a report measures a member that does not keep up (its lag grows):
one that keeps up at this figure is busy with per-poll costs, not saturated."""
COST_BUSY = 0.7
"""The busy fraction below which a report's record cost may move a measure: nearer saturation the
batches grow and the cost says little (live, a member reading 0.797 said 464/s for 120/s)."""


def reported_capacity(busy: float, records_per_s: float) -> float | None:
    """A member's capacity from its own load report (:mod:`streaming.contracts.member_load`): what
    it consumed over the share of the time it was busy (at least :data:`MIN_BUSY`); None when it
    consumed nothing (it says nothing of its speed).

    Example: 92.5 records/s while busy 0.83 of the time is 111.4 records/s; 10 records/s at busy
    0.01, at least 200 records/s."""
    if not records_per_s > 0 or not busy >= 0:
        return None
    return records_per_s / max(busy, MIN_BUSY)


def measure(busy: float, records_per_s: float, before: float | None,
            behind: bool = False, record_cost_s: float | None = None,
            records_lag_min: int | None = None) -> float | None:
    """What a member's report says it can do, as a measure: with records waiting after every poll
    (``records_lag_min`` above 0) what it consumes; at or above :data:`SATURATED_BUSY` its
    :func:`reported_capacity`; at or above :data:`BEHIND_BUSY` while ``behind`` (its lag grows)
    what it consumes; else None when it has never been measured by its reports (``before`` is
    None); below :data:`COST_BUSY` with a record's cost, the geometric mean of ``before`` and
    one over the cost (at least what it consumes); else ``before`` raised to this report's lower
    bound (a member back to speed shows it so).

    Example: 60/s at busy 0.85 while its lag grows: 60/s. Then given less it reports 40/s at busy
    0.67: still 60/s (it has not shown more); back to speed, 40/s at busy 0.33: 121/s. Reporting
    48/s at busy 0.85 while it keeps up, never measured: no measure (at least 56.5/s). 40/s at busy
    0.66 costing 1/120 s a record, after a measure of 60/s: sqrt(60 x 120) = 84.9/s. 60/s at busy
    0.88 with at least 40 records waiting after each poll: 60/s."""
    if records_lag_min is not None and records_lag_min > 0 and records_per_s > 0:
        return records_per_s
    c = reported_capacity(busy, records_per_s)
    if busy >= SATURATED_BUSY:
        return c
    if behind and busy >= BEHIND_BUSY and records_per_s > 0:
        return records_per_s
    if before is None:
        return None
    if record_cost_s is not None and record_cost_s > 0 and busy < COST_BUSY:
        return math.sqrt(before * max(1.0 / record_cost_s, records_per_s))
    return before if c is None else max(before, c)


def with_reports(held: Held, reported: Mapping[str, Sequence[Any]]) -> Held:
    """``held`` with each member's own report in place of the lag's estimate: ``reported`` is member
    identity -> [ts, busy, records/s, its :func:`measure`, whether its lag grew] (``GroupState.
    reported``). A consumer's busy time measures what it can do at once, where the lag needs
    :data:`CONFIDENT_S` of backlog: a measure counts as a confident estimate (marked
    :data:`~streaming.lag.capacity.OVER` where the report measured a member that cannot keep up); a
    report that is no measure, as a lower bound (marked :data:`~streaming.lag.capacity.AT_LEAST`)
    unless the lag measured it. ``held`` itself is left as it is (the lag's memory goes on)."""
    out = None
    for k, entry in reported.items():
        _, busy, rate = entry[:3]
        measured = entry[3] if len(entry) > 3 else None
        over = len(entry) > 4 and bool(entry[4]) and busy >= BEHIND_BUSY
        c = reported_capacity(busy, rate)
        if measured is None and c is None:
            continue
        out = dict(held) if out is None else out
        was = held.get(k)
        if measured is not None:
            out[k] = [measured, max(CONFIDENT_S, was[1] if was is not None else 0.0),
                      was[2] if was is not None else 0, None, None, None, OVER if over else None]
        elif was is None or was[1] < CONFIDENT_S:  # a measure from the lag stands above a bound
            out[k] = [c, 0.0, 0, None, None, None, AT_LEAST]
    return held if out is None else out

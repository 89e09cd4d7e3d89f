"""Lag skew: the current assignment leaves one member with far more lag than the others,
for long enough.

Five conditions, all required:

1. skew: the current assignment's imbalance (max member lag / mean member lag) is at or above
   ``skew_threshold`` for ``skew_observations`` consecutive observations, with total lag at or above
   ``min_total_lag`` records (a group with little lag is never worth a rebalance);
2. cooldown: at least ``cooldown_s`` of event time since the group's previous recommendation;
3. improvement: the recommended assignment lowers the max member lag by at least ``min_improvement``
   (a fraction), checked by ``decide`` once the assignor has run;
4. a stuck partition's lag is left out of the skew reading: moving it would not help;
5. no harm: the recommended assignment hands no member whose own last report says it does not
   keep up more than it holds, and leaves the busiest member whose capacity was measured no busier
   than it is, or than it can keep up with (:func:`streaming.policy.utilisation.no_harm`): backlog
   moved onto a member that then falls behind for good is no help.

Example (threshold 1.5, N = 3): C0 holds 9,000 records of lag, C1 holds 1,000; imbalance 1.8.
After three polls in a row at 1.8 the streak reaches 3 and ``balanced`` proposes a split with
max 5,200 (-42%), so a recommendation is made. A one-poll spike to 1.8 followed by 1.1 resets
the streak: nothing.

**Records or seconds** (``policy.skew_on``). Members consume at different rates, so the same
records can mean very different waits: C0 is 10,000 records behind and consumes 1,000/s (10 s to
catch up), C1 is 2,000 behind at 20/s (100 s). Records make C0 the heavy member (10,000 / mean
6,000: 1.67), and a rebalance would take lag off the one that is done in 10 s; seconds make it C1
(100 s / mean 55 s: 1.82), the one the group waits for. Were C1 at 200/s (10 s each), records would
still call the group skewed, seconds balanced (1.0). (Both are behind here, e.g. over a 5 s window:
a member that keeps up is taken at the rate of those behind.) With ``"seconds"`` a member's lag is
its time to catch up (:mod:`streaming.policy.lag_seconds`: its lag, stuck partitions left out, over
its capacity), the imbalance is max / mean of those, and the improvement (3.) compares the max
member time to catch up before and after (each member at the same capacity). ``min_total_lag``
stays in records.

With ``"records"`` and members of known, different capacities (:mod:`streaming.lag.capacity`), the
imbalance and the improvement read each member's lag in records at the fastest member's rate
(:func:`assignors.metrics.capacity_scales`), the unit ``balanced`` minimises: C1 above, 2,000
records at 20/s next to C0 at 1,000/s, weighs 100,000. Equal or unknown capacities leave every
figure in plain records.

A seconds reading is *unknown* when a member with lag has no finite time: no rate is known yet
(``nan``, the group's first observation) or it consumed nothing over its window (``inf``, a member
stalled or about to count as stuck; once stuck, its partitions leave the reading). An unknown
reading neither counts nor resets the streak (it holds) and never triggers; total lag under
``min_total_lag`` still resets it. A figure that is not finite never shows an improvement.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from assignors import metrics
from streaming.config import RECORDS, SECONDS

if TYPE_CHECKING:
    from streaming.state.group_state import GroupState


@dataclass(frozen=True)
class SkewReading:
    imbalance: float
    """max / mean of member lag in the unit ``on``; nan: unknown (a seconds reading with a
    member at nan/inf)."""
    total_lag: float
    max_member_lag: float
    on: str = RECORDS
    max_member_s: float | None = None
    mean_member_s: float | None = None
    max_member_scaled: float | None = None
    """records: the max member lag at the fastest member's rate, when capacities
    weighed the reading."""

    @property
    def known(self) -> bool:
        return not math.isnan(self.imbalance)

    def details(self) -> dict[str, object]:
        """What the ``lag_skew`` trigger says about the reading it was decided on."""
        out: dict[str, object] = {"on": self.on, "imbalance": round(self.imbalance, 4),
                                  "total_lag": self.total_lag,
                                  "max_member_lag": self.max_member_lag}
        if self.on == SECONDS:
            out |= {"max_member_catch_up_s": round(self.max_member_s or 0.0, 3),
                    "mean_member_catch_up_s": round(self.mean_member_s or 0.0, 3)}
        elif self.max_member_scaled is not None:
            out["max_member_lag_at_fastest_rate"] = round(self.max_member_scaled, 3)
        return out


def reading(lag: np.ndarray, seconds: np.ndarray | None = None,
            scaled: np.ndarray | None = None) -> SkewReading:
    """The reading of member ``lag`` (records), decided on ``seconds`` (per member) when given, else
    on ``scaled`` (records at the fastest member's rate) when given, else on ``lag``."""
    total, top = float(lag.sum()), float(lag.max())
    if seconds is None:
        if scaled is None:
            return SkewReading(metrics.imbalance(lag.tolist()), total, top)
        return SkewReading(metrics.imbalance(scaled.tolist()), total, top,
                           max_member_scaled=float(scaled.max()))
    if not np.isfinite(seconds).all():
        return SkewReading(math.nan, total, top, SECONDS)
    return SkewReading(metrics.imbalance(seconds.tolist()), total, top, SECONDS,
                       float(seconds.max()), float(seconds.mean()))


def records_reading(lag: np.ndarray, capacity: dict[str, float] | None,
                    ids: Sequence[str]) -> SkewReading:
    """The reading in records of member ``lag`` (``ids``' order), at the fastest member's rate when
    the capacities (member id -> records/s) are known, as balanced weighs them."""
    if capacity is None:
        return reading(lag)
    fastest = max(capacity[m] for m in ids)
    return reading(lag, scaled=lag * np.array([fastest / capacity[m] for m in ids]))


def is_skewed(reading: SkewReading, threshold: float, min_total_lag: float) -> bool:
    return reading.total_lag >= min_total_lag and reading.imbalance >= threshold


def next_streak(streak: int, reading: SkewReading, threshold: float, min_total_lag: float) -> int:
    """The streak after one more observation: +1 while skewed, back to 0 as soon as it is not,
    unchanged while the reading is unknown (above the records floor)."""
    return streak_after(streak, reading.imbalance, reading.total_lag >= min_total_lag, threshold)


def streak_after(streak: int, imbalance: float, enough_lag: bool, threshold: float) -> int:
    """:func:`next_streak` given the reading's imbalance and whether its total lag is
    at least ``min_total_lag``."""
    if enough_lag and math.isnan(imbalance):
        return streak
    return streak + 1 if enough_lag and imbalance >= threshold else 0


def streak_from(state: GroupState, ts: int) -> int:
    """The streak an observation at ``ts`` counts on from: the state's, for a newer observation;
    the one before the observation last counted, for that observation read again (more of it
    arrived), so that no observation counts twice."""
    return state.skew_streak if ts > state.skew_ts else state.skew_prev


def count(state: GroupState, ts: int, streak: int) -> None:
    """The observation at ``ts`` counted, leaving ``streak`` (worked out from
    :func:`streak_from`); the streak it counted on from is kept, for it to be read again. The one
    transition :func:`streaming.policy.recommend.skew_trigger` and
    :func:`streaming.policy.block.decided` both make."""
    if ts > state.skew_ts:
        state.skew_prev, state.skew_ts = state.skew_streak, ts
    state.skew_streak = streak


def totals_at_least(lag: np.ndarray, floor: float) -> list[bool]:
    """Per row of ``lag`` ((readings, members), each at least 0): whether its total lag as
    :func:`reading` sums it (``float(row.sum())``) is at least ``floor``. The rows are summed at
    once; a row whose sum lies so close to the floor that another order of the same additions could
    fall on its other side is summed alone."""
    totals = lag.sum(axis=1)
    # two orders of n additions of non-negative numbers differ by under 2n units in the last place
    # of the sum
    near = np.abs(totals - floor) <= totals * (4 * lag.shape[1] * np.finfo(np.float64).eps)
    out = (totals >= floor).tolist()
    for i in np.flatnonzero(near).tolist():
        out[i] = float(lag[i].sum()) >= floor
    return out


def in_cooldown(now_ms: int, last_rec_ms: int | None, cooldown_s: float) -> bool:
    return last_rec_ms is not None and now_ms - last_rec_ms < cooldown_s * 1000


def fires(imbalance: float, streak: int, now_ms: int, last_rec_ms: int | None,
          observations: int, cooldown_s: float) -> bool:
    """Whether a reading is the ``lag_skew`` trigger: its imbalance known, the streak it leaves at
    ``observations`` or more, and out of the cooldown since the last recommendation. The one rule
    :func:`streaming.policy.recommend.skew_trigger` (observation by observation) and
    :func:`streaming.policy.block.decided` (a block read ahead) both apply."""
    return (not math.isnan(imbalance) and streak >= observations
            and not in_cooldown(now_ms, last_rec_ms, cooldown_s))


def improves(before_max: float, after_max: float, min_improvement: float) -> bool:
    """Whether ``after_max`` is at least ``min_improvement`` (a fraction) below
    ``before_max`` (both finite)."""
    return (math.isfinite(before_max) and math.isfinite(after_max) and before_max > 0
            and (before_max - after_max) / before_max >= min_improvement)

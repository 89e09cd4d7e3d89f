"""Lag skew: the current assignment leaves one member with far more lag than the others, for long enough.

Four conditions, all required:

1. skew: the current assignment's imbalance (max member lag / mean member lag) is at or above
   ``skew_threshold`` for ``skew_observations`` consecutive observations, with total lag at or above
   ``min_total_lag`` (a group with little lag is never worth a rebalance);
2. cooldown: at least ``cooldown_s`` of event time since the group's previous recommendation;
3. improvement: the recommended assignment lowers the max member lag by at least ``min_improvement``
   (a fraction), checked by ``decide`` once the assignor has run;
4. a stuck partition's lag is left out of the decision: moving it would not help.

Example (threshold 1.5, N = 3): C0 holds 9,000 records of lag, C1 holds 1,000; imbalance 1.8. After three
polls in a row at 1.8 the streak reaches 3 and ``balanced`` proposes a split with max 5,200 (-42%), so a
recommendation is made. A one-poll spike to 1.8 followed by 1.1 resets the streak: nothing.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SkewReading:
    imbalance: float
    total_lag: float
    max_member_lag: float


def is_skewed(reading: SkewReading, threshold: float, min_total_lag: float) -> bool:
    return reading.total_lag >= min_total_lag and reading.imbalance >= threshold


def next_streak(streak: int, reading: SkewReading, threshold: float, min_total_lag: float) -> int:
    """The streak after one more observation: +1 while skewed, back to 0 as soon as it is not."""
    return streak + 1 if is_skewed(reading, threshold, min_total_lag) else 0


def in_cooldown(now_ms: int, last_rec_ms: int | None, cooldown_s: float) -> bool:
    return last_rec_ms is not None and now_ms - last_rec_ms < cooldown_s * 1000


def improves(before_max: float, after_max: float, min_improvement: float) -> bool:
    """Whether ``after_max`` is at least ``min_improvement`` (a fraction) below ``before_max``."""
    return before_max > 0 and (before_max - after_max) / before_max >= min_improvement

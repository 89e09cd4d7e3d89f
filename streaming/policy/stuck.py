"""Stuck partitions: lag present, committed offset not moving for K observations.

A stuck partition (a poison record, a consumer wedged on one partition) does not get better by moving
it for balance: the recommendation reports it and leaves it where it is.

Example (K = 3): t0p2's observations are committed 500, 500, 500 with end 900, 950, 990: lag present
and the committed offset still for 3 observations, so t0p2 is stuck.
"""

from __future__ import annotations

from collections.abc import Sequence


def is_stuck(history: Sequence[Sequence[int]], k: int) -> bool:
    """``history``: [ts, committed, end] oldest first. True when the last ``k`` observations all have lag
    and one committed offset."""
    if k <= 0 or len(history) < k:
        return False
    recent = history[-k:]
    committed = recent[0][1]
    return all(c == committed and e > c for _, c, e in recent)

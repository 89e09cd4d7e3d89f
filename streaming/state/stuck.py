"""Stuck partitions: lag present, committed offset not moving for K observations.

A stuck partition (a poison record, a consumer wedged on one partition) does not get better by moving
it for balance: the recommendation reports it and leaves it where it is.

Example (K = 3): t0p2's observations are committed 500, 500, 500 with end 900, 950, 990: lag present
and the committed offset still for 3 observations, so t0p2 is stuck.

The rule itself (:func:`stuck_mask`, over a window's arrays) is in :mod:`streaming.lag_time`, beside the lag
in seconds, so the collector's ``/metrics`` counts stuck partitions live by the same rule.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from streaming.lag_time import stuck_mask

__all__ = ["is_stuck", "stuck_mask"]


def is_stuck(history: Sequence[Sequence[int]], k: int) -> bool:
    """``history``: [ts, committed, end] oldest first, for one partition."""
    if not history:
        return False
    arr = np.asarray(history, dtype=np.int64)
    return bool(stuck_mask(arr[None, :, 1], arr[None, :, 2], np.array([len(arr)]), k)[0])

"""Stuck partitions: lag present, committed offset not moving for K observations.

A stuck partition (a poison record, a consumer wedged on one partition) does not get better by moving
it for balance: the recommendation reports it and leaves it where it is.

Example (K = 3): t0p2's observations are committed 500, 500, 500 with end 900, 950, 990: lag present
and the committed offset still for 3 observations, so t0p2 is stuck.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def stuck_mask(committed: np.ndarray, end: np.ndarray, n: np.ndarray, k: int) -> np.ndarray:
    """Per partition (row): its last ``k`` observations all have lag and one committed offset.

    ``committed`` and ``end`` are (partitions, depth) arrays filled oldest first, ``n`` how many columns
    of each row are filled."""
    partitions, depth = committed.shape
    if k <= 0 or k > depth:
        return np.zeros(partitions, dtype=bool)
    idx = np.clip(n[:, None] - k + np.arange(k)[None, :], 0, depth - 1)
    rows = np.arange(partitions)[:, None]
    c = committed[rows, idx]
    e = end[rows, idx]
    return (n >= k) & (c == c[:, :1]).all(axis=1) & (e > c).all(axis=1)


def is_stuck(history: Sequence[Sequence[int]], k: int) -> bool:
    """``history``: [ts, committed, end] oldest first, for one partition."""
    if not history:
        return False
    arr = np.asarray(history, dtype=np.int64)
    return bool(stuck_mask(arr[None, :, 1], arr[None, :, 2], np.array([len(arr)]), k)[0])

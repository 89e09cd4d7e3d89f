"""The change detectors of the state: membership, rack set, stuck partitions (pure functions)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from assignors.model import Member
from streaming.lag.rules import stuck_mask
from streaming.state import changes


def is_stuck(history: Sequence[Sequence[int]], k: int) -> bool:
    """``history``: [ts, committed, end] oldest first, for one partition."""
    arr = np.asarray(history, dtype=np.int64)
    return bool(stuck_mask(arr[None, :, 1], arr[None, :, 2], np.array([len(arr)]), k)[0])


def test_pieces():
    assert is_stuck([[1, 5, 9], [2, 5, 10], [3, 5, 12]], 3)
    assert not is_stuck([[1, 5, 9], [2, 6, 10], [3, 6, 12]], 3)
    assert not is_stuck([[1, 5, 5], [2, 5, 5], [3, 5, 5]], 3)  # no lag: idle, not stuck
    assert changes.rack_changes([["a", "b"]], [["b", "a"]]) == []
    assert Member("m", ("t",), instance_id="i").identity == "instance:i"

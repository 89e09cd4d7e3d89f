"""Whether each reading's total lag reaches ``min_total_lag``, for a block of readings at once
(lag_skew.totals_at_least), is what each reading's own sum says, even for totals a rounding away
from the floor."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from streaming.policy import lag_skew

lags = st.lists(st.floats(0, 1e18, allow_nan=False), min_size=1, max_size=40)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 8), lags, st.integers(0, 2**32 - 1), st.sampled_from([-2, -1, 0, 1, 2]))
def test_totals_at_least_the_floor_are_each_rows_own_sum_against_it(polls, row, seed, ulps):
    rng = np.random.default_rng(seed)
    lag = np.array([rng.permutation(row) * rng.choice([1.0, 0.5, 3.0]) for _ in range(polls)])
    # a floor at a row's own sum, or a few units in the last place from it
    lag[rng.integers(0, polls)] = row
    floor = float(np.array(row).sum())
    for _ in range(abs(ulps)):
        floor = float(np.nextafter(floor, np.inf if ulps > 0 else -np.inf))
    assert lag_skew.totals_at_least(lag, floor) == [float(r.sum()) >= floor for r in lag]
    assert lag_skew.totals_at_least(lag, 1000) == [float(r.sum()) >= 1000 for r in lag]

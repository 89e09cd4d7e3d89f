"""Consumers needed (:mod:`streaming.lag.sizing`) as properties: never below the lower bound nor
above the partition count, the fewest the optimiser fits (one fewer does not), monotone in capacity
and headroom."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from streaming.lag import sizing

rates = st.lists(st.floats(0, 1e4, allow_nan=False), min_size=1, max_size=30)
capacities = st.floats(1, 1e5)
headrooms = st.floats(0, 0.9)


@given(rates, capacities, headrooms)
def test_the_fewest_fit_and_one_fewer_does_not(r, capacity, headroom):
    found = sizing.size(r, capacity, headroom)
    usable = capacity * (1 - headroom)
    assert found.most == len(r)
    if not any(r):
        assert found.fewest == 0
    elif max(r) > usable:
        assert found.fewest is None  # one partition alone is more than a consumer may take
    else:
        n = found.fewest
        # no count holds less than the total (a float sum may round a little above it)
        assert n is not None and n * usable >= math.fsum(r) * (1 - 1e-12) and n <= len(r)
        assert sizing.lpt_max(r, n) <= usable
        if n > 1:
            assert sizing.lpt_max(r, n - 1) > usable


@given(st.floats(1, 1e4), st.integers(1, 30), st.integers(0, 5), headrooms)
def test_partitions_each_at_the_usable_rate_need_one_consumer_each(rate, k, idle, headroom):
    """The boundary the draws above reach only by chance (CI once drew 3 x 5461.666448410595,
    whose float sum is above 3 x the usable rate): the count is exact, whatever the rounding."""
    capacity = rate / (1 - headroom)
    usable = capacity * (1 - headroom)  # as size computes it
    assert sizing.size([usable] * k + [0.0] * idle, capacity, headroom).fewest == k


@given(rates, capacities, headrooms, st.floats(1, 10))
def test_more_capacity_never_needs_more_consumers(r, capacity, headroom, more):
    a, b = sizing.size(r, capacity, headroom), sizing.size(r, capacity * more, headroom)
    if a.fewest is not None:
        # the count that fit fits a larger capacity too, and the search takes the least that fits
        assert b.fewest is not None and b.fewest <= a.fewest
    assert (b.fewest is None) <= (a.fewest is None)


def test_the_module_example():
    assert sizing.size([300, 200, 200, 100, 100], 500, 0.2) == sizing.Sizing(3, 5)
    assert sizing.size([300, 200, 200, 100, 100], 500, 0.5) == sizing.Sizing(None, 5)


@given(st.integers(0, 50), st.booleans())
def test_what_to_run(members, busy):
    assert sizing.to_run(None, members, busy) == max(members, int(busy))  # unknown: hold
    # a partition beyond one consumer
    assert sizing.to_run(sizing.Sizing(None, 12), members, busy) == 12
    assert sizing.to_run(sizing.Sizing(4, 12), members, busy) == 4

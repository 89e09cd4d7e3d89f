"""The hot-partition rule (:mod:`streaming.lag.hot`) as properties: what it names stands out of its
topic by its median and its share, never half of a topic, whatever the scale or order of the
partitions."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import assume, given
from hypothesis import strategies as st

from streaming.lag import hot

rates = st.lists(st.floats(0, 1e6, allow_nan=False), min_size=1, max_size=40)


@given(rates)
def test_a_hot_partition_stands_out_by_median_and_share(values):
    r = np.array(values)
    found = hot.hot(r)
    for p in np.flatnonzero(found).tolist():
        assert (r[p] > hot.FACTOR * np.median(r) and r[p] >= hot.SHARE * r.sum() / len(r)
                and r[p] >= hot.MIN_RATE)


@given(rates)
def test_never_half_of_a_topic(values):
    # a hot partition is above the median, and at most (n - 1) // 2 values are
    assert hot.hot(np.array(values)).sum() <= (len(values) - 1) // 2


@given(rates, st.integers(0, 20), st.randoms())
def test_scale_and_order_do_not_matter(values, j, rnd):
    r = np.array(values)
    assume((r >= hot.MIN_RATE).all())
    order = list(range(len(r)))
    rnd.shuffle(order)
    # a power of two scales every float exactly
    assert hot.hot(r * 2.0**j).tolist() == hot.hot(r).tolist()
    assert hot.hot(r[order]).tolist() == hot.hot(r)[order].tolist()


@given(st.integers(2, 40), st.floats(1, 1e4), st.floats(0, 1e5))
def test_one_outlier_is_named_when_it_carries_the_topic(n, base, extra):
    r = np.full(n, base)
    r[0] = base + extra
    fair = r.sum() / n
    expected = r[0] > hot.FACTOR * np.median(r) and r[0] >= hot.SHARE * fair
    assert hot.hot(r).tolist() == [expected] + [False] * (n - 1)


def test_unknown_rates_are_never_hot_and_left_out():
    assert (hot.hot(np.array([np.nan, 100.0, 10.0, 10.0, 10.0])).tolist()
            == [False, True, False, False, False])
    assert not hot.hot(np.array([100.0, np.nan])).any()  # one known rate: nothing to compare with


def test_the_module_examples():
    found = hot.hot_partitions({"t": [100.0, 10.0, 10.0, 10.0], "u": [30.0, 10.0, 10.0, 10.0],
                                "v": [100.0, 100.0, 10.0, 10.0]})
    assert [(h.topic, h.partition) for h in found] == [("t", 0)]
    assert math.isclose(found[0].share, 100 / 130) and found[0].topic_median_per_s == 10.0

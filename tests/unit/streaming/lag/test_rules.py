"""Lag in seconds (streaming.lag.rules) over any window: exact on linear histories, never negative,
0 exactly without lag, monotone in lag, and no exception on degenerate windows (one observation,
equal times, offsets up to 2**63-1, counters that go back after a topic is re-created)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from streaming.lag import rules as L
from streaming.lag.history import LagHistory

MAX = 2**63 - 1


def arrays(rows):
    """(ts, committed, end, n) of a list of per-row [(ts, committed, end), ...] histories."""
    depth = max(1, max((len(r) for r in rows), default=1))
    ts, c, e = (np.zeros((len(rows), depth), dtype=np.int64) for _ in range(3))
    for i, r in enumerate(rows):
        for j, (t, cc, ee) in enumerate(r):
            ts[i, j], c[i, j], e[i, j] = t, cc, ee
    return ts, c, e, np.array([len(r) for r in rows], dtype=np.int64)


def one(history):
    ts, c, e, n = arrays([history])
    lag = L.latest_lag(c, e, n)
    r = L.rate(ts, c, e, n)
    age = L.oldest_age(ts, c, e, n)
    return int(lag[0]), float(L.catch_up(lag, r)[0]), float(age.seconds[0]), bool(age.estimated[0])


def test_docstring_example():
    lag, catch_up, age, estimated = one([(0, 400, 1000), (10_000, 900, 2000), (20_000, 1500, 3000)])
    assert lag == 1500 and math.isclose(catch_up, 1500 / 55) and age == 15.0 and not estimated


def test_older_than_the_window_is_extrapolated_and_flagged():
    # end grows 100/s; committed 100 is 900 records before the window's first end offset: 9 s before
    # it
    _, _, age, estimated = one([(0, 100, 1000), (10_000, 100, 2000), (20_000, 100, 3000)])
    assert age == 29.0 and estimated
    # the end offset did not move: the window's start is a lower bound
    _, catch_up, age, estimated = one([(0, 100, 1000), (10_000, 100, 1000)])
    assert age == 10.0 and estimated and catch_up == math.inf


def test_one_observation_is_unknown_with_lag_and_zero_without():
    lag, catch_up, age, _ = one([(5_000, 10, 20)])
    assert lag == 10 and math.isnan(catch_up) and math.isnan(age)
    assert one([(5_000, 20, 20)])[1:3] == (0.0, 0.0)
    assert one([])[:3] == (0, 0.0, 0.0)


def test_a_counter_reset_starts_a_new_run():
    # the topic was re-created between 20 s and 30 s: only the run from 30 s counts
    history = [(0, 5000, 9000), (10_000, 6000, 10_000), (20_000, 7000, 11_000), (30_000, 0, 1000),
               (40_000, 500, 2000)]
    lag, catch_up, age, estimated = one(history)
    assert lag == 1500 and catch_up == 1500 / 50
    # committed 500 is below both end offsets of the run (1000, 2000): 500 records before 30 s at
    # 100/s
    assert age == 15.0 and estimated


def test_member_figures():
    lag = np.array([100, 0, 50, 10])
    rate = np.array([10.0, np.nan, 0.0, np.nan])
    member = np.array([0, 0, 1, 2])
    got = L.member_catch_up(lag, rate, member, 4)
    assert got[0] == 10.0 and got[1] == math.inf and math.isnan(got[2]) and got[3] == 0.0


def test_member_capacity_takes_keeping_up_members_at_the_rate_of_those_behind():
    # C0 is behind (17,000 records at 20/s over a 20 s window), C1 keeps up (50 at 4/s), C2 owns
    # nothing
    cap = L.member_capacity(np.array([17_000.0, 50.0, 0.0]), np.array([20.0, 4.0, np.nan]), 20.0)
    assert cap.tolist() == [20.0, 20.0, 20.0]
    # nobody behind: the group's highest rate; nothing known: nan
    assert (L.member_capacity(np.array([1.0, 0.0]), np.array([30.0, 2.0]), 20.0).tolist()
            == [30.0, 30.0])
    assert np.isnan(L.member_capacity(np.array([5.0]), np.array([np.nan]), 0.0)).all()


def test_stuck_rule_is_the_states():
    committed = np.array([[500, 500, 500], [500, 510, 520]])
    end = np.array([[900, 950, 990], [900, 950, 990]])
    assert L.stuck_mask(committed, end, np.array([3, 3]), 3).tolist() == [True, False]
    assert L.stuck_mask(committed, end, np.array([2, 3]), 3).tolist() == [False, False]


# -- properties ------------------------------------------------------------------------------------

offsets = st.integers(0, MAX)
observation = st.tuples(st.integers(0, 10**13), offsets, offsets)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.lists(observation, max_size=8), max_size=6))
def test_any_window_never_raises_never_negative_zero_iff_no_lag(rows):
    """Arbitrary histories: unordered and equal times, offsets up to 2**63-1, counters going
    back."""
    ts, c, e, n = arrays(rows)
    lag = L.latest_lag(c, e, n)
    r = L.rate(ts, c, e, n)
    for which in ("committed", "end"):
        assert not (L.rate(ts, c, e, n, which) < 0).any()
    catch_up = L.catch_up(lag, r)
    age = L.oldest_age(ts, c, e, n)
    has_lag = lag > 0
    for figure in (catch_up, age.seconds):
        known = ~np.isnan(figure)
        assert (figure[known] >= 0).all()
        assert ((figure == 0) == (~has_lag & known)).all()  # 0 exactly when there is no lag
        assert (known | has_lag).all()  # unknown only with lag
    assert not (age.estimated & ~has_lag).any()
    assert (lag >= 0).all()
    for i, row in enumerate(rows):
        if row:
            assert int(lag[i]) == max(0, row[-1][2] - row[-1][1])  # exact, as Python ints


@settings(max_examples=300, deadline=None)
@given(t0=st.integers(0, 10**12), step_ms=st.integers(1, 60_000), k=st.integers(2, 8),
       produce=st.integers(0, 10**6), consume=st.integers(0, 10**6), start=st.integers(0, 2**62),
       backlog=st.integers(0, 10**9))
def test_exact_on_linear_histories(t0, step_ms, k, produce, consume, start, backlog):
    """End grows ``produce`` per step and committed ``consume`` per step, with ``backlog`` between
    them at the start: rate, catch-up and (when the committed offset is inside the window) age are
    exact."""
    history = [(t0 + i * step_ms, start + i * consume, start + backlog + i * produce)
               for i in range(k)]
    lag, catch_up, age, estimated = one(history)
    span_s = (k - 1) * step_ms / 1000
    c_last, e_last = history[-1][1], history[-1][2]
    assert lag == max(0, e_last - c_last)
    if lag == 0:
        assert catch_up == 0 and age == 0
        return
    rate = consume * (k - 1) / span_s
    if consume == 0:
        assert catch_up == math.inf
    else:
        assert math.isclose(catch_up, lag / rate, rel_tol=1e-9)
    if produce > 0:
        # the end offset was at c_last (k-1)*step - (c_last - start - backlog) / produce steps after
        # t0
        when_ms = t0 + (c_last - start - backlog) / produce * step_ms
        expected = max((history[-1][0] - when_ms) / 1000, L.MIN_AGE_S)
        assert math.isclose(age, expected, rel_tol=1e-6, abs_tol=1e-6)
        assert estimated == (c_last < history[0][2])
    else:
        assert age == span_s and estimated  # nothing produced in the window: a lower bound


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 10**6), min_size=2, max_size=8), st.integers(1, 10**5),
       st.integers(0, 10**6), st.integers(1, 10**6))
def test_monotone_in_lag_at_a_fixed_rate(gaps, consume, lag_a, more):
    """The same consumption with more lag behind it: neither figure goes down."""
    ts = np.cumsum([0, *gaps]).tolist()

    def figures(lag):
        # end offsets grow 1,000 per observation; committed trails the end by ``lag`` at the latest
        # one
        ends = [10**9 + 1000 * i for i in range(len(ts))]
        last_c = ends[-1] - lag
        history = [(t, last_c - consume * (len(ts) - 1 - i), e)
                   for i, (t, e) in enumerate(zip(ts, ends, strict=True))]
        return one(history)

    _, c_a, a_a, _ = figures(lag_a)
    _, c_b, a_b, _ = figures(lag_a + more)
    assert c_b >= c_a and a_b >= a_a


def test_lag_history_views_agree_with_the_module():
    h = LagHistory(4)
    for i, (c, e) in enumerate([(400, 1000), (900, 2000), (1500, 3000)]):
        h.observe(i * 10_000, np.array([3]), np.array([c]), np.array([e]))
    assert h.consume_rate().tolist() == [55.0]
    assert h.lag_age().seconds.tolist() == [15.0]
    assert h.window_s() == 20.0


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 6), st.integers(1, 5), st.integers(0, 7),
       st.lists(st.integers(0, 3), min_size=1, max_size=8), st.data())
def test_stuck_and_latest_read_every_history_alike_uniform_or_not(depth, rows, k, fills, data):
    # a history whose rows are all filled alike takes a shortcut (slices, not gathers): it must read
    # as any
    n = np.array([min(f, depth) for f in (fills * rows)[:rows]], dtype=np.int64)
    for uniform in (n, np.full(rows, n[0])):
        committed = np.array(data.draw(st.lists(st.integers(0, 3), min_size=rows * depth,
                                                max_size=rows * depth)),
                             dtype=np.int64).reshape(rows, depth)
        end = committed + np.array(data.draw(st.lists(st.integers(0, 2), min_size=rows * depth,
                                                      max_size=rows * depth)),
                                   dtype=np.int64).reshape(rows, depth)
        expected = [0 < k <= depth and f >= k and len(set(committed[r, f - k:f])) == 1
                    and bool((end[r, f - k:f] > committed[r, f - k:f]).all())
                    for r, f in enumerate(uniform.tolist())]
        assert L.stuck_mask(committed, end, uniform, k).tolist() == expected
        hist = LagHistory(depth, np.arange(rows))
        hist.committed, hist.end, hist.n = committed, end, uniform
        last = [max(f - 1, 0) for f in uniform.tolist()]
        assert hist.latest_lag().tolist() == [max(int(end[r, c] - committed[r, c]), 0)
                                              if uniform[r] else 0
                                              for r, c in enumerate(last)]

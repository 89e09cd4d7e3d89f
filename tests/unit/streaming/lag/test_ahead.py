"""Views read ahead over a block of polls (streaming.lag.ahead) are the views the history computes
itself after each poll, or none at all."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from streaming.lag import ahead, capacity, owners
from streaming.lag import rules as L
from streaming.lag.history import LagHistory

PARTS = np.arange(3, dtype=np.int64)
# partition 7 has no row; owner 2 owns nothing
OWNED, WHO = np.array([2, 0, 7, 1]), np.array([1, 0, 0, 1])
polls = st.lists(st.tuples(st.sampled_from([1, 1, 1, 2, 0, -1]), st.sampled_from([0, 0, 1, 5, -2]),
                           st.lists(st.integers(0, 3), min_size=3, max_size=3)),
                 min_size=1, max_size=10)


def _history(depth: int, prefix) -> tuple[LagHistory, int, int]:
    h = LagHistory(depth)
    ts, committed = 10_000, 100
    for step, moved, lags in prefix:
        ts, committed = ts + 1000 * step, committed + moved
        h.observe(ts, PARTS, committed + PARTS, committed + PARTS + np.array(lags))
    return h, ts, committed


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 5), st.integers(0, 6), polls, polls)
def test_views_read_ahead_are_the_views_after_each_poll(depth, k, prefix, block):
    h, ts, committed = _history(depth, prefix)
    stamps, c, e = [], [], []
    # in the block the lag grows (by 0 to 3 a poll): ends go down only when committed does
    lag = np.full(3, 3)
    for step, moved, more in block:
        ts, committed, lag = ts + 1000 * step, committed + moved, lag + np.array(more)
        stamps.append(ts)
        c.append(committed + PARTS)
        e.append(committed + PARTS + lag)
    views = ahead.block_views(h, np.array(stamps, dtype=np.int64), np.array(c), np.array(e), k,
                              (OWNED, WHO, 3))
    if views is None:
        return
    # up to the first poll not read ahead
    for t, cc, ee, got in zip(stamps, c, e, views, strict=False):
        h.observe(t, PARTS, cc, ee)
        fresh = LagHistory.from_bytes(h.to_bytes(), h.rows, h.depth)  # no views kept
        held = got[owners.key(OWNED, WHO, 3, k)]
        assert held[0] is OWNED and held[1] is WHO
        for a, b in zip(held[2], owners.sums(fresh, OWNED, WHO, 3, k), strict=True):
            np.testing.assert_array_equal(a, b)
        assert got["filled"] == L.filled_alike(fresh.n) and got["aligned"] == fresh.aligned()
        np.testing.assert_array_equal(got["latest_lag"], fresh.latest_lag())
        np.testing.assert_array_equal(got["consume_rate"], fresh.consume_rate())
        np.testing.assert_array_equal(got[("stuck", k)], fresh.stuck(k))
        assert got["window_s"] == fresh.window_s()
        _same_window(got, fresh, k)
        held_arrays = [a for v in got.values() for a in (v[2] if isinstance(v, tuple) else [v])]
        # seeded as they are
        assert not any(a.flags.writeable for a in held_arrays if isinstance(a, np.ndarray))


def _same_window(got: dict, fresh: LagHistory, k: int) -> None:
    """The capacity window read ahead (when it was: not where the least lags decide) is the one
    computed."""
    held = got.get(capacity.window_key(OWNED, WHO, 3, k))
    if held is None:
        return
    assert held[0] is OWNED and held[1] is WHO
    computed = capacity.window({"t": fresh}, {"t": (OWNED, WHO)}, 3, k)
    np.testing.assert_array_equal(held[2][0], computed[0])
    np.testing.assert_array_equal(held[2][1], computed[1])
    assert held[2][2] == computed[2]


def test_views_are_read_ahead_for_the_usual_block_up_to_a_counter_reset():
    h, _, _ = _history(4, [(1, 1, [1, 2, 3])] * 3)
    stamps = np.array([20_000, 21_000], dtype=np.int64)
    ok = ahead.block_views(h, stamps, np.array([[200, 201, 202]] * 2),
                           np.array([[300, 301, 302]] * 2), 3)
    reset = ahead.block_views(h, stamps, np.array([[200, 201, 202], [0, 1, 2]]),
                              np.array([[300] * 3, [9] * 3]), 3)
    late = ahead.block_views(h, stamps - 10_000, np.array([[200, 201, 202]] * 2),
                             np.array([[300, 301, 302]] * 2), 3)
    assert (ok is not None and len(ok) == 2 and reset is not None and len(reset) == 1
            and late is None)


def test_the_capacity_window_is_read_ahead_where_the_latest_lags_decide():
    # consuming 100/s, little lag: nobody backlogged
    h, ts, committed = _history(4, [(1, 100, [1, 2, 3])] * 3)
    stamps = np.array([ts + 1000, ts + 2000], dtype=np.int64)
    c = np.array([committed + 100 + PARTS, committed + 200 + PARTS])
    views = ahead.block_views(h, stamps, c, c + 3, 2, (OWNED, WHO, 3))
    assert views is not None and len(views) == 2
    for t, cc, got in zip(stamps, c, views, strict=True):
        h.observe(int(t), PARTS, cc, cc + 3)
        assert capacity.window_key(OWNED, WHO, 3, 2) in got
        _same_window(got, LagHistory.from_bytes(h.to_bytes(), h.rows, h.depth), 2)



backlogs = st.lists(st.tuples(st.sampled_from([1, 1, 2, 0]), st.sampled_from([0, 1, 5, 100, 100]),
                              st.lists(st.sampled_from([0, 0, 50, 5000]), min_size=3, max_size=3)),
                    min_size=2, max_size=20)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 6), st.integers(0, 4), backlogs, st.integers(1, 19))
def test_windows_read_ahead_where_the_least_lags_decide_are_the_windows_computed(
        depth, k, polls, cut):
    """Lag piling up faster than it is consumed, or held at a few thousand: the least lags and
    produce rates decide who is backlogged, after each poll of the block as in the history
    itself."""
    stamps, c, e = [], [], []
    ts, committed, lag = 10_000, 100, np.zeros(3, dtype=np.int64)
    for step, moved, more in polls:
        ts, committed, lag = ts + 1000 * step, committed + moved, lag + np.array(more)
        stamps.append(ts)
        c.append(committed + PARTS)
        e.append(committed + PARTS + lag)
    cut = min(cut, len(polls) - 1)
    h = LagHistory(depth)
    for t, cc, ee in zip(stamps[:cut], c[:cut], e[:cut], strict=True):
        h.observe(t, PARTS, cc, ee)
    views = ahead.block_views(h, np.array(stamps[cut:], dtype=np.int64), np.array(c[cut:]),
                              np.array(e[cut:]), k, (OWNED, WHO, 3))
    for t, cc, ee, got in zip(stamps[cut:], c[cut:], e[cut:], views or [], strict=False):
        h.observe(t, PARTS, cc, ee)
        _same_window(got, LagHistory.from_bytes(h.to_bytes(), h.rows, h.depth), k)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 6), st.integers(0, 6), st.integers(1, 10))
def test_a_block_appended_at_once_is_the_block_appended_poll_by_poll(depth, filled, polls):
    one, each = LagHistory(depth, PARTS), LagHistory(depth, PARTS)
    for h in (one, each):
        for i in range(min(filled, depth)):
            h.append(1000 * (i + 1), PARTS + i, PARTS + 2 * i, np.full(3, -1 if i % 2 else i))
    ts = 1000 * np.arange(10, 10 + polls, dtype=np.int64)
    c, e, s = (np.arange(3 * polls, dtype=np.int64).reshape(polls, 3) * k for k in (1, 2, 3))
    one.append_block(ts, c, e, s)
    for i in range(polls):
        each.append(int(ts[i]), c[i], e[i], s[i])
    assert one == each and one.to_bytes() == each.to_bytes()

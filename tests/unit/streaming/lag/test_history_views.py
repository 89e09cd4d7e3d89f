"""A LagHistory's views (kept until it changes, read off columns when every row's run is all its
observations) read as the plain per-row rules say, after every observation of any sequence: polls of
any partitions, times going back or standing still, offsets going back (a re-created topic),
histories full or not."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from streaming.lag import rules as L
from streaming.lag.history import LagHistory


def _start(ts, c, e, f: int) -> int:
    """First column of a row's latest run (``f`` columns filled), as rules.run_start defines it."""
    breaks = [j for j in range(1, f) if ts[j] <= ts[j - 1] or c[j] < c[j - 1] or e[j] < e[j - 1]]
    return max(breaks, default=0)


def _expected(h: LagHistory, k: int) -> dict[str, list]:
    out: dict[str, list] = {"lag": [], "stuck": [], "rate": [], "span": []}
    for r, f in enumerate(h.n.tolist()):
        ts, c, e = h.ts[r].tolist(), h.committed[r].tolist(), h.end[r].tolist()
        last, start = max(f - 1, 0), _start(ts, c, e, f)
        out["lag"].append(max(e[last] - c[last], 0) if f else 0)
        out["stuck"].append(0 < k <= h.depth and f >= k and len(set(c[f - k:f])) == 1
                            and all(e[j] > c[j] for j in range(f - k, f)))
        dt = float(ts[last] - ts[start]) / 1000.0
        out["rate"].append(float(c[last] - c[start]) / dt if last > start and dt > 0 else None)
        out["span"].append(ts[last] - ts[start])
    return out


# the same partitions and a committed offset standing still most of the time: runs that are all of
# every row's observations, and stuck rows, come often
polls = st.lists(st.tuples(st.sampled_from([1, 1, 1, 2, 0]),
                           st.one_of(st.just([0, 1, 2]),
                                     st.lists(st.integers(0, 4), min_size=1, max_size=4,
                                              unique=True)),
                           st.sampled_from([0, 0, 0, 1, 5, -2]), st.integers(0, 3)),
                 min_size=1, max_size=14)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 5), st.integers(0, 6), polls)
def test_views_read_as_the_rules_after_every_observation(depth, k, seq):
    h = LagHistory(depth)
    ts, committed = 0, 100
    for step, parts, moved, lag in seq:
        ts += step * 1000 - 1000  # forward, standing still or back
        committed += moved  # forward or back
        p = np.array(sorted(parts), dtype=np.int64)
        h.observe(ts, p, committed + p, committed + p + lag)
        want = _expected(h, k)
        for _ in range(2):  # computed, then as kept
            assert h.latest_lag().tolist() == want["lag"]
            assert h.stuck(k).tolist() == want["stuck"]
            rate = h.consume_rate()
            assert [None if np.isnan(x) else x for x in rate.tolist()] == want["rate"]
            assert h.window_s() == (max(want["span"]) / 1000.0 if want["span"] else 0.0)
            np.testing.assert_array_equal(h.lag_age().seconds,
                                          L.oldest_age(h.ts, h.committed, h.end, h.n).seconds)
            np.testing.assert_array_equal(h.least_lag(), L.least_lag(h.ts, h.committed, h.end, h.n))
        rows, found = h.lookup(p)
        assert found.all() and h.ids[rows].tolist() == p.tolist()


def test_a_row_whose_lag_came_after_its_offset_stopped_is_not_stuck_until_k_observations_have_lag():
    h = LagHistory(4)
    p = np.array([0, 1])
    # committed stands at 100 throughout; row 1 always has lag
    for i, lag in enumerate([0, 1, 2, 3]):
        h.observe(1000 * (i + 1), p, np.array([100, 100]), np.array([100 + lag, 105]))
        assert h.stuck(3).tolist() == [i >= 3, i >= 2]

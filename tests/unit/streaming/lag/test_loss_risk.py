"""The data-loss rule (:mod:`streaming.lag.loss_risk`) as properties: records exact, seconds the
time linear offsets take to cross, the log start's rate its growth, a member's figure its soonest
partition's."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from streaming.lag import loss_risk
from streaming.lag.history import LagHistory

offsets = st.integers(0, 2**63 - 1)
rates = st.floats(0, 1e6, allow_nan=False)


@given(committed=offsets, start=offsets, end_gap=st.integers(0, 10**6), consume=rates,
       advance=rates)
def test_records_are_exact_and_one_sided(committed, start, end_gap, consume, advance):
    end = min(max(committed, start) + end_gap, 2**63 - 1)
    risk = loss_risk.risk(np.array([committed]), np.array([end]), np.array([start]),
                          np.array([consume]), np.array([advance]))
    headroom, lost, seconds = int(risk.headroom[0]), int(risk.lost[0]), float(risk.seconds[0])
    assert headroom - lost == committed - start  # exact to 2**63-1, no float in between
    assert headroom == 0 or lost == 0
    assert (seconds == 0) == (lost > 0) or (headroom == 0 and seconds == 0)
    assert not math.isnan(seconds)


@given(headroom=st.integers(1, 10**9), lag=st.integers(1, 10**9), consume=st.floats(0, 1e4),
       gain=st.floats(1e-3, 1e4))
def test_seconds_are_when_linear_offsets_cross(headroom, lag, consume, gain):
    start, committed = 1000, 1000 + headroom
    risk = loss_risk.risk(np.array([committed]), np.array([committed + lag]), np.array([start]),
                          np.array([consume]), np.array([consume + gain]))
    t = float(risk.seconds[0])
    # at t the log start (rising consume + gain) reaches the committed offset (rising consume)
    assert math.isclose(start + (consume + gain) * t, committed + consume * t, rel_tol=1e-9)


@given(committed=st.integers(0, 10**12), headroom=st.integers(0, 10**9), consume=rates,
       advance=rates)
def test_never_while_the_log_start_does_not_gain_or_nothing_is_unread(
        committed, headroom, consume, advance):
    start = max(committed - headroom, 0)
    caught_up = loss_risk.risk(np.array([committed]), np.array([committed]), np.array([start]),
                               np.array([consume]), np.array([advance + consume + 1]))
    slower = loss_risk.risk(np.array([committed]), np.array([committed + 5]), np.array([start]),
                            np.array([advance + consume]), np.array([advance]))
    assert caught_up.seconds[0] == math.inf
    assert slower.seconds[0] == math.inf or (slower.seconds[0] == 0 and slower.lost[0] > 0)


def test_unknown_log_start_or_rate_is_unknown():
    risk = loss_risk.risk(np.array([5, 5]), np.array([9, 9]), np.array([-1, 1]),
                          np.array([1.0, np.nan]), np.array([2.0, 2.0]))
    assert (np.isnan(risk.seconds).all() and risk.headroom.tolist() == [0, 4]
            and risk.lost.tolist() == [0, 0])


@given(steps=st.lists(st.tuples(st.integers(1, 60_000), st.integers(0, 10**6)), min_size=1,
                      max_size=7))
def test_the_log_start_rate_is_its_growth_over_the_window(steps):
    ts, start = [0], [100]
    for dt, grow in steps:
        ts.append(ts[-1] + dt)
        start.append(start[-1] + grow)
    rate = loss_risk.start_rate(np.array([ts]), np.array([start]), np.array([len(ts)]))
    assert math.isclose(rate[0], (start[-1] - start[0]) / (ts[-1] / 1000.0), rel_tol=1e-9)
    # observations without a log start (an older collector) are left out: the rate is over the
    # others
    unknown = np.array([[-1, *start[1:]]])
    if len(ts) > 2:
        expected = (start[-1] - start[1]) / ((ts[-1] - ts[1]) / 1000.0)
        assert math.isclose(loss_risk.start_rate(np.array([ts]), unknown, np.array([len(ts)]))[0],
                            expected, rel_tol=1e-9)


@given(st.lists(st.tuples(st.integers(0, 3),
                          st.floats(0, 1e6) | st.just(math.inf) | st.just(math.nan),
                          st.integers(0, 100)), min_size=1, max_size=12))
def test_a_member_takes_its_soonest_known_partition(rows):
    member = np.array([m for m, _, _ in rows])
    seconds = np.array([s for _, s, _ in rows])
    lost = np.array([x if s == 0 else 0 for _, s, x in rows], dtype=np.int64)
    row_risk = loss_risk.Risk(np.arange(len(rows), dtype=np.int64), lost, seconds)
    got = loss_risk.member_risk(row_risk, member, 5)
    for m in range(5):
        mine = [(s, i) for i, (who, s, _) in enumerate(rows) if who == m]
        known = [(s, i) for s, i in mine if not math.isnan(s)]
        if not mine:
            assert got.seconds[m] == math.inf and got.lost[m] == 0
        elif not known:
            assert math.isnan(got.seconds[m])
        else:
            assert got.seconds[m] == min(s for s, _ in known)
            assert seconds[got.headroom[m]] == got.seconds[m]  # the headroom of that very row
        assert got.lost[m] == sum(lost[i] for _, i in mine)


def test_the_history_reads_the_example_of_the_module():
    """Log start 1,000 rising 50/s, committed 4,000 rising 20/s: 3,000 records of headroom closing
    at 30/s."""
    hist = LagHistory(4)
    for i, t in enumerate((0, 10_000, 20_000)):
        back = 2 - i
        hist.observe(t, np.array([0]), np.array([4000 - 200 * back]), np.array([9000]),
                     np.array([1000 - 500 * back]))
    risk = hist.retention()
    assert risk.headroom.tolist() == [3000] and risk.lost.tolist() == [0]
    assert math.isclose(risk.seconds[0], 100.0)
    hist.observe(30_000, np.array([0]), np.array([4000]), np.array([9100]), np.array([4100]))
    assert hist.retention().lost.tolist() == [100] and hist.retention().seconds.tolist() == [0.0]

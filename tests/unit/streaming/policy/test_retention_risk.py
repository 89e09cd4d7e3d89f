"""The ``retention_risk`` trigger: a member about to lose records to retention gets a recommendation
at once, where lag skew waits; once per cooldown; never without log start offsets."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from streaming.contracts import events as ev
from streaming.contracts.recommendation import LAG_SKEW, RETENTION_RISK
from tests.unit.streaming.policy.test_policy import POLICY, STEP, T0, TWO, run


def polls(count: int, start_rate: float = 50.0, consume: float = 20.0, starts: bool = True,
          first: int = 0):
    """C0 (p0, p1) and C1 (p2, p3): p0's log start rises ``start_rate``/s from 3,000 records below
    its committed offset, which rises ``consume``/s; the others are consumed at 20/s; member lags
    8,000 and 4,000 (imbalance 1.33, under lag skew's 1.5)."""
    out = []
    for i in range(first, first + count):
        ts = T0 + i * STEP
        s = STEP / 1000 * i
        c0, c = 10_000 + int(consume * s), 100 + 200 * i
        rows = [(0, c0, c0 + 5000, 7000 + int(start_rate * s)), (1, c, c + 3000, 0),
                (2, c, c + 2000, 0), (3, c, c + 2000, 0)]
        out += [ev.lag_event(ts, "g", "t0", p, c, e, log_start_offset=b if starts else None)
                for p, c, e, b in rows]
    return out


def test_a_member_about_to_lose_records_gets_load_moved_off_at_once():
    state, recs = run([TWO, *polls(2)])
    (rec,) = recs
    assert set(rec.triggers) == {RETENTION_RISK} and rec.event_ts == T0 + STEP
    c0 = rec.triggers[RETENTION_RISK]["members"]["C0"]
    # 3,000 - 300 records of headroom closing at 50 - 20 = 30/s
    assert (c0["topic"], c0["partition"], c0["headroom"], c0["lost"]) == ("t0", 0, 2700, 0)
    assert abs(c0["seconds"] - 90.0) < 1e-6
    assert c0["load_after"] < c0["load_before"] == 8000
    assert state.skew_streak < POLICY.skew_observations  # lag skew alone would not have recommended
    assert state.risk_ts == T0 + STEP


def test_once_per_cooldown_while_the_risk_stays_and_lost_records_count():
    _, recs = run([TWO, *polls(40)])
    risky = [r for r in recs if RETENTION_RISK in r.triggers]
    # 300 s cooldown at 10 s a poll: again 30 polls later, by then lost (the log start passed the
    # committed offset)
    assert [r.event_ts for r in risky] == [T0 + STEP, T0 + 31 * STEP]
    later = risky[1].triggers[RETENTION_RISK]["members"]["C0"]
    assert later["seconds"] == 0.0 and later["lost"] == 7000 + 50 * 310 - (10_000 + 20 * 310) > 0
    assert all(LAG_SKEW not in r.triggers for r in recs)


def test_never_without_log_starts_or_when_off():
    assert run([TWO, *polls(10, starts=False)])[1] == []
    assert run([TWO, *polls(10)], dataclasses.replace(POLICY, retention_risk_s=0))[1] == []


def test_a_threshold_shorter_than_the_time_left_waits():
    # 90 s left at the second poll: a 60 s threshold waits until the headroom is down to 60 s (p0 at
    # 1,800)
    _, recs = run([TWO, *polls(6)], dataclasses.replace(POLICY, retention_risk_s=60))
    (rec,) = recs
    assert (rec.event_ts == T0 + 4 * STEP
            and rec.triggers[RETENTION_RISK]["members"]["C0"]["seconds"] == 60.0)


@settings(max_examples=40, deadline=None)
@given(start_rate=st.floats(0, 200), consume=st.floats(0, 200), threshold=st.floats(1, 10_000))
def test_fires_exactly_when_the_rule_says_so(start_rate, consume, threshold):
    """At the second poll the rule reads headroom 3,000 minus what the log start gained on the
    committed offset over 10 s (whole records), closing at the difference of the two measured
    rates."""
    policy = dataclasses.replace(POLICY, retention_risk_s=threshold)
    _, recs = run([TWO, *polls(2, start_rate, consume)], policy)
    c0, s0 = 10_000 + int(consume * 10), 7000 + int(start_rate * 10)
    closing = (s0 - 7000) / 10 - (c0 - 10_000) / 10
    lost = s0 > c0
    due = lost or (closing > 0 and (c0 - s0) / closing <= threshold)
    assert bool(recs) == due

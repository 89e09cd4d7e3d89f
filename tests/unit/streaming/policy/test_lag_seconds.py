"""A recommendation's lag in seconds: before/after time to catch up and the lag's age, from the
history."""

from __future__ import annotations

import math

from streaming.contracts import events as ev
from streaming.policy.lag_seconds import figures
from streaming.policy.recommend import process
from streaming.state.group_state import GroupState
from tests.unit.streaming.policy.test_policy import POLICY, SKEWED, STEP, T0, TWO, poll

H = POLICY.capacity_headroom  # the policy's, as the job passes it


def _state(polls, lags=SKEWED, consumed=None):
    """TWO's group after ``polls`` polls; partition p's committed offset grows ``consumed[p]`` per
    poll."""
    state = GroupState("g")
    events = [TWO]
    for i in range(polls):
        ts = T0 + i * STEP
        events += poll(ts, lags, {p: 10**6 + i * (consumed or {}).get(p, 0) for p in lags})
    process(state, events, POLICY)
    return state


def test_docstring_example():
    # C0 consumes 50 + 50 per second, C1 20 + 20 (200 per 10 s poll each)
    state = _state(3, {0: 9000, 1: 8000, 2: 100, 3: 100}, {0: 500, 1: 500, 2: 200, 3: 200})
    current = {"C0": [("t0", 0), ("t0", 1)], "C1": [("t0", 2), ("t0", 3)]}
    split = {"C0": [("t0", 0), ("t0", 2)], "C1": [("t0", 1), ("t0", 3)]}
    got = figures(state, ["C0", "C1"], current, split, POLICY.stuck_observations, H)
    assert got.before == 170.0 and got.after == 91.0
    # same assignment, same figure
    assert figures(state, ["C0", "C1"], current, current, 3, H).after == got.before
    # end offsets grow 500 + 9000 ... per poll: the lag at partition 0 is 9,000 records behind a
    # constant end-committed distance, so its oldest record is 9000 / (500 per 10 s) = 180 s old
    assert got.age == 180.0


def test_recommendation_rows_carry_the_seconds():
    state = _state(2, consumed={0: 500, 1: 500, 2: 200, 3: 200})
    ts = T0 + 2 * STEP
    recs = process(state,
                   poll(ts, SKEWED,
                        {p: 10**6 + 2 * c for p, c in {0: 500, 1: 500, 2: 200, 3: 200}.items()}),
                   POLICY)
    assert [list(r.triggers) for r in recs] == [["lag_skew"]]
    row = recs[0].to_row()
    assert row["before_catch_up_s"] == 170.0 and row["after_catch_up_s"] < row["before_catch_up_s"]
    assert row["lag_age_s"] == 180.0
    assert "before_catch_up_s" not in recs[0].feed_message()["before"]  # the feed is unchanged


def test_nothing_consumed_is_unbounded_and_one_observation_unknown_both_null_in_rows():
    stopped = _state(3)  # committed offsets never move: every member with lag is unbounded
    current = {"C0": [("t0", 0), ("t0", 1)], "C1": [("t0", 2), ("t0", 3)]}
    got = figures(stopped, ["C0", "C1"], current, current, stuck_after=99, headroom=H)
    assert got.before == math.inf and got.after == math.inf and got.age > 0
    once = _state(1)
    got = figures(once, ["C0", "C1"], current, current, stuck_after=99, headroom=H)
    assert math.isnan(got.before) and math.isnan(got.age)


def test_stuck_partitions_are_left_out_of_catch_up_not_of_age():
    # partition 0 stuck (committed still for 3 polls), the others consumed
    state = _state(3, consumed={0: 0, 1: 500, 2: 200, 3: 200})
    current = {"C0": [("t0", 0), ("t0", 1)], "C1": [("t0", 2), ("t0", 3)]}
    got = figures(state, ["C0", "C1"], current, current, stuck_after=3, headroom=H)
    assert got.before == 8000 / 50  # partition 1 alone, at its 50/s
    # age: partition 1's 8,000 records at 50/s; stuck partition 0's end offset stood still (this
    # helper keeps its lag constant), so its age is the window (20 s) as a lower bound, and the max
    # is partition 1's
    assert got.age == 160.0
    assert state.lag["t0"].lag_age().seconds.tolist()[0] == 20.0


def test_a_member_that_joins_is_taken_at_the_groups_rate():
    state = _state(3, consumed={0: 500, 1: 500, 2: 200, 3: 200})
    process(state, [ev.members_event(T0 + 3 * STEP, "g", 2, "range", [
        ev.member_entry(mid, ["t0"], owned, client_id=f"c-{mid}") for mid, owned in
        (("C0", [("t0", 0), ("t0", 1)]), ("C1", [("t0", 2), ("t0", 3)]), ("C2", []))])], POLICY)
    current = {"C0": [("t0", 0), ("t0", 1)], "C1": [("t0", 2), ("t0", 3)], "C2": []}
    proposed = {"C0": [("t0", 1)], "C1": [("t0", 2), ("t0", 3)], "C2": [("t0", 0)]}
    got = figures(state, ["C0", "C1", "C2"], current, proposed, 3, H)
    assert got.before == 170.0 and got.after == 90.0  # C2 at C0's 100/s: 9,000 / 100

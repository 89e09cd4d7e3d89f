"""Each member's capacity estimate: measured while backlogged, taken from its peers otherwise, kept
in the state."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from streaming.contracts import events as ev
from streaming.lag import capacity
from streaming.policy.recommend import process
from streaming.state.group_state import GroupState
from tests.unit.streaming.policy.test_policy import POLICY, STEP, T0, TWO, members
from tests.unit.streaming.policy.test_skew_on_seconds import polls

V4_BLOB = Path(__file__).parents[3] / "data" / "group_state_v4.bin"
NEVER = dataclasses.replace(POLICY, min_improvement=2.0)  # no recommendation: the estimates alone
# C0 far behind at 500/s; C1 keeps up at 40/s (its lag is what one poll's production leaves)
BEHIND_AND_KEEPING_UP = {0: (50_000, 250), 1: (50_000, 250), 2: (300, 20), 3: (300, 20)}


def run(events, state=None, policy=NEVER):
    state = state or GroupState("g")
    process(state, events, policy)
    return state


def estimates(state, stuck_after):
    """The capacities of the state's members, as the policy reads them."""
    return capacity.estimates(state.capacity, state.lag, state.owners, stuck_after,
                              POLICY.capacity_headroom)


def test_a_backlogged_member_is_measured_and_one_that_keeps_up_is_taken_at_the_slowest_measure():
    state = run([TWO, *polls(BEHIND_AND_KEEPING_UP, 4)])
    found = estimates(state, 3)
    # three polls 10 s apart: the first window 20 s, then 10 s more
    assert found["C0"] == capacity.Capacity(500.0, 30.0, True)
    # C0 holds its lag (nothing over its capacity): C1, consuming 40/s, is taken at the slowest
    # measure
    assert found["C1"] == capacity.Capacity(500.0, 0.0, False)
    assert (capacity.records_per_s(state.capacity, state.lag, state.owners, 3, 0.2)
            == {"C0": 500.0, "C1": 500.0})


def test_an_unmeasured_member_is_taken_at_least_at_what_it_consumes():
    fast_keeper = {**BEHIND_AND_KEEPING_UP, 2: (300, 800), 3: (300, 800)}
    found = estimates(run([TWO, *polls(fast_keeper, 4)]), 3)
    assert (found["C0"].records_per_s == 500.0
            and found["C1"] == capacity.Capacity(1600.0, 0.0, False))


def moving(count: int, spec: dict[int, tuple[int, float, float]]) -> list[dict]:
    """``count`` polls 10 s apart; ``spec``: partition -> (lag at first, consumed/s, produced/s)."""
    out = []
    for i in range(count):
        for p, (lag, consumed, produced) in spec.items():
            t = i * STEP / 1000
            out.append(ev.lag_event(T0 + i * STEP, "g", "t0", p, 10**6 + int(consumed * t),
                                    10**6 + lag + int(produced * t)))
    return out


def test_while_a_member_is_over_its_capacity_the_others_are_taken_as_the_ablest_with_headroom():
    # C0 consumes 500/s while 600/s arrive: its lag grows; C1 keeps up
    over = {0: (50_000, 250, 300), 1: (50_000, 250, 300)}
    for each, taken in ((20, 500.0), (800, 2000.0)):
        state = run([TWO, *moving(5, {**over, 2: (300, each, each), 3: (300, each, each)})])
        found = estimates(state, 3)
        # consuming 40/s: 50/s with 0.2 to spare, below C0's 500/s, the ablest shown; consuming
        # 1,600/s: 2,000/s
        assert found["C0"].measured and found["C1"] == capacity.Capacity(taken, 0.0, False)
        no_headroom = capacity.estimates(state.capacity, state.lag, state.owners, 3, 0.0)
        assert no_headroom is not None
        assert no_headroom["C1"].records_per_s == max(500.0, 2 * each)


def test_nothing_known_until_some_member_was_behind():
    state = run([TWO, *polls({p: (300, 20) for p in range(4)}, 4)])
    assert state.capacity == {} and estimates(state, 3) is None
    assert estimates(run([TWO, *polls(BEHIND_AND_KEEPING_UP, 1)]), 3) is None  # no rate yet


def test_the_estimate_follows_a_member_that_slows_down():
    state = run([TWO, *polls(BEHIND_AND_KEEPING_UP, 4)])
    slower = {**BEHIND_AND_KEEPING_UP, 0: (60_000, 50), 1: (60_000, 50)}
    for i in range(4, 40):
        run(polls(slower, 1, start=i), state)
    c0 = estimates(state, 3)["C0"]
    assert 100.0 < c0.records_per_s < 200.0 and c0.confidence_s == 30.0 + 36 * 10.0


def test_a_poll_in_pieces_and_a_resent_one_count_once():
    events = [TWO, *polls(BEHIND_AND_KEEPING_UP, 5)]
    whole = run(events)
    state = GroupState("g")
    for i in range(5):
        poll = polls(BEHIND_AND_KEEPING_UP, 1, start=i)
        for piece in ([TWO, *poll[:1]] if i == 0 else poll[:1], poll[1:], poll):
            state = run(piece, GroupState.from_bytes(state.to_bytes()))
    assert state.capacity == whole.capacity


def test_kept_by_identity_across_a_rejoin_and_forgotten_when_gone():
    state = run([TWO, *polls(BEHIND_AND_KEEPING_UP, 4)])
    rejoined = members(("C0-new", [("t0", 0), ("t0", 1)], None),
                       ("C1", [("t0", 2), ("t0", 3)], None))
    rejoined = {**rejoined, "ts": T0 + 4 * STEP, "generation": 2,
                "members": [dict(m, client_id="c-C0") if m["member_id"] == "C0-new" else m
                            for m in rejoined["members"]]}
    run([rejoined, *polls(BEHIND_AND_KEEPING_UP, 1, start=4)], state)
    assert estimates(state, 3)["C0-new"].measured
    alone = members(("C1", [("t0", p) for p in range(4)], None))
    run([{**alone, "ts": T0 + 5 * STEP, "generation": 3},
         *polls(BEHIND_AND_KEEPING_UP, 1, start=5)], state)
    assert list(state.capacity) == ["client:c-C1@"]


def test_the_state_keeps_the_estimates_and_a_version_4_state_reads_without_them():
    state = run([TWO, *polls(BEHIND_AND_KEEPING_UP, 4)])
    again = GroupState.from_bytes(state.to_bytes())
    assert again == state and again.capacity == state.capacity
    # two skewed polls of TWO's group, main before capacities
    old = GroupState.from_bytes(V4_BLOB.read_bytes())
    assert (old.capacity == {} and old.skew_streak == 2
            and [m.member_id for m in old.members] == ["C0", "C1"])
    recs = process(old, [ev.lag_event(T0 + 2 * STEP, "g", "t0", p, 1020, 1020 + lag)
                         for p, lag in {0: 9000, 1: 8000, 2: 100, 3: 100}.items()], POLICY)
    assert [list(r.triggers) for r in recs] == [["lag_skew"]]


def test_a_recommendation_row_says_which_capacities_it_was_made_with():
    state = GroupState("g")
    recs = process(state, [TWO, *polls(BEHIND_AND_KEEPING_UP, 4)], POLICY)
    assert [list(r.triggers) for r in recs] == [["lag_skew"]]
    assert json.loads(recs[0].to_row()["member_capacity"]) == [
        {"member_id": "C0", "client_id": "c-C0", "records_per_s": 500.0, "confidence_s": 20.0,
         "measured": True},
        {"member_id": "C1", "client_id": "c-C1", "records_per_s": 500.0, "confidence_s": 0.0,
         "measured": False}]
    # unknown
    assert dataclasses.replace(recs[0], member_capacity=None).to_row()["member_capacity"] is None


def _rising(i: int, start_lag: int, grow: int, rate: int) -> list[dict]:
    """Poll ``i`` of C1's partitions 2 and 3: each consumed at ``rate``/s, its lag ``start_lag`` +
    ``grow``/s."""
    out = []
    for p in (2, 3):
        c = 10**6 + rate * i * 10
        out.append(ev.lag_event(T0 + i * STEP, "g", "t0", p, c, c + start_lag + grow * i * 10))
    return out


def test_a_member_whose_lag_grows_from_little_is_measured_once_it_holds_ten_seconds_of_its_rate():
    # C1 consumes 30/s a partition and gets 35/s: its lag grows 5/s from 100 and never falls. At
    # 60/s its lag reaches 60 s of its rate (BACKLOG_S) only after ~700 s; over the 70 s window it
    # holds LEAST_S (600) from the poll at 110 s
    state = run([TWO])
    seen = []
    for i in range(14):
        run([*polls({0: (50, 500), 1: (50, 500)}, 1, start=i), *_rising(i, 100, 5, 30)], state)
        found = estimates(state, 3)
        seen.append(None if found is None else (found["C1"].records_per_s, found["C1"].measured))
    first = next(i for i, f in enumerate(seen) if f is not None)
    assert 8 <= first <= 13 and seen[first] == (60.0, True) and seen[-1] == (60.0, True)


def test_a_member_that_holds_a_steady_lag_above_ten_seconds_is_not_measured():
    # C1 runs 15 s late by design (long batches): lag held at 900 a partition while it consumes what
    # arrives
    state = run([TWO, *polls({0: (50, 500), 1: (50, 500), 2: (900, 30), 3: (900, 30)}, 12)])
    assert estimates(state, 3) is None and state.capacity == {}

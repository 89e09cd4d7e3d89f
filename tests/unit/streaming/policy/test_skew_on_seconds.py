"""``policy.skew_on = "seconds"``: lag skew read as each member's time to catch up, and the
improvement judged on the max member time to catch up; unknown readings hold the streak;
deterministic however it is batched."""

from __future__ import annotations

import dataclasses
import itertools
import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streaming import config
from streaming.contracts import events as ev
from streaming.errors import ConfigError
from streaming.policy import lag_skew
from streaming.policy.recommend import process, skew_reading
from streaming.state.group_state import GroupState
from tests.unit.streaming.policy.test_policy import POLICY, STEP, T0, TWO, members

H = POLICY.capacity_headroom  # the policy's, as the job passes it

SECONDS = dataclasses.replace(POLICY, skew_on="seconds")
THREE = members(("C0", [("t0", 0), ("t0", 1)], None), ("C1", [("t0", 2), ("t0", 3)], None),
                ("C2", [("t0", 4), ("t0", 5)], None))


def polls(spec, count, start=0, base=10**6):
    """``count`` polls from poll ``start``; ``spec``: partition -> (lag, consume rate per s). The
    committed offset grows at the rate and the end offset stays ``lag`` ahead (rate 0: a stuck
    partition)."""
    out = []
    for i in range(start, start + count):
        for p, (lag, rate) in spec.items():
            c = base + int(rate * i * STEP / 1000)
            out.append(ev.lag_event(T0 + i * STEP, "g", "t0", p, c, c + lag))
    return out


def run(events, policy, state=None):
    state = state or GroupState("g")
    return state, process(state, events, policy)


# C0 100,000 behind at 1,000/s, C1 20,000 at 200/s: 100 s each. Both stay behind over the whole
# window (70 s).
EVEN_WAIT = {0: (50_000, 500), 1: (50_000, 500), 2: (10_000, 100), 3: (10_000, 100)}
# C0 8,000 at 1,000/s keeps up (taken at its own rate: 8 s); C1 12,000 behind at 60/s: 200 s.
SLOW_C1 = {0: (4_000, 500), 1: (4_000, 500), 2: (6_000, 30), 3: (6_000, 30)}


def test_with_measured_capacities_records_are_read_at_the_fastest_rate_and_agree_with_seconds():
    events = [TWO, *polls(EVEN_WAIT, 8)]
    state, by_records = run(events, POLICY)
    # plain records would read 100,000 / 60,000 (skewed); both members measured behind (1,000/s and
    # 200/s), C1's 20,000 weigh 100,000 at C0's rate: balanced, as balanced itself and the seconds
    # see it
    reading = skew_reading(state, POLICY.stuck_observations, H)
    assert (reading.imbalance == 1.0 and reading.max_member_lag == 100_000
            and reading.max_member_scaled == 100_000)
    assert by_records == [] and state.skew_streak == 0
    state, by_seconds = run(events, SECONDS)
    assert by_seconds == [] and state.skew_streak == 0
    reading = skew_reading(state, SECONDS.stuck_observations, H, on="seconds")
    assert reading.imbalance == 1.0 and reading.max_member_s == 100.0


def test_the_slow_member_is_found_in_records_at_the_fastest_rate_as_in_seconds():
    policy = dataclasses.replace(SECONDS, min_improvement=0.1)
    events = [TWO, *polls(SLOW_C1, 5)]
    # plain records would read 12,000 / 10,000 = 1.2 (not skewed); at C0's 1,000/s C1's 12,000 weigh
    # 200,000
    _, by_records = run(events, dataclasses.replace(policy, skew_on="records"))
    # the capacities count from the second poll with a rate, when C1's estimate rests on 20 s of
    # backlog (capacity.CONFIDENT_S): the streak of three ends a poll after the seconds' one
    assert [(r.event_ts, list(r.triggers)) for r in by_records] == [(T0 + 4 * STEP, ["lag_skew"])]
    skew = by_records[0].triggers["lag_skew"]
    assert skew["max_member_lag"] == 12_000 and skew["max_member_lag_at_fastest_rate"] == 200_000
    assert skew["imbalance"] == round(200_000 / 104_000, 4) and skew["improvement"] == 0.9
    _, recs = run(events, policy)
    assert [r.assignment for r in recs] == [r.assignment for r in by_records]
    # the first poll has no rate yet (the streak holds at 0); the streak reaches 3 at the fourth
    assert [(r.event_ts, list(r.triggers)) for r in recs] == [(T0 + 3 * STEP, ["lag_skew"])]
    skew = recs[0].triggers["lag_skew"]
    assert skew["on"] == "seconds" and skew["observations"] == 3
    assert skew["max_member_catch_up_s"] == 200.0 and skew["mean_member_catch_up_s"] == 104.0
    assert skew["imbalance"] == round(200 / 104, 4)
    row = recs[0].to_row()
    assert row["before_catch_up_s"] == 200.0
    # balanced balances time at the capacities (C1 measured at 60/s, C0 keeping up at 1,000/s): all
    # four partitions to C0, 20,000 / 1,000 = 20 s, where any one of them would keep C1 busy 66 s or
    # more
    assert (row["after_catch_up_s"] == 20.0
            and [m["partitions"] for m in recs[0].assignment][1] == [])
    assert skew["improvement"] == 0.9


def test_metrics_example_neither_records_nor_seconds_chase_the_stuck_partition():
    """docs/operating.md's metrics example (scraped when a stuck partition's lag counted as its
    owner's load): before 28,547 -> after 18,537 records, 232.5 -> 232.7 s. C0 holds a lagging
    partition and a stuck one. In records the recommendation "improved" only by the stuck lag; with
    the stuck partition weighing nothing on its owner, C0's lagging partition alone is the max in
    either unit and no assignment lowers it. Records are read at the fastest member's rate
    (capacities C0 80/s, C1 30/s; C2 never behind, and nobody over capacity, at the slowest measure,
    30/s)."""
    spec = {0: (18_490, 80), 1: (10_057, 0), 2: (4_101, 20), 3: (2_417, 10), 4: (18, 10),
            5: (12, 10)}
    events = [THREE, *polls(spec, 10)]
    for policy in (POLICY, SECONDS):
        state, recs = run(events, policy)
        # skewed, but no improvement
        assert recs == [] and state.skew_streak >= policy.skew_observations
    state, _ = run(events, POLICY)
    reading = skew_reading(state, POLICY.stuck_observations, H)
    # C0, the fastest
    assert reading.max_member_lag == 18_490 and reading.max_member_scaled == 18_490
    assert (round(reading.imbalance, 4)
            == round(18_490 / ((18_490 + 6_518 * 80 / 30 + 30 * 80 / 30) / 3), 4))


def test_unknown_readings_hold_the_streak():
    # no recommendation resets the streak here
    never = dataclasses.replace(SECONDS, min_improvement=2.0)
    state, _ = run([TWO, *polls(SLOW_C1, 1)], never)
    # no rate yet: nan
    assert state.skew_streak == 0 and not skew_reading(state, 3, H, on="seconds").known
    run(polls(SLOW_C1, 2, start=1), never, state)
    assert state.skew_streak == 2
    # the topic is re-created (offsets start over): every partition's run restarts, no rate is known
    run(polls(SLOW_C1, 1, start=3, base=0), never, state)
    assert state.skew_streak == 2 and not skew_reading(state, 3, H, on="seconds").known
    run(polls(SLOW_C1, 1, start=4, base=0), never, state)
    assert state.skew_streak == 3


def test_a_member_that_consumes_nothing_holds_the_streak_until_its_partitions_are_stuck():
    stalled = {**SLOW_C1, 2: (6_000, 0), 3: (6_000, 0)}
    policy = dataclasses.replace(SECONDS, stuck_observations=5)
    state, recs = run([TWO, *polls(stalled, 4)], policy)
    reading = skew_reading(state, 5, H, on="seconds")
    assert recs == [] and state.skew_streak == 0 and not reading.known  # C1 at inf
    # records read it
    assert reading.total_lag == 20_000 and skew_reading(state, 5, H).imbalance == 1.2
    # stuck from the fifth poll: C1's partitions leave the reading, C0's 8,000 against 0 is skewed
    run(polls(stalled, 1, start=4), policy, state)
    assert state.skew_streak == 1 and skew_reading(state, 5, H, on="seconds").imbalance == 2.0


def test_the_rules_on_unknown_figures():
    unknown = lag_skew.reading(np.array([6_000.0, 100.0]), np.array([math.inf, 1.0]))
    assert not unknown.known and lag_skew.next_streak(2, unknown, 1.5, 1000) == 2
    below_floor = lag_skew.reading(np.array([600.0, 100.0]), np.array([math.nan, 1.0]))
    # little lag never matters, known or not
    assert lag_skew.next_streak(2, below_floor, 1.5, 1000) == 0
    assert not lag_skew.improves(math.inf, 5.0, 0.2) and not lag_skew.improves(10.0, math.nan, 0.2)


def test_a_poll_split_across_batches_counts_once_and_is_read_whole():
    policy = dataclasses.replace(SECONDS, min_improvement=0.1)
    clean, clean_recs = run([TWO, *polls(SLOW_C1, 4)], policy)
    state, recs = GroupState("g"), []
    for i in range(4):
        poll = polls(SLOW_C1, 1, start=i)
        # the first half alone reads C0 only (C1's partitions not yet observed at this ts)
        for piece in ([TWO, *poll[:2]] if i == 0 else poll[:2], poll[2:]):
            state = GroupState.from_bytes(state.to_bytes())
            recs += process(state, piece, policy)
    assert [r.to_row() for r in recs] == [r.to_row() for r in clean_recs] and len(recs) == 1
    assert state.skew_streak == clean.skew_streak == 0 and state.version == clean.version == 1


def _events(rng: random.Random, count: int) -> list[dict]:
    """TWO's group over ``count`` polls with per-partition rates and lags that change now and
    then."""
    events: list[dict] = [TWO]
    committed = dict.fromkeys(range(4), 10**6)
    for i in range(count):
        for p in range(4):
            committed[p] += rng.choice([0, 50, 300, 5_000])
            lag = rng.choice([100, 2_000, 9_000, 40_000])
            events.append(ev.lag_event(T0 + i * STEP, "g", "t0", p, committed[p],
                                       committed[p] + lag))
    return events


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 6), st.integers(0, 6))
def test_same_events_in_any_batching_give_the_same_recommendations(seed, cuts, resends):
    rng = random.Random(seed)
    count = 20
    events = _events(rng, count)
    _, whole = run(events, SECONDS)
    ts_cuts = sorted(rng.sample(range(1, count), min(cuts, count - 1)))
    bounds = [T0 - 1, *[T0 + c * STEP - 1 for c in ts_cuts], T0 + count * STEP]
    batches = [[e for e in events if lo < e["ts"] <= hi] for lo, hi in itertools.pairwise(bounds)]
    for _ in range(resends):  # copies of earlier lag rows re-sent into the same or a later batch
        src = rng.randrange(len(batches))
        batches[rng.randrange(src, len(batches))].append(dict(rng.choice(batches[src])))
    state, pieces = GroupState("g"), []
    for batch in batches:
        rng.shuffle(batch)
        state = GroupState.from_bytes(state.to_bytes())
        pieces += process(state, batch, SECONDS)
    assert [r.to_row() for r in pieces] == [r.to_row() for r in whole]


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.lists(st.integers(1, 80), max_size=8))
def test_polls_cut_anywhere_count_each_observation_once(seed, cuts):
    """Cuts inside polls too: with no recommendation possible (the improvement can never reach
    200%), the streak is a function of the observations alone, whatever the batches."""
    rng = random.Random(seed)
    policy = dataclasses.replace(SECONDS, min_improvement=2.0)
    events = _events(rng, 20)
    clean, _ = run(events, policy)
    state = GroupState("g")
    for lo, hi in itertools.pairwise([0, *sorted(set(cuts)), len(events)]):
        state = GroupState.from_bytes(state.to_bytes())
        assert process(state, events[lo:hi], policy) == []
    assert (state.skew_streak, state.skew_prev,
            state.skew_ts) == (clean.skew_streak, clean.skew_prev, clean.skew_ts)


def test_setting_is_checked_at_load():
    assert config.load(None).policy.skew_on == "records"
    assert config.load(None, ["policy.skew_on=seconds"]).policy.skew_on == "seconds"
    with pytest.raises(ConfigError,
                       match="policy.skew_on: 'minutes' is not one of records, seconds"):
        config.load(None, ["policy.skew_on=minutes"])

"""A group's lag polls in one call (their histories' views read ahead, streaming.lag.ahead) or one
call each give the same state and recommendations, byte for byte."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from streaming.config import PolicySettings
from streaming.contracts import events as ev
from streaming.lag import ahead
from streaming.policy.recommend import process
from streaming.state.group_state import GroupState

POLICY = PolicySettings(stuck_observations=3, cooldown_s=60)
T0 = 1_700_000_000_000
START = ev.members_event(T0, "g", 1, "range", [
    ev.member_entry("a", ["t0"], [("t0", 0), ("t0", 1)]),
    ev.member_entry("b", ["t0"], [("t0", 2), ("t0", 3)])])


def _polls(seed: int, count: int) -> list[dict]:
    """``count`` polls of 4 partitions as lag_dense events: lag jumping about, partition 3 stuck at
    times, now and then a counter reset (offsets back to near 0: the views are not read ahead past
    it)."""
    rng = random.Random(seed)
    out, committed, ends = [], [1000] * 4, [1000] * 4
    for i in range(count):
        reset = rng.random() < 0.05
        committed = [rng.randrange(10) if reset else c + (0 if p == 3 and rng.random() < 0.6
                                                          else rng.choice([0, 50, 400]))
                     for p, c in enumerate(committed)]
        ends = [max(c, (0 if reset else e) + rng.choice([0, 100, 5000, 40_000]))
                for c, e in zip(committed, ends, strict=True)]
        out.append(ev.dense_lag_event(T0 + (i + 1) * 10_000, "g", "t0", range(4), committed, ends))
    return out


def _both(polls: list[dict]) -> tuple[list, list, GroupState, GroupState]:
    whole, alone = GroupState("g"), GroupState("g")
    process(whole, [START], POLICY)
    process(alone, [START], POLICY)
    recs = process(whole, polls, POLICY)
    each = []
    for e in polls:
        alone = GroupState.from_bytes(alone.to_bytes())
        each += process(alone, [e], POLICY)
    return recs, each, whole, alone


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(2, 25))
def test_polls_in_one_call_or_one_call_each_give_the_same_state_and_recommendations(seed, count):
    recs, each, whole, alone = _both(_polls(seed, count))
    assert [r.to_row() for r in recs] == [r.to_row() for r in each]
    assert whole.to_bytes() == alone.to_bytes()


def test_the_property_is_not_vacuous(monkeypatch):
    read = []
    real = ahead.block_views
    monkeypatch.setattr(ahead, "block_views", lambda *a: read.append(real(*a)) or read[-1])
    recs, each, whole, alone = _both(_polls(4, 25))
    assert any(v is not None and len(v) >= 5 for v in read)
    assert (recs and [r.to_row() for r in recs] == [r.to_row() for r in each]
            and whole.to_bytes() == alone.to_bytes())

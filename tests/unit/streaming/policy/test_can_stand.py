"""The assignor is skipped where no proposal can stand
(:func:`streaming.policy.recommend.can_stand`), and the decisions are those of running it every
time: the same recommendations, every field of their rows, and the same decision state, for streams
drawn from the contract (those of ``test_cut_anywhere``) under every assignor that assigns every
partition and any ``min_improvement``."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assignors import registry
from streaming.policy import recommend
from streaming.state.group_state import GroupState
from tests.unit.streaming.policy.test_cut_anywhere import POLICIES, _decisions, streams
from tests.unit.streaming.policy.test_policy import POLICY, STEP, T0, TWO, poll

ASSIGNORS = [name for name in registry.names() if not registry.withholds(name)]


def run(events: list[dict], policy) -> tuple[list[dict], tuple]:
    state = GroupState("g")
    rows = [r.to_row() for r in recommend.process(state, events, policy)]
    return rows, _decisions(state)


@settings(max_examples=60, deadline=None)
@given(streams(), st.sampled_from(ASSIGNORS), st.sampled_from([0.0, 0.05, 0.1, 0.3, 0.6]))
def test_skipping_the_assignor_where_nothing_can_stand_changes_no_decision(
        events, assignor, min_improvement):
    policy = dataclasses.replace(POLICIES["records"], assignor=assignor,
                                 min_improvement=min_improvement)
    skipping = run(events, policy)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(recommend, "can_stand", lambda *_: True)
        assert run(events, policy) == skipping


def test_one_hot_partition_skips_the_assignor_at_every_observation_its_trigger_holds():
    """Not vacuous: the group of ``test_policy``'s ``test_no_improvement_no_recommendation`` (one
    partition holds all the lag) triggers from its third poll on and never runs the assignor;
    with it run, nothing differs."""
    hot = {0: 50000, 1: 0, 2: 0, 3: 0}
    events = [TWO] + [e for i in range(6) for e in poll(T0 + i * STEP, hot)]
    asked, ran = [], []
    real_stand, real_assign = recommend.can_stand, registry.assign

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(recommend, "can_stand", lambda *a: asked.append(real_stand(*a)) or asked[-1])
        mp.setattr(registry, "assign", lambda *a, **k: ran.append(1) or real_assign(*a, **k))
        skipping = run(events, POLICY)
    assert asked == [False] * 4 and ran == [] and skipping[0] == []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(recommend, "can_stand", lambda *_: True)
        assert run(events, POLICY) == skipping

"""The loop of a group's observations is driven from above (streaming.policy.recommend.process):
streaming.state.ingest offers a block of polls read ahead, the caller takes what it decided, and
nothing in the state calls back into the policy. Whatever the caller takes, the histories come out
as applying every poll one by one does; the polls taken are never yielded as observations."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streaming.state.group_state import GroupState
from streaming.state.ingest import Block, Observation, observations

from ..job.test_block_decisions import T0, members, polls

DEPTH, STUCK = 12, 3


def _started(seed: int) -> GroupState:
    state = GroupState(group="g")
    list(observations(state, [members(T0 - 1, 1, 4, 2, 1, seed)], DEPTH, STUCK))
    return state


def _drive(state: GroupState, events: list[dict], take) -> tuple[list[int], list[int]]:
    """The observations yielded and the sizes of the blocks offered, the caller taking
    ``take(block)`` of each."""
    seen, offered = [], []
    for item in observations(state, events, DEPTH, STUCK, blocks=True):
        if isinstance(item, Block):
            offered.append(len(item.stamps))
            item.take(take(item))
        else:
            assert isinstance(item, Observation)
            seen.append(item.ts)
    return seen, offered


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), count=st.integers(2, 30), share=st.floats(0, 1))
def test_whatever_the_caller_takes_the_histories_are_the_one_by_one_loops(seed, count, share):
    events = polls(seed, count, 4, 1, seed % 2 == 0)
    one_by_one = _started(seed)
    found = list(observations(one_by_one, events, DEPTH, STUCK))
    assert all(isinstance(o, Observation) for o in found)  # no block unless asked for
    plain = [o.ts for o in found]
    driven = _started(seed)
    seen, offered = _drive(driven, copy.deepcopy(events), lambda b: int(share * len(b.stamps)))
    taken = len(plain) - len(seen)
    assert set(seen) <= set(plain) and taken >= 0
    assert offered or taken == 0
    for topic, hist in one_by_one.lag.items():
        mine = driven.lag[topic]
        for name in ("ts", "committed", "end", "start"):
            assert (getattr(hist, name) == getattr(mine, name)).all(), (topic, name)
    assert driven.last_ts == one_by_one.last_ts


def test_the_property_is_not_vacuous():
    """Whole blocks taken, and polls never yielded because of it."""
    taken = 0
    for seed in range(6):
        events = polls(seed, 20, 4, 1, False)
        seen, offered = _drive(_started(seed), events, lambda b: len(b.stamps))
        taken += len({e["ts"] for e in events}) - len(seen)
        assert sum(offered) >= len({e["ts"] for e in events}) - len(seen)
    assert taken > 20


def test_a_block_left_untaken_yields_each_of_its_polls():
    events = polls(3, 10, 4, 1, False)
    state = _started(3)
    seen, offered = _drive(state, events, lambda b: 0)
    assert offered and len(seen) == len({e["ts"] for e in events})


def test_a_block_cannot_take_more_than_it_holds():
    state = _started(5)
    for item in observations(state, polls(5, 10, 4, 1, False), DEPTH, STUCK, blocks=True):
        if isinstance(item, Block):
            with pytest.raises(ValueError):
                item.take(len(item.stamps) + 1)
            with pytest.raises(ValueError):
                item.take(-1)
            return
    pytest.fail("no block was offered")

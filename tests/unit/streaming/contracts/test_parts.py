"""Large metadata events as parts: the publisher's split keeps every message under the limit, and
the state puts the event together again whatever the order, batching or duplication of its parts."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streaming.contracts import event_parts
from streaming.contracts import events as ev
from streaming.contracts.recommendation import LAG_SECONDS_COLUMNS
from streaming.policy.recommend import process
from streaming.state.group_state import GroupState
from tests.unit.streaming.policy.test_policy import POLICY, STEP, T0, TWO, poll

QUIET = {p: 100 for p in range(4)}


def size(event):
    return len(ev.encode(event)[1])


member_st = st.builds(
    lambda i, n, rack: ev.member_entry(f"member-{i}", ["t0", "t1"], [("t0", p) for p in range(n)],
                                       client_id=f"client-{i}", host="/10.0.0.1", rack=rack),
    st.integers(0, 10**6), st.integers(0, 300), st.sampled_from([None, "a", "b"]))


@settings(max_examples=60, deadline=None)
@given(st.lists(member_st, max_size=40, unique_by=lambda m: m["member_id"]), st.integers(400, 4000),
       st.randoms(use_true_random=False))
def test_members_split_into_parts_under_the_limit_and_join_back(members, max_bytes, rng):
    event = ev.members_event(T0, "g", 7, "range", members)
    parts = event_parts.split(event, max_bytes)
    if size(event) <= max_bytes:
        assert parts == [event]
        return
    assert all(size(p) <= max_bytes for p in parts)
    assert ([p["part"] for p in parts] == list(range(len(parts)))
            and {p["parts"] for p in parts} == {len(parts)})
    rng.shuffle(parts)
    assert event_parts.join(parts) == event


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 3000), st.integers(300, 3000))
def test_partitions_split_into_parts_under_the_limit_and_join_back(count, max_bytes):
    event = ev.partitions_event(T0, "g", "wide",
                                [ev.partition_entry(p, 1, [1, 2, 3], ["a", "b", None])
                                 for p in range(count)])
    parts = event_parts.split(event, max_bytes)
    assert all(size(p) <= max_bytes for p in parts)
    assert event_parts.join(list(reversed(parts))) == event if len(parts) > 1 else parts == [event]


def test_lag_events_and_small_events_travel_whole():
    lag = ev.lag_event(T0, "g", "t0", 1, 2, 3)
    assert event_parts.split(lag, 10) == [lag]
    assert event_parts.split(TWO, 10_000) == [TWO]


def test_an_entry_that_cannot_fit_is_an_error_not_a_silent_drop():
    event = ev.partitions_event(T0, "g", "t",
                                [ev.partition_entry(0, 1, list(range(500)), [None] * 500)])
    with pytest.raises(ValueError, match="exceeds the part budget"):
        event_parts.split(event, 1000)


def _grown(ts):
    """Eight members, several hundred partitions each: a members event that needs several 1 KB
    parts."""
    return ev.members_event(ts, "g", 2, "range", [
        ev.member_entry(f"C{i}", ["t0"], [("t0", p) for p in range(i, 4, 8)],
                        client_id=f"c-C{i}", host="/h" + "x" * 200) for i in range(8)])


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_parts_in_any_order_batching_and_duplication_give_the_whole_events_result(seed):
    rng = random.Random(seed)
    grown = _grown(T0 + STEP)
    parts = event_parts.split(grown, 700)
    assert len(parts) > 2
    whole_state = GroupState("g")
    whole = process(whole_state, [TWO, *poll(T0, QUIET), grown, *poll(T0 + STEP, QUIET)], POLICY)
    assert [list(r.triggers) for r in whole] == [["membership_change"]]

    sent = parts + [dict(rng.choice(parts)) for _ in range(rng.randrange(4))]
    rng.shuffle(sent)
    cuts = sorted(rng.sample(range(1, len(sent)), rng.randrange(min(3, len(sent) - 1) + 1)))
    batches = [sent[a:b] for a, b in zip([0, *cuts], [*cuts, len(sent)], strict=True)]
    batches[0] = [TWO, *poll(T0, QUIET), *batches[0]]
    batches[-1] = [*batches[-1], *poll(T0 + STEP, QUIET)]
    state = GroupState("g")
    recs = []
    for batch in batches:
        # incomplete parts wait in the serialized state
        state = GroupState.from_bytes(state.to_bytes())
        recs += process(state, batch, POLICY)
    assert state.parts == {}
    assert state.members == whole_state.members and state.generation == 2
    # the event completes in the batch of its last part, at its own ts; the lag is the same at both
    # polls. Lag in seconds and the rates (the load model's, each member's) are not: decided before
    # the rest of the poll arrived, the history held one observation less (a decision made on the
    # part of a poll that arrived first stands, with what it saw)
    assert [_decision(r) for r in recs] == [_decision(r) for r in whole]


def _decision(rec):
    # hot partitions are read off produce rates, like lag seconds: not what this test compares
    row = {k: v for k, v in rec.to_row().items()
           if k not in (*LAG_SECONDS_COLUMNS, "hot_partitions")}
    feed = json.loads(row.pop("feed_value"))
    model = feed.pop("load_model")
    figures = [{k: v for k, v in f.items() if not k.startswith(("rate_", "capacity", "catch_up_"))}
               for f in json.loads(row.pop("member_figures"))]
    return row | {"feed": feed, "lags": [t["lag"] for t in model["topics"]],
                  "member_figures": figures}


def test_parts_of_an_outdated_event_are_dropped_and_counted():
    newer = _grown(T0 + 2 * STEP)
    state = GroupState("g")
    process(state, [TWO, *poll(T0, QUIET), newer], POLICY)
    old_parts = event_parts.split(_grown(T0 + STEP), 700)
    process(state, old_parts, POLICY)
    assert state.parts == {} and state.counters["late_metadata"] == 1


def test_an_incomplete_event_is_forgotten_once_a_newer_one_is_held():
    state = GroupState("g")
    process(state, [TWO, *poll(T0, QUIET), *event_parts.split(_grown(T0 + STEP), 700)[:-1]], POLICY)
    assert len(state.parts) == 1
    process(state, [_grown(T0 + 2 * STEP)], POLICY)
    assert state.parts == {}


def test_a_part_with_a_bad_index_is_counted_and_ignored():
    part = event_parts.split(_grown(T0 + STEP), 700)[0]
    state = GroupState("g")
    process(state, [TWO, {**part, "part": part["parts"]}, {**part, "parts": 0}], POLICY)
    assert state.counters["invalid_parts"] == 2 and state.parts == {}
    assert json.loads(json.dumps(state.counters)) == state.counters

"""When an observation is whole (streaming.state.whole): the module's worked example, and each way a
topic counts."""

from __future__ import annotations

from streaming.contracts import events as ev
from streaming.policy.recommend import process
from streaming.state import whole
from streaming.state.group_state import GroupState
from tests.unit.streaming.policy.test_policy import POLICY, STEP, T0, poll

QUIET = {p: 100 for p in range(4)}


def group(topics=("t0",), described=True) -> list[dict]:
    members = ev.members_event(T0, "g", 1, "range", [
        ev.member_entry("C0", list(topics), [("t0", 0), ("t0", 1)], client_id="c0"),
        ev.member_entry("C1", list(topics), [("t0", 2), ("t0", 3)], client_id="c1")])
    parts = ev.partitions_event(T0, "g", "t0", [ev.partition_entry(p, 1, [1], [None])
                                                for p in range(4)])
    return [members, parts] if described else [members]


def applied(events: list[dict]) -> GroupState:
    state = GroupState("g")
    process(state, events, POLICY)
    return state


def test_the_worked_example_a_poll_in_two_batches_is_decided_on_its_second():
    state = applied(group())
    first, rest = poll(T0, QUIET)[:2], poll(T0, QUIET)[2:]
    process(state, first, POLICY)
    assert not whole.complete(state, T0) and state.undecided is not None
    assert state.undecided[0] == T0
    process(state, rest, POLICY)
    assert whole.complete(state, T0) and state.undecided is None


def test_a_topic_known_from_lag_alone_needs_each_held_partition_and_each_row():
    state = applied([*group(described=False), *poll(T0, {0: 100, 1: 100, 2: 100})])
    assert not whole.complete(state, T0)  # t0p3 is held by C1 and not read
    process(state, poll(T0, {3: 100}), POLICY)
    assert whole.complete(state, T0)
    # a row of the history not read at the next ts: not every row read
    process(state, poll(T0 + STEP, {0: 100, 1: 100, 2: 100}), POLICY)
    assert not whole.complete(state, T0 + STEP)


def test_a_subscribed_topic_that_does_not_exist_has_nothing_to_wait_for():
    state = applied([*group(topics=("t0", "gone")), *poll(T0, QUIET)])
    assert whole.complete(state, T0) and state.undecided is None


def test_a_described_topic_waits_for_every_partition_its_event_lists():
    # one partition more than the members hold, and than was ever read
    grown = ev.partitions_event(T0 + STEP, "g", "t0", [ev.partition_entry(p, 1, [1], [None])
                                                       for p in range(5)])
    state = applied([*group(), *poll(T0, QUIET), grown, *poll(T0 + STEP, QUIET)])
    assert not whole.complete(state, T0 + STEP) and state.undecided[0] == T0 + STEP
    process(state, poll(T0 + STEP, {4: 100}), POLICY)
    assert whole.complete(state, T0 + STEP) and state.undecided is None

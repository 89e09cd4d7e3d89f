"""A topic's lag history never stays without rows (issue #47): a ``partitions`` event of no
partitions (a topic deleted), or of fewer than every partition its lag was read for, drops rows
until none is left. An empty history was kept, and the owners' sums read its row 0 (a history's
lookups give row 0 for a partition it does not hold): ``IndexError: index 0 is out of bounds for
axis 0 with size 0`` on every later observation of the group, which cost the group every valid
reading of its batches. The drawn property over the stateful step
(tests/unit/streaming/job/test_validated_events.py) found it."""

from __future__ import annotations

from streaming.contracts import events as ev
from streaming.lag.history import LagHistory
from streaming.policy.recommend import process
from streaming.state.group_state import GroupState
from tests.unit.streaming.policy.test_policy import POLICY

T0 = 1_763_800_000_000


def _members(ts: int, topic: str) -> dict:
    return ev.members_event(ts, "g", 1, None, [ev.member_entry("m", [topic], [(topic, 0)])])


def _partitions(ts: int, topic: str, n: int) -> dict:
    return ev.partitions_event(
        ts, "g", topic, [ev.partition_entry(p, 1, [1], ["a"]) for p in range(n)]
    )


def test_a_topic_of_no_partitions_drops_its_history_and_later_lag_still_applies():
    state = GroupState("g")
    process(
        state,
        [
            ev.lag_event(T0, "g", "t1", 0, 0, 5),
            _members(T0, "t1"),
            _partitions(T0 + 1, "t1", 0),
            ev.lag_event(T0 + 1, "g", "t0", 0, 0, 7),
        ],
        POLICY,
    )
    assert "t1" not in state.lag and state.lag["t0"].latest_lag().tolist() == [7]
    process(
        state, [ev.lag_event(T0 + 2, "g", "t1", 0, 1, 9)], POLICY
    )  # the topic back: a history again
    assert state.lag["t1"].latest_lag().tolist() == [8]


def test_a_count_below_every_partition_read_drops_the_history():
    state = GroupState("g")
    process(state, [_members(T0, "t0"), ev.lag_event(T0, "g", "t0", 5, 0, 5)], POLICY)
    process(state, [_partitions(T0 + 1, "t0", 2), ev.lag_event(T0 + 1, "g", "t1", 0, 0, 1)], POLICY)
    assert "t0" not in state.lag
    assert GroupState.from_bytes(state.to_bytes()) == state


def test_an_empty_history_in_a_state_written_before_is_read_as_none():
    state = GroupState("g", members=None)
    state.lag["t0"] = LagHistory(POLICY.lag_history)  # as an older version could write it
    process(
        GroupState.from_bytes(state.to_bytes()),
        [_members(T0, "t0"), ev.lag_event(T0, "g", "t1", 0, 0, 1)],
        POLICY,
    )
    assert "t0" not in GroupState.from_bytes(state.to_bytes()).lag

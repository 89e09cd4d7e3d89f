"""The ``lag_dense`` event: its builder, the per-partition readings it stands for, and its cutting
to size."""

from __future__ import annotations

import json

import pytest

from streaming.contracts import event_parts
from streaming.contracts import events as ev


def test_one_poll_of_a_topic_is_one_record_with_equal_arrays():
    lag = [ev.lag_event(5, "g", "t", 0, 1, 4), ev.lag_event(5, "g", "t", 2, 7, 7, no_commit=True),
           ev.lag_event(5, "g", "u", 1, 0, 3)]
    dense = ev.dense(lag)
    assert dense == [
        {"type": "lag_dense", "ts": 5, "group": "g", "topic": "t", "partitions": [0, 2],
         "committed_offsets": [1, 7], "end_offsets": [4, 7], "no_commit": [False, True]},
        {"type": "lag_dense", "ts": 5, "group": "g", "topic": "u", "partitions": [1],
         "committed_offsets": [0], "end_offsets": [3]}]  # no_commit only when some entry has it
    assert [r for d in dense for r in ev.readings(d)] == lag
    assert {ev.topic_for(d, "L", "M") for d in dense} == {"L"}


def test_unequal_arrays_are_not_an_event():
    with pytest.raises(ValueError):
        ev.dense_lag_event(1, "g", "t", [0, 1], [0], [0, 0])


def test_a_dense_event_too_large_is_cut_into_whole_dense_events_of_the_same_poll():
    n = 5_000
    event = ev.dense_lag_event(9, "g", "t", range(n), [10**17] * n, [10**18] * n,
                               [p % 7 == 0 for p in range(n)])
    pieces = event_parts.split(event, 16 * 1024)
    assert len(pieces) > 1
    assert all(len(json.dumps(p, separators=(",", ":"))) <= 16 * 1024 for p in pieces)
    assert all(not event_parts.is_part(p) and p["type"] == ev.LAG_DENSE for p in pieces)
    assert [r for p in pieces for r in ev.readings(p)] == ev.readings(event)


def test_lag_counts_its_polls_metadata_last_and_only_when_there_is_some():
    lag = [ev.lag_event(5, "g", "t", 0, 1, 4, log_start_offset=0),
           ev.lag_event(5, "g", "t", 2, 7, 7, True, 6)]
    assert ev.marked(lag, 0) == lag and ev.METADATA_EVENTS not in ev.dense(lag)[0]
    counted = ev.marked(lag, 2)
    assert [list(e)[-1] for e in counted] == [ev.METADATA_EVENTS] * 2
    assert [e[ev.METADATA_EVENTS] for e in counted] == [2, 2]
    (dense,) = ev.dense(counted)
    assert list(dense)[-1] == ev.METADATA_EVENTS and dense[ev.METADATA_EVENTS] == 2
    assert ev.readings(dense) == counted

"""benchmarks.validation's records: the collector's own encoding (so validate.parse takes its fast
paths on them), valid, and as many as asked."""

from __future__ import annotations

import json

from benchmarks import validation
from streaming.contracts import events


def test_lag_records_are_the_collectors_canonical_events():
    messages = validation.messages("lag", 250)
    assert len(messages) == 250
    for key, value in messages:
        event = json.loads(value)
        assert list(event) == list(events.LAG_FIELDS) and key == event["group"].encode()
        assert (0 <= event["partition"] < 100
                and 0 <= event["committed_offset"] <= event["end_offset"] < 2**41)
        assert events.encode(event) == (key, value)  # compact, in the collector's field order
    assert len({(json.loads(v)["group"], json.loads(v)["partition"]) for _, v in messages}) == 250


def test_dense_records_carry_one_poll_of_100_partitions_in_order():
    for key, value in validation.messages("dense", 3):
        event = json.loads(value)
        assert event["type"] == events.LAG_DENSE and event["partitions"] == list(range(100))
        assert all(0 <= c <= e
                   for c, e in zip(event["committed_offsets"], event["end_offsets"], strict=True))
        assert events.encode(event) == (key, value)

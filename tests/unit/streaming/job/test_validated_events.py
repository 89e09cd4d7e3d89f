"""No row validation admits makes the stateful step raise (issue #47, item 1).

Rows are drawn from what the step assumes (:mod:`streaming.contracts.validated`, by
:mod:`streaming.dev.fuzz.valid_rows`: every type, at the bounds, split parts, topics with no
partition), cut into one to three micro-batches, and run through the update function keyed by
group and keyed by bucket under pyspark's own serializer (the sinks' Arrow conversion included),
the state carried from batch to batch: no row may come out rejected (nothing is late, every row
is valid), so no internal error either. This property found the empty lag history of
tests/unit/streaming/state/test_empty_history.py."""

from __future__ import annotations

import json

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from streaming.config import PolicySettings
from streaming.contracts import validated
from streaming.dev.fuzz import valid_rows as drawn
from streaming.job import buckets, stateful

from . import pyspark_worker

TS = 1_763_800_000_000
POLICY = PolicySettings(skew_observations=2, min_total_lag=1, cooldown_s=0)
COLUMNS = ["group", *stateful.EVENT_COLUMNS, *stateful.SOURCE_COLUMNS]


def run_batches(rows: list[dict], batches: int, bucketed: bool) -> list[dict]:
    """The rows cut into ``batches`` micro-batches (row i in batch i % batches), through one
    layout's update function under pyspark's serializer, the state carried; every output row."""
    ctx = stateful.Context(POLICY, 600_000)
    update = buckets.update_function(ctx, 4) if bucketed else stateful.update_function(ctx)
    key = (buckets.bucket_of("g", 4),) if bucketed else ("g",)
    blob, out = None, []
    for b in range(batches):
        mine = [r for i, r in enumerate(rows) if i % batches == b]
        if not mine:
            continue
        frame = pd.DataFrame(mine, columns=COLUMNS)
        res = pyspark_worker.run(
            update,
            key,
            [frame if bucketed else frame.drop(columns="group")],
            blob,
            safecheck=bucketed,
        )
        blob, out = res.blob, out + res.rows
    return out


@settings(max_examples=300, deadline=None)
@given(drawn.events(TS), st.integers(1, 3), st.booleans())
def test_no_validated_event_makes_the_step_reject_or_raise(events, batches, bucketed):
    rows = [drawn.row_of(e, i) for i, e in enumerate(events)]
    assert [validated.problem(r) for r in rows] == [None] * len(rows)  # drawn from the statement
    out = run_batches(rows, batches, bucketed)
    rejected = [json.loads(r["rejected"])["reason"] for r in out if r["kind"] == "rejected"]
    assert rejected == []


def test_the_statement_refuses_what_validation_refuses():
    """A few rows validation never lets through, each with the assumption it breaks."""
    lag = drawn.row_of(
        {
            "type": "lag",
            "ts": TS,
            "group": "g",
            "topic": "t0",
            "partition": 0,
            "committed_offset": 5,
            "end_offset": 9,
        },
        0,
    )
    assert validated.problem(lag) is None
    for change, broken in [
        ({"ts": 0}, "ts"),
        ({"ts": validated.MAX_TS_MS + 1}, "ts"),
        ({"group": ""}, "group"),
        ({"topic": ".."}, "topic"),
        ({"partition": 2**31}, "partition"),
        ({"committed_offset": 10}, "offsets"),
        ({"log_starts": [10]}, "log starts"),
        ({"type": "lag_dense", "readings": []}, "readings"),
    ]:
        assert (validated.problem(lag | change) or "").startswith(broken), change

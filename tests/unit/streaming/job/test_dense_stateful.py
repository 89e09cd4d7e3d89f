"""``lag_dense`` rows through the stateful step: the same polls sent dense and per partition give
the same state and the same recommendations (issue #31, item 1); bad entries come out as rejected
rows beside the good ones."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from streaming.config import PolicySettings
from streaming.contracts import events as ev
from streaming.dev.fuzz import contract, seeded
from streaming.job import stateful
from streaming.state.group_state import GroupState
from streaming.state.ingest import READINGS, packed

from . import pyspark_worker

TS = 1_763_800_000_000
POLICY = PolicySettings(skew_observations=3, min_total_lag=1000, cooldown_s=300)
COLUMNS = [*stateful.EVENT_COLUMNS, *stateful.SOURCE_COLUMNS]


def row(e: dict, offset: int, detail: str | None = None) -> dict:
    """The row validate.parse makes of a valid event (``readings`` as pyarrow hands a list column to
    pandas)."""
    out = {"type": e["type"], "ts": e["ts"], "topic": e.get("topic"), "partition": 0,
           "committed_offset": 0, "end_offset": 0, "detail": detail, READINGS: None,
           "source_partition": 0, "source_offset": offset}
    if e["type"] == ev.LAG:
        out |= {c: e[c] for c in ("partition", "committed_offset", "end_offset")}
    elif e["type"] == ev.LAG_DENSE:
        out[READINGS] = packed(e)
    else:
        out["detail"] = json.dumps({k: e[k]
                                    for k in ("generation", "protocol", "members", "partitions")
                                    if k in e})
    return out


def run(batches: list[list[dict]]) -> tuple[list[dict], bytes | None]:
    """Each batch as one call keyed by group, the state carried over; every output row and the final
    state."""
    update = stateful.update_function(stateful.Context(POLICY, 600_000))
    rows: list[dict] = []
    blob = None
    for batch in batches:
        frame = pd.DataFrame([row(e, i) for i, e in enumerate(batch)], columns=COLUMNS)
        out = pyspark_worker.run(update, ("g",), [frame], blob)
        rows += out.rows
        blob = out.blob if out.updated else blob
    return rows, blob


def shuffled(e: dict, seed: int) -> dict:
    """A dense event with its entries in another order (the contract fixes none)."""
    order = np.random.default_rng(seed).permutation(len(e["partitions"])).tolist()
    return e | {a: [e[a][i] for i in order] for a in ev.DENSE_ARRAYS}


@settings(max_examples=30, deadline=None)
@given(contract.scenario(TS), st.integers(1, 4), st.integers(0, 2**16), st.booleans())
def test_the_same_polls_dense_and_per_partition_give_the_same_state_and_recommendations(
        named, cut, seed, resend):
    events = [json.loads(r.value) for r in named("g")]
    meta = [e for e in events if e["type"] not in ev.LAG_TYPES]
    lag = [r for e in events if e["type"] in ev.LAG_TYPES for r in ev.readings(e)]
    dense = [shuffled(e, seed + i) for i, e in enumerate(ev.dense(lag))]
    if resend:  # a poll sent twice (a collector retry): the copies count once in either form
        lag += [e for e in lag if e["ts"] == lag[0]["ts"]]
        dense.append(dense[0])
    # micro-batches cut at the same poll in both forms
    cut_ts = sorted({e["ts"] for e in lag})[min(cut, len({e["ts"] for e in lag})) - 1]
    per_partition = run([meta + [e for e in lag if e["ts"] <= cut_ts],
                         [e for e in lag if e["ts"] > cut_ts]])
    in_dense = run([meta + [e for e in dense if e["ts"] <= cut_ts],
                    [e for e in dense if e["ts"] > cut_ts]])
    assert in_dense[0] == per_partition[0]
    assert in_dense[1] is not None and in_dense[1] == per_partition[1]


def test_the_property_is_not_vacuous():
    """Seeded scenarios recommend in both forms."""
    recs = 0
    for named in seeded.draw(contract.scenario(TS), 20, 3):
        events = [json.loads(r.value) for r in named("g")]
        lag = [r for e in events if e["type"] in ev.LAG_TYPES for r in ev.readings(e)]
        rows, _ = run([[e for e in events if e["type"] not in ev.LAG_TYPES] + ev.dense(lag)])
        recs += sum(r["kind"] == "recommendation" for r in rows)
    assert recs >= 3


def bad_entries(*reasons: str) -> str:
    return json.dumps([{"reason": r, "raw_value": "{}", "source_topic": "rebalancer.lag",
                        "source_partition": 0, "source_offset": 7, "kafka_ts": 1} for r in reasons])


def test_bad_entries_come_out_rejected_beside_the_good_ones():
    good = ev.dense_lag_event(TS, "g", "t", [0, 2], [5, 6], [9, 9])
    frame = pd.DataFrame([row(good, 7,
                              bad_entries("lag_dense entry 1: negative committed_offset -1"))],
                         columns=COLUMNS)
    out = pyspark_worker.run(stateful.update_function(stateful.Context(POLICY, 600_000)), ("g",),
                             [frame])
    (rejected,) = [json.loads(r["rejected"]) for r in out.rows if r["kind"] == "rejected"]
    assert (rejected["reason"] == "lag_dense entry 1: negative committed_offset -1"
            and rejected["source_offset"] == 7)
    state = GroupState.from_bytes(out.blob)
    assert state.lag["t"].ids.tolist() == [0, 2]


def test_a_record_left_without_good_entries_changes_no_state():
    empty = {"type": ev.LAG_DENSE, "ts": TS, "group": "g", "topic": "t", "partitions": [],
             "committed_offsets": [], "end_offsets": []}
    frame = pd.DataFrame([row(empty, 7,
                              bad_entries("lag_dense entry 0: a", "lag_dense entry 1: b"))],
                         columns=COLUMNS)
    out = pyspark_worker.run(stateful.update_function(stateful.Context(POLICY, 600_000)), ("g",),
                             [frame])
    assert ([json.loads(r["rejected"])["reason"] for r in out.rows]
            == ["lag_dense entry 0: a", "lag_dense entry 1: b"])
    assert out.blob is None  # as when each entry had come as a rejected lag event


def test_a_late_dense_row_is_rejected_whole_with_its_readings():
    late = ev.dense_lag_event(TS, "g", "t", [0, 1], [5, 6], [9, 9])
    frame = pd.DataFrame([row(late, 3)], columns=COLUMNS)
    out = pyspark_worker.run(stateful.update_function(stateful.Context(POLICY, 600_000)), ("g",),
                             [frame], watermark=TS)
    (rejected,) = [json.loads(r["rejected"]) for r in out.rows]
    assert rejected["reason"] == "late" and rejected["source_topic"] == "rebalancer.lag"
    assert json.loads(rejected["raw_value"]) == late

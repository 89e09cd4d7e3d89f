"""Sizes in the per-group state: partition numbers up to 2**31-1 without dense arrays, offsets exact
to 2**63-1, and the binary layout (version 5 reads version 2 to 4 checkpoints, refuses anything else
clearly)."""

from __future__ import annotations

import dataclasses
import json
import struct
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streaming.contracts import events as ev
from streaming.lag.history import LagHistory
from streaming.policy.recommend import process
from streaming.state.errors import UnreadableState
from streaming.state.group_state import LZ4_MARK, GroupState
from streaming.state.snapshot import to_snapshot
from tests.unit.streaming.policy.test_policy import POLICY, SKEWED, STEP, T0, TWO, poll

MAX_PARTITION = 2**31 - 1
MAX_OFFSET = 2**63 - 1
V2_BLOB = Path(__file__).parents[3] / "data" / "group_state_v2.bin"
V3_BLOB = Path(__file__).parents[3] / "data" / "group_state_v3.bin"


def test_a_huge_partition_number_costs_one_row():
    state = GroupState("g")
    process(state,
            [TWO, ev.lag_event(T0, "g", "t0", 0, 10, 20),
             ev.lag_event(T0, "g", "t0", MAX_PARTITION, 5, 9)],
            POLICY)
    hist = state.lag["t0"]
    assert hist.ids.tolist() == [0, MAX_PARTITION] and hist.ts.shape == (2, POLICY.lag_history)
    assert len(state.to_bytes()) < 2000
    again = GroupState.from_bytes(state.to_bytes())
    assert again == state and again.lag["t0"].latest_lag().tolist() == [10, 4]
    # no partitions event: a count implied by such a number is not believed, the topic is left out
    assert state.partition_count("t0") == 0 and to_snapshot(state, 3, 0.2) is None


def test_a_partitions_event_drops_rows_beyond_the_count():
    state = GroupState("g")
    process(state, [TWO, *poll(T0, {0: 5, 3: 7}), ev.lag_event(T0, "g", "t0", MAX_PARTITION, 5, 9),
                    ev.partitions_event(T0, "g", "t0",
                                        [ev.partition_entry(p, 1, [1], [None]) for p in range(4)])],
            POLICY)
    # the partitions event sorts first within its ts: the lag rows of that poll come after it
    process(state, [ev.partitions_event(T0 + STEP, "g", "t0",
                                        [ev.partition_entry(p, 1, [1], [None]) for p in range(4)])],
            POLICY)
    assert state.lag["t0"].ids.tolist() == [0, 3]
    snap = to_snapshot(state, 3, 0.2)
    assert snap.lag["t0"] == [5, 0, 0, 7]


def _offset_columns(rows: list[dict], dtype) -> dict[str, np.ndarray]:
    cols = {c: np.array([r.get(c) for r in rows], dtype=object)
            for c in ("type", "topic", "detail")}
    for c in ("ts", "partition", "committed_offset", "end_offset"):
        cols[c] = np.array([r[c] for r in rows], dtype=dtype)
    return cols


@pytest.mark.parametrize("dtype", [np.int64, object])
def test_offsets_are_exact_to_2_63(dtype):
    state = GroupState("g")
    process(state, [TWO], POLICY)
    rows = [ev.lag_event(T0, "g", "t0", 0, MAX_OFFSET - 3, MAX_OFFSET),
            ev.lag_event(T0, "g", "t0", 1, MAX_OFFSET - 2**60, MAX_OFFSET - 1)]
    process(state, _offset_columns(rows, dtype), POLICY)
    state = GroupState.from_bytes(state.to_bytes())
    hist = state.lag["t0"]
    assert hist.end.dtype == np.int64 and int(hist.end[0, 0]) == MAX_OFFSET
    assert hist.latest_lag().tolist() == [3, 2**60 - 1]
    assert to_snapshot(state, 3, 0.2).lag["t0"] == [3, 2**60 - 1]  # Python ints: exact


def test_offsets_from_a_nullable_column_are_exact():
    # pandas' nullable Int64 (what Arrow gives for a long column with nulls) as an object array
    state = GroupState("g")
    committed = pd.array([MAX_OFFSET - 1, None], dtype="Int64").to_numpy(dtype=object)
    cols = {"type": np.array([ev.LAG, ev.MEMBERS], dtype=object), "ts": np.array([T0, T0]),
            "topic": np.array(["t0", None], dtype=object), "partition": np.array([0, 0]),
            "committed_offset": committed, "end_offset": committed.copy(),
            "detail": np.array([None,
                                json.dumps({k: TWO[k]
                                            for k in ("generation", "protocol", "members")})],
                               dtype=object)}
    cols["end_offset"][0] = MAX_OFFSET
    process(state, cols, POLICY)
    assert state.members is not None and state.lag["t0"].latest_lag().tolist() == [1]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 8), st.booleans(),
                          st.lists(st.tuples(st.one_of(st.integers(0, 3),
                                                       st.integers(0, MAX_PARTITION)),
                                             st.integers(0, MAX_OFFSET // 2), st.integers(0, 1000)),
                                   max_size=12)),
                max_size=10),
       st.integers(1, 4))
def test_sparse_history_matches_a_dictionary(polls, depth):
    """Against a plain model: per partition, the observations by ts, newest ``depth`` kept, older ts
    ignored. A poll marked whole observes every partition seen so far (the column-write path of the
    common case)."""
    hist = LagHistory(depth)
    model: dict[int, list[tuple[int, int, int]]] = {}
    for ts, whole, rows in polls:
        if whole and model:  # every partition seen so far, offsets taken from the drawn rows
            offsets = [(c, lag) for _, c, lag in rows] or [(7, 3)]
            rows = [(p, *offsets[i % len(offsets)]) for i, p in enumerate(sorted(model))]
        by_part = {}
        for p, c, lag in rows:
            prev = by_part.get(p)
            # duplicates: the furthest
            if prev is None or (c + lag, c) > (prev[0] + prev[1], prev[0]):
                by_part[p] = (c, lag)
        parts = np.array(sorted(by_part), dtype=np.int64)
        committed = np.array([by_part[p][0] for p in parts.tolist()], dtype=np.int64)
        end = committed + np.array([by_part[p][1] for p in parts.tolist()], dtype=np.int64)
        hist.observe(ts, parts, committed, end)
        for p, (c, lag) in by_part.items():
            kept = model.setdefault(p, [])
            if not kept or kept[-1][0] < ts:
                kept.append((ts, c, c + lag))
                del kept[:-depth]
            elif kept[-1][0] == ts and (c + lag, c) > (kept[-1][2], kept[-1][1]):
                kept[-1] = (ts, c, c + lag)
    assert hist.ids.tolist() == sorted(model)
    assert hist.latest_lag().tolist() == [model[p][-1][2] - model[p][-1][1] for p in sorted(model)]
    assert hist.n.tolist() == [len(model[p]) for p in sorted(model)]
    assert hist.ts.tolist() == [[t for t, _, _ in model[p]] + [0] * (depth - len(model[p]))
                                for p in sorted(model)] \
        or not model
    again = GroupState.from_bytes(GroupState("g", lag={"t": hist}).to_bytes()).lag
    # an empty history reads back as none (#47)
    assert again["t"] == hist if hist.rows else "t" not in again


def test_a_version_2_checkpoint_is_read_and_goes_on():
    # written by the previous layout (dense lag rows): two skewed polls of TWO's group, generation 3
    state = GroupState.from_bytes(V2_BLOB.read_bytes())
    assert state.generation == 3 and state.skew_streak == 2
    assert state.lag["t0"].ids.tolist() == [0, 1, 2, 3]
    assert state.lag["t0"].latest_lag().tolist() == [9000, 8000, 100, 100]
    # its last poll re-sent counts nothing; the next one is the third skewed observation
    resent = [ev.lag_event(T0 + STEP, "g", "t0", p, 1010, 1010 + lag) for p, lag in SKEWED.items()]
    assert process(state, resent, POLICY) == [] and state.skew_streak == 2
    recs = process(state,
                   [ev.lag_event(T0 + 2 * STEP, "g", "t0", p, 1020, 1020 + lag)
                    for p, lag in SKEWED.items()],
                   POLICY)
    assert [list(r.triggers) for r in recs] == [["lag_skew"]]


def test_a_version_3_checkpoint_is_read_and_goes_on():
    # written by the previous layout (zlib, members inside the header): two skewed polls of TWO's
    # group
    state = GroupState.from_bytes(V3_BLOB.read_bytes())
    assert (state.generation == 1 and state.skew_streak == 2
            and [m.member_id for m in state.members] == ["C0", "C1"])
    assert state.lag["t0"].latest_lag().tolist() == [9000, 8000, 100, 100]
    again = GroupState.from_bytes(state.to_bytes())  # written as the current version
    assert state.to_bytes()[:4] == LZ4_MARK and again == state
    recs = process(state,
                   [ev.lag_event(T0 + 2 * STEP, "g", "t0", p, 1020, 1020 + lag)
                    for p, lag in SKEWED.items()],
                   POLICY)
    assert [list(r.triggers) for r in recs] == [["lag_skew"]]


def _raw(blob: bytes) -> bytes:
    (length,) = struct.unpack_from("<I", blob, 4)
    return pa.Codec("lz4_raw").decompress(blob[8:], decompressed_size=length, asbytes=True)


def _lz4(raw: bytes) -> bytes:
    return LZ4_MARK + struct.pack("<I", len(raw)) + pa.Codec("lz4_raw").compress(raw, asbytes=True)


@pytest.mark.parametrize("compress", [_lz4, lambda raw: zlib.compress(raw)], ids=["lz4", "zlib"])
def test_an_unknown_layout_fails_clearly(compress):
    raw = _raw(GroupState("g").to_bytes())
    (size,) = struct.unpack_from("<I", raw)
    header = json.loads(raw[4:4 + size]) | {"_v": 99}
    head = json.dumps(header).encode()
    with pytest.raises(UnreadableState,
                       match=r"incompatible version \(group state layout 99; this version reads "
                             r"2, 3, .*; run the version that wrote .* start the job on a new"):
        GroupState.from_bytes(compress(struct.pack("<I", len(head)) + head + raw[4 + size:]))


def test_members_are_decoded_once_and_written_back_as_they_were_read():
    state = GroupState.from_bytes(V3_BLOB.read_bytes())
    blob = state.to_bytes()
    one, two = GroupState.from_bytes(blob), GroupState.from_bytes(blob)
    assert one.held_members() is two.held_members() is not None
    assert (all(a is b for a, b in zip(one.members, two.members, strict=True))
            and one.members is not two.members)
    assert one.owners() is two.owners()
    parts, _ = one.owners().by_topic["t0"]
    with pytest.raises(ValueError, match="read-only"):
        parts[0] = 7
    assert one.to_bytes() == blob
    # members changed, by a new list or in place: the new ones are written, and their owners are
    # their own
    one.members = [dataclasses.replace(one.members[0], rack="r9"), one.members[1]]
    two.members.pop()
    assert one.held_members() is None and two.held_members() is None
    assert GroupState.from_bytes(one.to_bytes()).members[0].rack == "r9"
    assert [m.member_id for m in GroupState.from_bytes(two.to_bytes()).members] == ["C0"]
    assert two.owners().count == 1 and one.owners() is not GroupState.from_bytes(blob).owners()
    # no members yet (the baseline not seen): None, as before
    assert GroupState.from_bytes(GroupState("g").to_bytes()).members is None


def test_offsets_are_exact_from_event_dicts_and_frames_mixing_metadata_and_lag():
    events = [TWO, ev.lag_event(T0, "g", "t0", 0, MAX_OFFSET - 12_345, MAX_OFFSET)]
    frame = pd.DataFrame({k: [e.get(k) for e in events]
                          for k in ("type", "ts", "group", "topic", "partition", "generation",
                                    "protocol", "members")})
    # nullable Int64, as Arrow hands a long column with nulls
    for c in ("committed_offset", "end_offset"):
        frame[c] = pd.array([None, events[1][c]], dtype="Int64")
    for batch in (events, frame):
        state = GroupState("g")
        process(state, batch, POLICY)
        assert state.lag["t0"].latest_lag().tolist() == [12_345]

"""The stateful step keyed by buckets of groups: the same output rows and the same per-group state
as keyed by group, whatever the bucket count, batch after batch (timeouts, late rows, rejected rows
and failing groups included); its state value's encoding; the checkpoint-layout check."""

from __future__ import annotations

import contextlib
import json
import math
import re
import zlib

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from streaming.config import PolicySettings
from streaming.contracts import events as ev
from streaming.job import buckets, convert, stateful
from streaming.operations import hfs
from streaming.state.errors import UNREADABLE, WAY_OUT, UnreadableState
from streaming.state.group_state import METADATA_MISSING, GroupState
from tests.unit.streaming.job.statestore import COLUMNS, State, Store

T0 = 1_763_700_000_000
TIMEOUT_MS = 30_000
POLICY = PolicySettings(skew_observations=2, min_total_lag=1000, cooldown_s=20)
TOPICS = {"lag_topic": "lag.t", "metadata_topic": "meta.t"}
GROUPS = ["orders", "payments", "grüppe-ü", "g3", "g4", "g5", "g6", "g7"]


def members(group: str, ts: int, offset: int, bad: bool = False) -> dict:
    ms = [ev.member_entry("C0", ["t0"], [("t0", 0), ("t0", 1)]),
          ev.member_entry("C1", ["t0"], [("t0", 2), ("t0", 3)])]
    detail = json.dumps({"generation": 1, "protocol": "range", "members": 5 if bad else ms})
    return {"group": group, "type": ev.MEMBERS, "ts": ts, "topic": None, "partition": 0,
            "committed_offset": 0, "end_offset": 0, "detail": detail, "source_partition": 1,
            "source_offset": offset}


def poll(group: str, ts: int, offset: int, skewed: bool) -> list[dict]:
    lags = {0: 9000, 1: 8000, 2: 100, 3: 100} if skewed else {0: 300, 1: 200, 2: 250, 3: 260}
    c = ts // 1000
    return [{"group": group, "type": ev.LAG, "ts": ts, "topic": "t0", "partition": p,
             "committed_offset": c, "end_offset": c + lag, "detail": None, "source_partition": 0,
             "source_offset": offset + p}
            for p, lag in lags.items()]


def rejected(group: str, offset: int) -> dict:
    detail = json.dumps({"reason": "not valid JSON", "raw_value": "x", "source_topic": "meta.t",
                         "source_partition": 2, "source_offset": offset, "kafka_ts": T0})
    return {"group": group, "type": None, "ts": 0, "topic": None, "partition": 0,
            "committed_offset": 0, "end_offset": 0, "detail": detail, "source_partition": 2,
            "source_offset": offset}


KINDS = st.sampled_from(["nothing", "poll", "skewed", "members", "rejected", "late", "poison",
                         "two polls"])


def batches_of(spec: list[list[str]]) -> list[list[dict]]:
    """spec[b][g]: what group g sends in batch b. Batch b's polls are at T0 + 10 s * b (and + 5
    s)."""
    out, offset = [], 0
    for b, kinds in enumerate(spec):
        rows: list[dict] = []
        ts = T0 + 10_000 * b
        for group, kind in zip(GROUPS, kinds, strict=False):
            offset += 10
            if kind in ("poll", "skewed"):
                rows += poll(group, ts, offset, kind == "skewed")
            elif kind == "two polls":
                rows += poll(group, ts, offset, True) + poll(group, ts + 5000, offset + 5, True)
            elif kind == "members":
                rows.append(members(group, ts, offset))
            elif kind == "rejected":
                rows.append(rejected(group, offset))
            elif kind == "late":
                rows += poll(group, T0 - 60_000, offset, False)
            elif kind == "poison":
                rows += [members(group, ts, offset, bad=True), *poll(group, ts, offset + 1, True)]
        rows.append(rejected("", offset + 9))  # a record with no group at all
        out.append(rows[::-1] if b % 2 else rows)  # the arrival order must not matter
    return out


def normal(row: dict) -> str:
    def value(v: object) -> object:
        if isinstance(v, np.generic):
            v = v.item()
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return None
        return int(v) if isinstance(v, float) and v.is_integer() else v
    return json.dumps({k: value(v) for k, v in row.items()}, sort_keys=True, default=str)


def per_group_store(floors: dict[str, int]) -> Store:
    return Store(stateful.make_update(POLICY, TIMEOUT_MS, floors, **TOPICS), key_of=lambda g: g)


def bucket_store(n: int, floors: dict[str, int]) -> Store:
    return Store(buckets.make_update(POLICY, TIMEOUT_MS, n, floors, **TOPICS),
                 key_of=lambda g: buckets.bucket_of(g, n))


def group_states(store: Store, n: int | None) -> dict[str, tuple[bytes, int | None]]:
    """group -> (GroupState bytes, timeout), from either layout."""
    if n is None:
        return {g: v for g, v in store.values.items()}
    out: dict[str, tuple[bytes, int | None]] = {}
    for key, (value, timeout) in store.values.items():
        held = buckets.decode(value, n, key)
        # the bucket's timeout: its groups' earliest
        assert held and timeout == min(t for t, _ in held.values())
        out |= {g: (blob, t) for g, (t, blob) in held.items()}
    return out


@settings(max_examples=25, deadline=None)
@given(st.lists(st.lists(KINDS, min_size=1, max_size=len(GROUPS)), min_size=1, max_size=7),
       st.integers(0, 2))
def test_the_same_rows_and_states_whatever_the_bucketing(spec, floor):
    floors = {"orders": floor}
    stores = {None: per_group_store(floors), 1: bucket_store(1, floors), 3: bucket_store(3, floors),
              64: bucket_store(64, floors)}
    for rows in batches_of(spec):
        outs = {n: sorted(normal(r) for r in store.batch(rows)) for n, store in stores.items()}
        assert all(out == outs[None] for out in outs.values())
        states = {n: group_states(store, n) for n, store in stores.items()}
        assert all(s == states[None] for s in states.values())


def test_a_scenario_with_every_path_gives_recommendations_timeouts_and_rejections():
    # orders skews and recommends; payments goes silent and times out; grüppe-ü is poisoned in
    # batch 2
    spec = [["members", "members", "members"], ["skewed", "poll", "poll"],
            ["skewed", "nothing", "poison"], ["skewed", "nothing", "poll"],
            ["skewed", "nothing", "late"], ["poll", "nothing", "poll"], ["poll", "nothing", "poll"]]
    per_group, bucketed = per_group_store({}), bucket_store(1, {})
    kinds: dict[str, int] = {}
    for b, rows in enumerate(batches_of(spec)):
        out = bucketed.batch(rows)
        assert sorted(map(normal, out)) == sorted(map(normal, per_group.batch(rows)))
        for r in out:
            reason = json.loads(r["rejected"])["reason"] if r["kind"] == "rejected" else r["kind"]
            kinds[reason.split(":")[0]] = kinds.get(reason.split(":")[0], 0) + 1
        # payments' last event is at T0 + 10 s: its timeout (T0 + 40 s) is below batch 6's watermark
        # (T0 + 50 s)
        assert ("payments" in group_states(bucketed, 1)) == (b < 6)
    # the poisoned members event alone: its poll's four readings go on (#47)
    assert kinds["recommendation"] >= 1 and kinds["late"] == 4 and kinds["internal error"] == 1
    assert kinds["not valid JSON"] == len(spec)
    assert set(group_states(bucketed, 1)) == {"orders", "grüppe-ü"}


def test_a_failing_event_leaves_its_group_and_the_other_groups_of_its_bucket_alone():
    store = bucket_store(1, {})
    store.batch(batches_of([["members", "members"]])[0])
    before = group_states(store, 1)
    rows = [*poll("orders", T0 + 10_000, 100, True),
            members("payments", T0 + 10_000, 200, bad=True),
            *poll("payments", T0 + 10_000, 201, True)]
    out = store.batch(rows)
    after = group_states(store, 1)
    assert after["orders"][0] != before["orders"][0]  # the other group went on
    # and so did the failing group's other readings (#47)
    assert after["payments"][0] != before["payments"][0]
    details = [json.loads(r["rejected"]) for r in out if r["kind"] == "rejected"]
    reasons = {d["source_offset"]: d["reason"] for d in details}
    assert set(reasons) == {200} and reasons[200].startswith("internal error")  # the bad event


def test_a_failure_outside_any_group_rejects_the_calls_rows_and_changes_no_group(monkeypatch):
    store = bucket_store(1, {})
    store.batch(batches_of([["members", "members"]])[0])
    before = group_states(store, 1)
    calls = []

    def apply_then_fail(group, *args):
        calls.append(group)
        if len(calls) == 2:
            raise MemoryError("out of memory")
        return stateful.apply_group(group, *args)

    monkeypatch.setattr(buckets, "apply_group", apply_then_fail)
    out = store.batch([*poll("orders", T0 + 10_000, 100, True),
                       *poll("payments", T0 + 10_000, 200, True), rejected("payments", 300)])
    reasons = {json.loads(r["rejected"])["source_offset"]: json.loads(r["rejected"])["reason"]
               for r in out}
    assert len(reasons) == 9 and reasons.pop(300) == "not valid JSON"
    assert set(reasons.values()) == {"internal error: MemoryError: out of memory"}
    assert group_states(store, 1) == {g: (blob, T0 + TIMEOUT_MS) for g, (blob, _) in before.items()}


@settings(max_examples=100, deadline=None)
@given(st.sampled_from([b"RBK1 not a bucket", b"", b"x" * 40]) | st.binary(max_size=64),
       st.booleans())
def test_a_bucket_that_cannot_be_read_stops_the_job_and_costs_no_record(value, timed_out):
    """Bytes that are not this bucket's value raise UnreadableState out of the call (the supervisor
    stops on it), whether rows came or the bucket timed out; none of its rows is rejected for it,
    nothing is written."""
    with contextlib.suppress(UnreadableState):
        assume(buckets.decode(value, 8, 3) is None)  # a value that does decode is not this test's
    update = buckets.make_update(POLICY, TIMEOUT_MS, 8, **TOPICS)
    state = State(value, watermark=T0, timed_out=timed_out)
    frame = pd.DataFrame([*poll("orders", T0 + 1000, 7, False), rejected("orders", 20)],
                         columns=COLUMNS)
    with pytest.raises(UnreadableState, match=f"^{re.escape(UNREADABLE)}: .*{re.escape(WAY_OUT)}$"):
        list(update((3,), iter([] if timed_out else [frame]), state))
    assert state.value == value and state.updates == 0


def test_a_group_of_a_bucket_that_cannot_be_read_stops_the_job():
    update = buckets.make_update(POLICY, TIMEOUT_MS, 8, **TOPICS)
    value = buckets.encode(8, 3, {"orders": (T0 + TIMEOUT_MS, b"RGS\x04 damaged")})
    state = State(value, watermark=T0)
    frame = pd.DataFrame(poll("orders", T0 + 1000, 7, False), columns=COLUMNS)
    with pytest.raises(UnreadableState, match="a group's state does not decode"):
        list(update((3,), iter([frame]), state))
    assert state.value == value and state.updates == 0


def test_a_bucket_read_with_another_bucket_count_is_refused():
    value = buckets.encode(8, 3, {"orders": (T0, GroupState("orders").to_bytes())})
    assert buckets.decode(value, 8, 3)["orders"][0] == T0
    with pytest.raises(UnreadableState, match="bucket 3 of 8 read as bucket 3 of 16"):
        buckets.decode(value, 16, 3)
    with pytest.raises(UnreadableState, match="not a bucket of groups"):
        # a value of a checkpoint keyed by group
        buckets.decode(GroupState("orders").to_bytes(), 8, 3)


@given(st.dictionaries(st.text(max_size=12),
                       st.tuples(st.integers(0, 2**62), st.binary(max_size=40)), max_size=20))
def test_encoding_round_trips(held):
    value = buckets.encode(5, 2, held)
    assert buckets.decode(value, 5, 2) == held
    with pytest.raises(UnreadableState):
        buckets.decode(value + b"x", 5, 2)


def test_bucket_of_is_crc32_of_the_utf8_name():
    assert buckets.bucket_of("grüppe-ü", 64) == zlib.crc32("grüppe-ü".encode()) % 64
    # fixed forever: it places state in checkpoints
    assert buckets.bucket_of("orders", 64) == 3845127662 % 64


# -- the checkpoint's layout -----------------------------------------------------------------------


def test_a_new_checkpoint_may_take_any_layout():
    assert buckets.layout_problem("/c", None, used=False, buckets=64) is None
    assert (buckets.layout_problem("/c", json.dumps(buckets.layout(8)), used=False, buckets=64)
            is None)


def test_a_checkpoint_from_before_buckets_runs_keyed_by_group_only():
    assert buckets.layout_problem("/c", None, used=True, buckets=0) is None
    problem = buckets.layout_problem("/ck/rebalancer", None, used=True, buckets=64)
    assert problem is not None
    assert problem.startswith("checkpoint /ck/rebalancer keeps its group state by consumer group")
    assert "in 64 buckets of groups" in problem and "set job.state_buckets = 0 to go on" in problem
    assert ("start a new checkpoint" in problem
            and "recommendation versions after those in the" in problem)


def test_a_changed_bucket_count_is_refused_with_what_to_do():
    recorded = json.dumps(buckets.layout(64))
    assert buckets.layout_problem("/c", recorded, used=True, buckets=64) is None
    problem = buckets.layout_problem("/c", recorded, used=True, buckets=16)
    assert (problem is not None and "in 64 buckets" in problem
            and "set job.state_buckets = 64 to go on" in problem)
    problem = buckets.layout_problem("/c", "{not json", used=True, buckets=16)
    assert problem is not None and "start a new checkpoint" in problem and "to go on" not in problem


def test_check_layout_records_a_new_checkpoints_layout_and_refuses_another(tmp_path, monkeypatch):
    from streaming.errors import JobError

    files = {}
    monkeypatch.setattr(hfs, "has_files", lambda _s, loc, child: (tmp_path / child).is_dir())
    monkeypatch.setattr(hfs, "read_text", lambda _s, loc, name: files.get(name))
    monkeypatch.setattr(hfs, "write_text",
                        lambda _s, loc, name, text, overwrite: files.__setitem__(name, text))
    buckets.check_layout(None, str(tmp_path), 32)
    assert (json.loads(files[buckets.LAYOUT_FILE])
            == {"keyed_by": "bucket", "buckets": 32, "format": "RBK1"})
    buckets.check_layout(None, str(tmp_path), 8)  # no batch yet: the layout may still change
    (tmp_path / "offsets").mkdir()
    buckets.check_layout(None, str(tmp_path), 8)
    with pytest.raises(JobError, match="keeps its group state in 8 buckets of groups"):
        buckets.check_layout(None, str(tmp_path), 0)


@pytest.mark.parametrize("rows", [[{"kind": "rejected", "group": None, "rejected": "{}"}],
                                  [{"kind": "recommendation", "group": "g", "version": 2**62,
                                    "lag_age_s": math.nan}]])
def test_output_frames_convert_to_the_row_schema_whatever_columns_they_leave_empty(rows):
    from pyspark.sql import types as T
    from pyspark.sql.conversion import PandasToArrowConversion

    schema = convert.row_type()
    # as pyspark's worker converts one call's rows with no padding row
    batch = PandasToArrowConversion.convert(
        [stateful.output_frame(rows, convert.Options())],
        T.StructType([T.StructField("_1", schema)]), timezone="UTC", safecheck=False,
        arrow_cast=True, prefers_large_types=False, assign_cols_by_name=True,
        int_to_decimal_coercion_enabled=False)
    out = batch.column(0).to_pylist()[0]
    assert {k: v for k, v in out.items() if v is not None} == {
        k: v for k, v in rows[0].items()
        if v is not None and not (isinstance(v, float) and math.isnan(v))}


def test_a_poll_decided_without_its_metadata_leaves_one_row_for_the_driver():
    """A poll whose lag counts a members event that never comes, closed by the next poll: one
    ``metadata_missing`` row for its group (stateful.missing_rows), under either keying; nothing
    rejected for it, and nothing more when later polls are whole."""
    def lag(ts: int, offset: int, said: int) -> list[dict]:
        return [r | {ev.METADATA_EVENTS: said} for r in poll("orders", ts, offset, False)]

    batches = [[members("orders", T0 - 10_000, 1) | {ev.METADATA_EVENTS: 0}], lag(T0, 10, 1),
               lag(T0 + 10_000, 20, 0), lag(T0 + 20_000, 30, 0)]
    for store in (per_group_store({}), bucket_store(3, {})):
        out = [[r for r in store.batch(rows) if r["kind"] != "recommendation"] for rows in batches]
        assert [[(r["kind"], r["group"], r["event_ts"]) for r in rows] for rows in out] \
            == [[], [], [(METADATA_MISSING, "orders", T0 + 10_000)], []]

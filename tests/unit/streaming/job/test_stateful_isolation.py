"""The stateful step without Spark: late rows and failures come out as rejected rows, one group's
failure never raises and never changes its state; a state that cannot be read raises (the job
stops). ``FakeGroupState`` stands in for pyspark's GroupState (the real one is exercised by
tests/integration/test_fuzz.py)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from streaming.config import PolicySettings
from streaming.contracts import events as ev
from streaming.job import convert, stateful
from streaming.operations.supervisor import is_fatal
from streaming.state.errors import UNREADABLE, WAY_OUT, UnreadableState
from streaming.state.group_state import GroupState

T0 = 1_763_700_000_000
LAG_TOPIC, META_TOPIC = "lag.t", "meta.t"
POLICY = PolicySettings(skew_observations=3, min_total_lag=1000, cooldown_s=300)


class FakeGroupState:
    """The part of pyspark.sql.streaming.state.GroupState the update function uses."""

    def __init__(self, blob: bytes | None = None, watermark: int = 0) -> None:
        self.blob = blob
        self.watermark = watermark
        self.timeout: int | None = None
        self.updates = 0
        self.hasTimedOut = False

    @property
    def exists(self) -> bool:
        return self.blob is not None

    @property
    def get(self) -> tuple:
        return (self.blob,)

    def update(self, value: tuple) -> None:
        self.blob = value[0]
        self.updates += 1

    def remove(self) -> None:
        self.blob = None

    def getCurrentWatermarkMs(self) -> int:
        return self.watermark

    def setTimeoutTimestamp(self, ts: int) -> None:
        self.timeout = ts


def lag_row(ts: int, partition: int, committed: int, end: int, offset: int,
            topic: str = "t0") -> dict:
    return {"type": ev.LAG, "ts": ts, "topic": topic, "partition": partition,
            "committed_offset": committed, "end_offset": end, "detail": None,
            "source_partition": 0, "source_offset": offset}


def members_row(ts: int, offset: int, members: object = None) -> dict:
    if members is None:
        members = [ev.member_entry("C0", ["t0"], [("t0", 0), ("t0", 1)]),
                   ev.member_entry("C1", ["t0"], [("t0", 2), ("t0", 3)])]
    detail = json.dumps({"generation": 1, "protocol": "range", "members": members})
    return {"type": ev.MEMBERS, "ts": ts, "topic": None, "partition": 0, "committed_offset": 0,
            "end_offset": 0, "detail": detail, "source_partition": 1, "source_offset": offset}


def rejected_row(offset: int, reason: str = "not valid JSON") -> dict:
    detail = json.dumps({"reason": reason, "raw_value": "x", "source_topic": META_TOPIC,
                         "source_partition": 2, "source_offset": offset, "kafka_ts": T0})
    return {"type": None, "ts": 0, "topic": None, "partition": 0, "committed_offset": 0,
            "end_offset": 0, "detail": detail, "source_partition": 2, "source_offset": offset}


def skewed_rows(polls: int = 5, first_offset: int = 0) -> list[dict]:
    rows = [members_row(T0, first_offset)]
    for i in range(polls):
        for p, lag in {0: 9000, 1: 8000, 2: 100, 3: 100}.items():
            c = 1_000_000 + i * 1000
            rows.append(lag_row(T0 + i * 10_000, p, c, c + lag, first_offset + len(rows)))
    return rows


def call(rows: list[dict], state: FakeGroupState, group: str = "g") -> pd.DataFrame:
    update = stateful.make_update(POLICY, 600_000, lag_topic=LAG_TOPIC, metadata_topic=META_TOPIC)
    frame = pd.DataFrame(rows, columns=[*stateful.EVENT_COLUMNS, *stateful.SOURCE_COLUMNS])
    out = list(update((group,), iter([frame]), state))
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame(columns=convert.ROW_COLUMNS)


def rejected(out: pd.DataFrame) -> list[dict]:
    return [json.loads(d) for d in out.loc[out["kind"] == "rejected", "rejected"]]


def test_valid_rows_recommend_and_update_state():
    state = FakeGroupState()
    out = call(skewed_rows(), state)
    assert list(out["kind"]) == ["recommendation"]
    assert json.loads(out["trigger_details"][0])["lag_skew"]["observations"] == 3
    assert state.updates == 1 and GroupState.from_bytes(state.blob).last_ts == T0 + 40_000
    assert state.timeout == T0 + 40_000 + 600_000


def test_rows_at_or_below_the_watermark_are_rejected_as_late_with_their_source():
    state = FakeGroupState(watermark=T0 + 10_000)
    rows = skewed_rows(polls=4)
    out = call(rows, state)
    late = rejected(out)
    # the members event (T0) and the polls at T0 and T0 + 10 s are at or below the watermark
    assert (sorted(r["source_offset"] for r in late)
            == [r["source_offset"] for r in rows if r["ts"] <= T0 + 10_000])
    assert {r["reason"] for r in late} == {"late"}
    lag = next(r for r in late if r["source_topic"] == LAG_TOPIC)
    raw = json.loads(lag["raw_value"])
    assert raw["type"] == "lag" and raw["group"] == "g" and raw["ts"] in (T0, T0 + 10_000)
    assert next(r for r in late if r["source_offset"] == 0)["source_topic"] == META_TOPIC
    # the on-time rows alone went into the state
    alone = FakeGroupState(watermark=T0 + 10_000)
    call([r for r in rows if r["ts"] > T0 + 10_000], alone)
    assert state.blob == alone.blob


def test_rows_rejected_by_validation_pass_through_unchanged():
    state = FakeGroupState()
    row = rejected_row(41)
    out = call([row], state)
    assert list(out["rejected"]) == [row["detail"]]
    assert not state.exists and state.updates == 0


def test_a_failing_event_rejects_itself_alone_and_the_group_goes_on():
    """Issue #47: an event that raises costs that event (with its reason and source offset), not
    its group's other readings of the batch, and the state goes on with them."""
    state = FakeGroupState()
    call(skewed_rows(polls=2), state)
    # a members event whose members are not a list: validation would stop it; here it reaches the
    # state code
    rows = [members_row(T0 + 30_000, 100, members=5), lag_row(T0 + 30_000, 0, 5, 9, 101),
            rejected_row(102)]
    out = call(rows, state)
    reasons = {r["source_offset"]: r["reason"] for r in rejected(out)}
    assert set(reasons) == {100, 102}
    assert reasons[100].startswith("internal error: ") and reasons[102] == "not valid JSON"
    after = GroupState.from_bytes(state.blob)
    assert after.last_ts == T0 + 30_000
    assert after.lag["t0"].latest_lag()[0] == 4  # the reading went on
    assert state.timeout == T0 + 30_000 + 600_000
    alone = FakeGroupState()  # the same state as if the bad event had never come
    call(skewed_rows(polls=2), alone)
    call(rows[1:], alone)
    assert alone.blob == state.blob


def damaged(data: st.DataObject, blob: bytes) -> bytes:
    """``blob`` cut, with a byte changed, or any bytes at all (another layout version:
    tests/unit/streaming/state/test_size.py)."""
    how = data.draw(st.sampled_from(["cut", "flip", "any"]))
    if how == "cut":
        return blob[:data.draw(st.integers(0, len(blob) - 1))]
    if how == "flip":
        i = data.draw(st.integers(0, len(blob) - 1))
        return blob[:i] + bytes([blob[i] ^ data.draw(st.integers(1, 255))]) + blob[i + 1:]
    return data.draw(st.binary(max_size=64))


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_a_state_that_cannot_be_read_stops_the_job_naming_the_way_out_and_costs_no_record(data):
    """Whatever a group's state bytes are, the call applies its records (the bytes still decode) or
    raises UnreadableState, whose message the supervisor stops on and which says how to go on; no
    other exception, and never the group's records rejected for the state's fault."""
    good = FakeGroupState()
    call(skewed_rows(polls=2), good)
    state = FakeGroupState(blob=damaged(data, good.blob))
    try:
        out = call([lag_row(T0 + 30_000, 0, 5, 9, 7)], state)
    except UnreadableState as exc:
        assert str(exc).startswith(f"{UNREADABLE}: ") and str(exc).endswith(WAY_OUT)
        assert is_fatal(exc, first_attempt=False)
        assert state.updates == 0
    else:
        assert all(not r["reason"].startswith("internal error") for r in rejected(out))


def test_unreadable_rows_give_one_internal_error_row():
    state = FakeGroupState()
    update = stateful.make_update(POLICY, 600_000)
    out = list(update(("g",), iter([pd.DataFrame({"unexpected": [1]})]), state))
    [row] = rejected(pd.concat(out))
    assert row["reason"].startswith("internal error: KeyError")
    assert not state.exists


def test_internal_error_reason_is_one_short_line():
    reason = stateful.internal_error(ValueError("a\nlong\tmessage " + "x" * 1000))
    assert reason.startswith("internal error: ValueError: a long message x")
    assert ("\n" not in reason
            and len(reason) <= len("internal error: ValueError: ") + stateful.MESSAGE_CHARS)


ROW_KINDS = st.sampled_from(["lag", "late", "rejected", "poison", "members"])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(ROW_KINDS, st.integers(0, 3), st.integers(0, 10**6)), min_size=1,
                max_size=30), st.booleans())
def test_every_row_is_accepted_or_rejected_exactly_once_and_nothing_raises(spec, with_state):
    watermark = T0
    state = FakeGroupState(watermark=watermark)
    if with_state:
        call(skewed_rows(polls=1, first_offset=10_000), state)
        state.watermark = watermark
    before, updates = state.blob, state.updates
    rows = []
    for i, (kind, p, c) in enumerate(spec):
        ts = T0 + 1000 * (1 + i)
        if kind == "lag":
            rows.append(lag_row(ts, p, c, c + 50, i))
        elif kind == "late":
            rows.append(lag_row(T0 - 1000 * i, p, c, c + 50, i))
        elif kind == "rejected":
            rows.append(rejected_row(i))
        elif kind == "poison":
            rows.append(members_row(ts, i, members=[{"member_id": None, "assigned": 3}]))
        else:
            rows.append(members_row(ts, i))
    out = call(rows, state)
    offsets = [r["source_offset"] for r in rejected(out)]
    assert len(offsets) == len(set(offsets))
    kinds = [k for k, _, _ in spec]
    # a poisoned event costs itself alone (#47): the state is the one the other rows give
    assert set(offsets) == {i for i, k in enumerate(kinds) if k in ("late", "rejected", "poison")}
    if any(k in ("lag", "members") for k in kinds):
        assert state.updates == updates + 1
        clean = FakeGroupState(blob=before, watermark=watermark)
        call([r for r, k in zip(rows, kinds, strict=True) if k != "poison"], clean)
        assert state.blob == clean.blob
    else:
        assert state.blob == before
    assert np.all(out["kind"].isin(["rejected", "recommendation"]))

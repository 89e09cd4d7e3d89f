"""Whatever the stateful step returns, pyspark's own serializer converts (issue #26, item 1).

Each test runs the update function through :mod:`tests.unit.streaming.job.pyspark_worker`: a real
pyspark GroupState and the worker's ``ApplyInPandasWithStateSerializer``."""

from __future__ import annotations

import json
import math

import pandas as pd

from streaming.config import PolicySettings
from streaming.contracts import events as ev
from streaming.job import buckets, convert, stateful

from . import pyspark_worker

T0 = 1_763_700_000_000
POLICY = PolicySettings(skew_observations=3, min_total_lag=1000, cooldown_s=300)
MAX = 2**63 - 1
COLUMNS = [*stateful.EVENT_COLUMNS, *stateful.SOURCE_COLUMNS]


def members_row(ts: int, offset: int) -> dict:
    members = [ev.member_entry("C0", ["t0"], [("t0", 0), ("t0", 1)]),
               ev.member_entry("C1", ["t0"], [("t0", 2), ("t0", 3)])]
    detail = json.dumps({"generation": 1, "protocol": "range", "members": members})
    return {"type": ev.MEMBERS, "ts": ts, "topic": None, "partition": 0, "committed_offset": 0,
            "end_offset": 0, "detail": detail, "source_partition": 1, "source_offset": offset}


def lag_row(ts: int, partition: int, committed: int, end: int, offset: int) -> dict:
    return {"type": ev.LAG, "ts": ts, "topic": "t0", "partition": partition,
            "committed_offset": committed, "end_offset": end, "detail": None,
            "source_partition": 0, "source_offset": offset}


def huge_skew(polls: int = 4, lags: tuple[int, ...] = (MAX, MAX - 1, 5, 5)) -> list[dict]:
    """A skewed group whose lags are inside the contract (offsets 0..2^63-1) but above 2^53."""
    rows = [members_row(T0, 0)]
    for i in range(polls):
        for p, lag in enumerate(lags):
            rows.append(lag_row(T0 + i * 10_000, p, 0, lag, len(rows)))
    return rows


def run(rows: list[dict], blob: bytes | None = None):
    update = stateful.make_update(POLICY, 600_000)
    return pyspark_worker.run(update, ("g",), [pd.DataFrame(rows, columns=COLUMNS)], blob)


def test_lags_above_2_53_convert_and_stay_exact():
    out = run(huge_skew())
    recs = [r for r in out.rows if r["kind"] == "recommendation"]
    assert recs, out.rows
    rec = recs[0]
    # the heaviest member holds two partitions of 2^63-1 and 2^63-2: its sum saturates at 2^63-1
    assert rec["before_max_lag"] == MAX
    assert isinstance(rec["after_max_lag"], int) and rec["after_max_lag"] == MAX
    assert out.updated and out.blob is not None


def test_lags_just_above_2_53_are_not_rounded():
    # with the worker's default (convertToArrowArraySafely off) a double column took 2^54+2 as 2^54
    out = run(huge_skew(lags=(2**53 + 1, 2**53 + 1, 5, 5)))
    [rec] = [r for r in out.rows if r["kind"] == "recommendation"]
    lags = (2**53 + 1, 2**53 + 1, 5, 5)
    assert rec["before_max_lag"] == 2**54 + 2
    loads = [sum(lags[p["partition"]] for p in m["partitions"])
             for m in json.loads(rec["assignment"])]
    assert rec["after_max_lag"] == max(loads) < 2**54
    before = {0: "C0", 1: "C0", 2: "C1", 3: "C1"}
    assert rec["lag_moved"] == sum(lags[p["partition"]] for m in json.loads(rec["assignment"])
                                   for p in m["partitions"]
                                   if before[p["partition"]] != m["member_id"])


STRICT = convert.Options(safecheck=True)


def strict(buckets_: int = 0):
    """The update function with pyspark's safe conversion on (``convertToArrowArraySafely``)."""
    ctx = stateful.Context(POLICY, 600_000, arrow=STRICT)
    return buckets.update_function(ctx, buckets_) if buckets_ else stateful.update_function(ctx)


def with_generation(rows: list[dict], generation: int) -> list[dict]:
    """The rows with the members event's generation replaced (validation would reject this one; here
    it stands for any figure pyspark's conversion refuses)."""
    out = [dict(r) for r in rows]
    detail = json.loads(out[0]["detail"])
    out[0]["detail"] = json.dumps(detail | {"generation": generation})
    return out


def test_the_events_whose_recommendation_does_not_convert_are_rejected_and_the_rest_go_on():
    """A recommendation pyspark would refuse is an error of the events that made it (#47): those
    are rejected with the reason, the group's readings before them go into its state."""
    rows = with_generation(huge_skew(lags=(9000, 8000, 100, 100)), 2**40)
    update = strict()
    out = pyspark_worker.run(update, ("g",), [pd.DataFrame(rows, columns=COLUMNS)], safecheck=True)
    assert all(r["kind"] == "rejected" for r in out.rows)  # no recommendation row leaves
    rejected = [json.loads(r["rejected"]) for r in out.rows]
    offsets = sorted(r["source_offset"] for r in rejected)
    sent = [r["source_offset"] for r in rows]
    assert offsets and offsets == sent[-len(offsets):] != sent  # the last ones, not all
    assert {r["reason"].split(":")[0] for r in rejected} == {"internal error"}
    assert "Unconvertible" in rejected[0]["reason"] and "generation" in rejected[0]["reason"]
    assert out.updated and out.blob is not None  # the readings before them kept


def test_keyed_by_bucket_one_groups_rows_do_not_stop_the_others():
    bad = [r | {"group": "bad"}
           for r in with_generation(huge_skew(lags=(9000, 8000, 100, 100)), 2**40)]
    good = [r | {"group": "good"} for r in huge_skew()]
    update = strict(1)
    frame = pd.DataFrame(bad + good, columns=["group", *COLUMNS])
    out = pyspark_worker.run(update, (0,), [frame], safecheck=True)
    recs = [r for r in out.rows if r["kind"] == "recommendation"]
    assert [r["group"] for r in recs] == ["good"] and recs[0]["before_max_lag"] == MAX
    details = [json.loads(r["rejected"]) for r in out.rows if r["kind"] == "rejected"]
    offsets = sorted(d["source_offset"] for d in details)
    # the bad group's recommending events; its readings before them went on
    assert offsets and set(offsets) <= {r["source_offset"] for r in bad}
    assert set(buckets.decode(out.blob, 1, 0)) == {"good", "bad"}


def test_the_row_type_is_the_schema_spark_parses():
    # the worker has no JVM, so convert.struct_of parses the flat DDL itself; Spark's parser agrees
    # in tests/integration (test_total_output_spark); here the columns and types by name
    fields = {f.name: f.dataType.simpleString() for f in convert.row_type().fields}
    assert list(fields) == convert.ROW_COLUMNS
    assert {fields[c] for c in ("before_max_lag", "after_max_lag", "lag_moved")} == {"bigint"}


def test_figures_in_records_saturate_and_bounds_round_down():
    from streaming.contracts.recommendation import bound_below, finite, records

    assert (records(2**70) == MAX and records(MAX) == MAX and records(2**53 + 1) == 2**53 + 1
            and records(-3) == 0)
    assert (records(1e300) == MAX and records(math.inf) == MAX and records(math.nan) == 0
            and records(2.5) == 2)
    assert (finite(math.inf) is None and finite(math.nan) is None and finite(10**400) is None
            and finite(1.5) == 1.5)
    assert (bound_below(2**53 + 1) == 2.0**53 and bound_below(2**54 + 3) <= 2**54 + 3
            and bound_below(2.5) == 2.5)
    assert bound_below(MAX) < MAX


def test_recommendations_are_converted_once_and_leave_as_arrow_gave_them_back(monkeypatch):
    """A call's recommendation rows are converted before the group's state is kept, not again in
    output_frame; its other rows are converted there (a detail no UTF-8 holds becomes the rejected
    row saying so), and the frame is the one converting every row at once gives."""
    rows = huge_skew()
    calls: list[list[str]] = []
    real = convert.converted

    def counting(rs, options):
        calls.append([r["kind"] for r in rs])
        return real(rs, options)

    monkeypatch.setattr(convert, "converted", counting)
    out = stateful.update_function(stateful.Context(POLICY, 600_000))(
        ("g",), iter([pd.DataFrame(rows, columns=COLUMNS)]), pyspark_worker.group_state(None, 0))
    frame = next(out)
    recs = frame[frame["kind"] == "recommendation"]
    assert len(recs) == 1 and calls == [["recommendation"]]  # once, before the state was kept
    bad = {"kind": "rejected", "group": "g", "rejected": "\ud800"}
    mixed = [*real(frame.to_dict("records"), convert.Options()), bad]
    got = stateful.output_frame(mixed, convert.Options())
    assert calls[-1] == ["rejected"]
    assert got.iloc[:-1].equals(stateful.object_frame(real(mixed[:-1], convert.Options())))
    assert "internal error" in json.loads(got.iloc[-1]["rejected"])["reason"]

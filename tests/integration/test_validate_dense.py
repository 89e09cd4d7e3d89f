"""``lag_dense`` records through validate.parse on Spark: a broken shape rejects the record, a bad
entry only itself (with its reason and source), and an entry is good exactly when the same reading
as a ``lag`` event is valid (issue #31, item 1)."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from streaming.contracts import events as ev
from streaming.dev.fuzz import contract, seeded
from streaming.job import validate

pytestmark = pytest.mark.integration

LAG_TOPIC = "rebalancer.lag"
NOW = 1_763_800_000_000
LONG_MAX, INT_MAX = 2**63 - 1, 2**31 - 1
RAW_SCHEMA = ("key binary, value binary, topic string, partition int, offset long, timestamp "
              "timestamp, timestampType int")


def _parse(spark, texts: list[str]) -> list[dict]:
    stamp = dt.datetime.fromtimestamp(NOW / 1000, tz=dt.UTC)
    rows = [(b"g", t.encode(), LAG_TOPIC, 0, i, stamp, 0) for i, t in enumerate(texts)]
    out = validate.parse(spark.createDataFrame(rows, RAW_SCHEMA), 64 * 1024, 600_000, LAG_TOPIC)
    return [r.asDict() for r in out.orderBy("source_offset").collect()]


def _dense(partitions, committed, ends, **more) -> str:
    fields = {"type": "lag_dense", "ts": NOW, "group": "g", "topic": "t", "partitions": partitions,
              "committed_offsets": committed, "end_offsets": ends} | more
    return contract.to_json(fields)


def _readings(row: dict) -> list[tuple[int, int, int]]:
    n = len(row["readings"]) // 3
    return list(zip(*(row["readings"][k * n:(k + 1) * n] for k in range(3)), strict=True))


def test_shape_and_entries(spark):
    raw = contract.Raw
    texts = [
        _dense([0, 1, 2], [5, 6, 7], [9, 9, 9]),
        _dense([2, 0], [0, LONG_MAX], [0, LONG_MAX], no_commit=[True, None]),
        _dense([0, 1], [5, 6, 7], [9, 9, 9]),
        _dense([0], [1], [2], no_commit=[True, False]),
        _dense([], [], []),
        _dense(5, [1], [1]),
        _dense([0], [1], [2], no_commit=True),
        _dense([0, 1, 1, 2, INT_MAX + 1, 3, 4, 5, raw("6.0")],
               [5, 6, 7, -1, 0, LONG_MAX + 1, 9, 0, 0],
               [9, 9, 9, 9, 0, LONG_MAX + 1, 8, raw("1e400"), 0], no_commit=[False] * 8 + ["x"]),
        _dense([0, 1], [raw("1.0"), 2], [3, "4"]),
    ]
    rows = _parse(spark, texts)
    assert [r["type"] for r in rows] == ["lag_dense", "lag_dense", None, None, None, None, None,
                                         "lag_dense", "lag_dense"]
    assert _readings(rows[0]) == [(0, 5, 9), (1, 6, 9), (2, 7, 9)] and rows[0]["detail"] is None
    assert _readings(rows[1]) == [(2, 0, 0), (0, LONG_MAX, LONG_MAX)]
    reasons = [json.loads(r["detail"])["reason"] for r in rows[2:7]]
    assert reasons == [
        "arrays of unequal length: partitions 2, committed_offsets 3, end_offsets 3, no_commit "
        "absent",
        "arrays of unequal length: partitions 1, committed_offsets 1, end_offsets 1, no_commit 2",
        "no partitions", "field partitions is not a list: BIGINT", "field no_commit is not a list"]
    # walked entry by entry: what is left, in partition order
    assert _readings(rows[7]) == [(0, 5, 9)]
    bad = json.loads(rows[7]["detail"])
    assert {b["reason"] for b in bad} == {
        "lag_dense entry 1: partition 1 appears more than once",
        "lag_dense entry 2: partition 1 appears more than once",
        "lag_dense entry 3: negative committed_offset -1",
        f"lag_dense entry 4: partition {INT_MAX + 1} above {INT_MAX}",
        "lag_dense entry 5: committed_offset is not an integer: 9223372036854775808 "
        "(DECIMAL(19,0))",
        "lag_dense entry 6: end_offset 8 below committed_offset 9",
        "lag_dense entry 7: end_offset is not an integer: Infinity (DOUBLE)",
        "lag_dense entry 8: partition is not an integer: 6 (DECIMAL(1,0))"}
    assert {(b["source_topic"], b["source_offset"]) for b in bad} == {(LAG_TOPIC, 7)}
    assert json.loads(next(b for b in bad if "entry "
                                             "3" in b["reason"])["raw_value"]) == ev.lag_event(
        NOW, "g", "t", 2, -1, 9) | {"no_commit": False}
    # no good entry: no state
    assert rows[8]["readings"] == [] and len(json.loads(rows[8]["detail"])) == 2


def test_log_starts_ride_with_their_good_entries(spark):
    raw = contract.Raw
    texts = [
        _dense([0, 1, 2], [5, 6, 7], [9, 9, 9], log_start_offsets=[1, 6, 9]),
        _dense([0, 1, 2], [5, 6, 7], [9, 9, 9], log_start_offsets=[1, 10, -1]),
        _dense([0, 1], [5, 6], [9, 9], log_start_offsets=[1]),
        _dense([0], [5], [9], log_start_offsets=3),
        _dense([0, 1], [5, 6], [9, 9], log_start_offsets=[raw("1.5"), 2]),
        _dense([0, 1], [5, 6], [9, 9]),
        # an end far below its log start: comparing them must not overflow (end - start did, and
        # failed the query)
        _dense([0, 1], [0, 0], [-(2**63), 5], log_start_offsets=[1, 0]),
    ]
    rows = _parse(spark, texts)
    assert [r["type"] for r in rows] == ["lag_dense", "lag_dense", None, None, "lag_dense",
                                         "lag_dense", "lag_dense"]
    assert _readings(rows[0]) == [(0, 5, 9), (1, 6, 9), (2, 7, 9)] \
        and rows[0]["log_starts"] == [1, 6, 9]
    assert _readings(rows[1]) == [(0, 5, 9)] and rows[1]["log_starts"] == [1]
    assert {b["reason"] for b in json.loads(rows[1]["detail"])} == {
        "lag_dense entry 1: log_start_offset 10 above end_offset 9",
        "lag_dense entry 2: negative log_start_offset -1"}
    assert [json.loads(r["detail"])["reason"] for r in rows[2:4]] == [
        "arrays of unequal length: partitions 2, committed_offsets 2, end_offsets 2, no_commit "
        "absent, log_start_offsets 1", "field log_start_offsets is not a list"]
    assert _readings(rows[4]) == [(1, 6, 9)] and rows[4]["log_starts"] == [2]
    assert [b["reason"] for b in json.loads(rows[4]["detail"])] == [
        "lag_dense entry 0: log_start_offset is not an integer: 1.5 (DECIMAL(2,1))"]
    assert rows[5]["log_starts"] is None  # an older collector's record: no log starts, as before
    assert _readings(rows[6]) == [(1, 0, 5)] and rows[6]["log_starts"] == [0]
    assert [b["reason"] for b in json.loads(rows[6]["detail"])] == [
        "lag_dense entry 0: end_offset -9223372036854775808 below committed_offset 0"]


def test_an_entry_is_good_exactly_when_its_lag_event_is_valid(spark):
    """Drawn entries (values at and past every bound), each also sent as a lag event of its own."""
    records = [r for r in seeded.draw(contract.dense_fields(NOW - 60_000), 150, 3)
               if all(isinstance(r.get(a), list) for a in ev.DENSE_ARRAYS)
               and len({len(r[a]) for a in ev.DENSE_ARRAYS}) == 1 and r["partitions"]
               and "no_commit" not in r
               and (ev.LOG_STARTS not in r or (isinstance(r[ev.LOG_STARTS], list)
                                               and len(r[ev.LOG_STARTS]) == len(r["partitions"])))
               # a bad count rejects the whole record (test_validate_paths has it)
               and (type(r.get(ev.METADATA_EVENTS, 0)) is int
                    and 0 <= r.get(ev.METADATA_EVENTS, 0) < 2**31)]
    fixed = [r | {"type": ev.LAG_DENSE, "ts": NOW - 1000, "group": "g", "topic": "t"}
             for r in records]
    texts = [contract.to_json(r) for r in fixed]
    singles = [contract.to_json(single) for r in fixed for single in _singles(r)]
    rows = _parse(spark, texts + singles)
    dense_rows, single_rows = rows[:len(texts)], iter(rows[len(texts):])
    checked = 0
    for r, row in zip(fixed, dense_rows, strict=True):
        assert row["type"] == ev.LAG_DENSE, row["detail"]
        good = set(_readings(row))
        ints = [p for p in r["partitions"] if type(p) is int]  # true is no integer (nor 1) in JSON

        def key(*values):
            return values if all(type(v) is int for v in values) else None

        # log starts: with their single
        for p, c, e in zip(*(r[a] for a in ev.DENSE_ARRAYS), strict=True):
            single = next(single_rows)
            # a repeated partition: rejected in the dense form only
            if type(p) is int and ints.count(p) > 1:
                assert key(p, c, e) not in good
                continue
            assert (key(p, c, e) in good) == (single["type"] == ev.LAG), (r, p, c, e)
            checked += 1
    assert checked > 100


def _singles(dense: dict) -> list[dict]:
    """Each entry of a ``lag_dense`` event as a ``lag`` event of its own, with its log start when it
    has one."""
    starts = dense.get(ev.LOG_STARTS)
    out = []
    for i, (p, c, e) in enumerate(zip(*(dense[a] for a in ev.DENSE_ARRAYS), strict=True)):
        single = {"type": "lag", "ts": NOW - 1000, "group": "g", "topic": "t", "partition": p,
                  "committed_offset": c, "end_offset": e}
        out.append(single | ({ev.LOG_START: starts[i]} if starts is not None else {}))
    return out

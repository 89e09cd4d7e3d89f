"""The member-load report's contract: what ``parse`` takes is exactly what ``encode`` writes, and no
value makes it raise."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from streaming.contracts import member_load as ml
from streaming.contracts.member_load import Report

ids = st.text(min_size=1, max_size=20)
reports = st.builds(Report, st.integers(1, 2**63 - 1), ids, ids, st.one_of(st.none(), ids),
                    st.floats(0, 1), st.floats(0, ml.MAX_RECORDS_PER_S),
                    st.floats(0.001, 1e6),
                    st.one_of(st.none(), st.floats(0, ml.MAX_RECORD_COST_S, exclude_min=True)),
                    st.one_of(st.none(), st.integers(0, ml.MAX_LAG)))
json_values = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(),
                                     st.text(max_size=5)),
                           lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                   st.dictionaries(st.text(max_size=5), inner,
                                                                   max_size=3)), max_leaves=8)


@given(reports)
def test_what_encode_writes_parse_reads_back(report: Report) -> None:
    assert ml.parse(ml.encode(report)) == report


@given(reports, st.sampled_from(["ts", "group", "client_id", "member_id", "busy",
                                 "records_per_s", "window_s", "type", "record_cost_s",
                                 "records_lag_min"]),
       json_values)
def test_any_field_out_of_contract_makes_no_report(report: Report, name: str, value) -> None:
    obj = ml.report_event(report) | {name: value}
    parsed = ml.parse(json.dumps(obj).encode())
    if parsed is not None:  # the value drawn happened to be inside the contract
        again = ml.report_event(parsed)
        assert again.get(name) == value or (name == "member_id" and value is None)


@given(st.binary(max_size=64))
def test_any_bytes_parse_or_are_refused(value: bytes) -> None:
    assert ml.parse(value) is None or isinstance(ml.parse(value), Report)


def test_the_bounds() -> None:
    base = ml.report_event(Report(1, "g", "c", None, 0.5, 10.0, 5.0))
    for name, bad in [("busy", 1.0001), ("busy", -0.1), ("records_per_s", -1),
                      ("records_per_s", 1e13), ("window_s", 0), ("ts", 0), ("ts", 2**63),
                      ("ts", 1.5), ("group", ""), ("client_id", 7), ("busy", True),
                      ("record_cost_s", 0), ("record_cost_s", -0.001), ("record_cost_s", True),
                      ("record_cost_s", ml.MAX_RECORD_COST_S * 1.001), ("record_cost_s", "1"),
                      ("records_lag_min", -1), ("records_lag_min", 2**63), ("records_lag_min", 1.0),
                      ("records_lag_min", True), ("records_lag_min", "3")]:
        assert ml.parse(json.dumps(base | {name: bad}).encode()) is None, (name, bad)
    assert ml.parse(json.dumps(base | {"busy": 1, "records_per_s": 0}).encode()) is not None
    assert ml.parse(json.dumps(base | {"record_cost_s": ml.MAX_RECORD_COST_S}).encode()) \
        == Report(1, "g", "c", None, 0.5, 10.0, 5.0, ml.MAX_RECORD_COST_S)
    assert ml.parse(json.dumps(base | {"record_cost_s": None}).encode()) == ml.parse(
        json.dumps(base).encode())
    assert ml.parse(json.dumps(base | {"records_lag_min": 2**63 - 1}).encode()) \
        == Report(1, "g", "c", None, 0.5, 10.0, 5.0, None, 2**63 - 1)
    # a report's load in a members event keeps every figure it has, and only those
    assert Report(1, "g", "c", None, 0.5, 10.0, 5.0, None, 0).load(7) == {
        "ts": 7, "busy": 0.5, "records_per_s": 10.0, "records_lag_min": 0}

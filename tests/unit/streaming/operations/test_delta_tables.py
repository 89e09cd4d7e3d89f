"""Which columns an older recommendations table gets at start
(streaming.operations.delta_tables.columns_to_add): the declared added columns it lacks, and nothing
when anything else differs; an upkeep step whose commit loses to a concurrent one runs again
(retry_conflicts)."""

from __future__ import annotations

import pytest
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from streaming.contracts.recommendation import CAPACITY_TYPE, HOT_TYPE, MEMBER_FIGURES_TYPE
from streaming.contracts.tables import ADDED_COLUMNS, RECOMMENDATIONS_DDL
from streaming.operations import delta_tables
from streaming.operations.delta_tables import columns_to_add, schema_differences

ADDED = {"mode": "STRING", "before_catch_up_s": "DOUBLE", "after_catch_up_s": "DOUBLE",
         "lag_age_s": "DOUBLE",
         "member_capacity": CAPACITY_TYPE, "rack_placement": "STRING", "serving": "STRING",
         "member_figures": MEMBER_FIGURES_TYPE,
         "hot_partitions": HOT_TYPE}
PARTITION = StructType([StructField("topic", StringType()),
                        StructField("partition", IntegerType())])
WANT = StructType([StructField("group", StringType()), StructField("version", LongType()),
                   StructField("mode", StringType()),
                   StructField("before_catch_up_s", DoubleType()),
                   StructField("after_catch_up_s", DoubleType()),
                   StructField("lag_age_s", DoubleType()),
                   StructField("member_capacity", ArrayType(StructType([
                       StructField("member_id", StringType()),
                       StructField("client_id", StringType()),
                       StructField("records_per_s", DoubleType()),
                       StructField("confidence_s", DoubleType()),
                       StructField("measured", BooleanType())]))),
                   StructField("rack_placement", StringType()),
                   StructField("serving", StringType()),
                   StructField("member_figures", ArrayType(StructType([
                       StructField("member_id", StringType()),
                       StructField("owned", ArrayType(PARTITION)),
                       *(StructField(f"{name}_{when}", kind) for name, kind in (
                           ("load", LongType()), ("rate", DoubleType()))
                           for when in ("before", "after")),
                       StructField("capacity", DoubleType()),
                       *(StructField(f"catch_up_{when}_s", DoubleType())
                         for when in ("before", "after")),
                       *(StructField(f"cross_rack_{when}", IntegerType())
                         for when in ("before", "after"))]))),
                   StructField("hot_partitions", ArrayType(StructType([
                       StructField("topic", StringType()), StructField("partition", IntegerType()),
                       StructField("records_per_s", DoubleType()),
                       StructField("topic_median_per_s", DoubleType()),
                       StructField("share", DoubleType())])))])


def _without(*names, schema=WANT):
    return StructType([f for f in schema.fields if f.name not in names])


def test_the_lag_seconds_columns_are_declared_added_and_in_the_ddl():
    assert ADDED_COLUMNS == ADDED
    for name, kind in ADDED_COLUMNS.items():
        assert f"{name} {kind}" in " ".join(RECOMMENDATIONS_DDL.split())


def test_a_table_from_before_modes_gets_every_added_column_in_declared_order():
    diff = schema_differences(WANT, _without(*ADDED))
    assert columns_to_add(diff, ADDED) == list(ADDED)


def test_a_table_from_before_rack_placement_gets_it_alone():
    assert (columns_to_add(schema_differences(WANT, _without("rack_placement")), ADDED)
            == ["rack_placement"])


def test_a_table_from_before_serving_gets_it_alone():
    assert columns_to_add(schema_differences(WANT, _without("serving")), ADDED) == ["serving"]


def test_a_table_from_before_member_figures_gets_them_alone():
    assert (columns_to_add(schema_differences(WANT, _without("member_figures")), ADDED)
            == ["member_figures"])


def test_a_table_from_before_hot_partitions_gets_it_alone():
    assert (columns_to_add(schema_differences(WANT, _without("hot_partitions")), ADDED)
            == ["hot_partitions"])


def test_a_table_from_before_lag_seconds_gets_those_alone():
    diff = schema_differences(WANT, _without("before_catch_up_s", "after_catch_up_s", "lag_age_s"))
    assert columns_to_add(diff, ADDED) == ["before_catch_up_s", "after_catch_up_s", "lag_age_s"]


def test_any_other_difference_is_left_to_the_error():
    other = StructType([*_without("mode").fields, StructField("extra", StringType())])
    assert columns_to_add(schema_differences(WANT, other), ADDED) == []
    wrong_type = StructType([StructField("lag_age_s", StringType()) if f.name == "lag_age_s" else f
                             for f in _without("mode").fields])
    assert columns_to_add(schema_differences(WANT, wrong_type), ADDED) == []
    missing_core = _without("version", "mode")
    assert columns_to_add(schema_differences(WANT, missing_core), ADDED) == []
    assert columns_to_add(schema_differences(WANT, WANT), ADDED) == []
    # rejected_events declares no added columns: a missing column there is always an error
    assert columns_to_add(schema_differences(WANT, _without("mode")), {}) == []


def test_figures_in_records_of_an_older_table_keep_their_double_type_and_nothing_else_does():
    from streaming.contracts.tables import OLDER_TYPES
    from streaming.operations.delta_tables import kept_types, type_lines

    want = StructType([StructField("before_max_lag", LongType()),
                       StructField("lag_moved", LongType()), StructField("version", LongType())])
    old = StructType([StructField("before_max_lag", DoubleType()),
                      StructField("lag_moved", DoubleType()), StructField("version", LongType())])
    diff = schema_differences(want, old)
    kept = kept_types(diff, OLDER_TYPES)
    assert kept == {"before_max_lag": "double", "lag_moved": "double"}
    assert set(diff) == type_lines(kept, want)
    wrong = StructType([*old.fields[:2], StructField("version", DoubleType())])
    assert ("column version is double, expected bigint"
            in set(schema_differences(want, wrong)) - type_lines(kept, want))
    assert kept_types(schema_differences(
        want, StructType([StructField("before_max_lag", StringType())])), OLDER_TYPES) == {}


def _conflict() -> Exception:
    from delta.exceptions.base import ConcurrentAppendException

    return ConcurrentAppendException(
        "Files were added to the root of the table by a concurrent update")


def test_a_conflicting_step_runs_again_until_it_commits():
    calls, waits, said = [], [], []

    def step():
        calls.append(1)
        if len(calls) < 3:
            raise _conflict()
        return 7

    assert delta_tables.retry_conflicts(step, "rejected_events: DELETE", out=said.append,
                                        sleep=waits.append) == 7
    assert len(calls) == 3 and waits == [1, 2]
    assert said[0].startswith(
        "rejected_events: DELETE: ConcurrentAppendException (another writer committed")


def test_the_last_conflict_and_any_other_error_are_raised():
    from delta.exceptions.base import ConcurrentAppendException

    waits: list[float] = []
    with pytest.raises(ConcurrentAppendException):
        delta_tables.retry_conflicts(lambda: (_ for _ in ()).throw(_conflict()), "x",
                                     out=lambda s: None, attempts=4, sleep=waits.append)
    assert waits == [1, 2, 4]
    calls = []
    with pytest.raises(ValueError):
        delta_tables.retry_conflicts(
            lambda: calls.append(1) or (_ for _ in ()).throw(ValueError("bad")), "x",
            sleep=waits.append)
    assert calls == [1]  # not a conflict: not run again

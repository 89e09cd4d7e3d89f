"""Validation reads the field types of a record of one of the collector's shapes from one lookup
(:func:`streaming.job.field_columns.hot_kinds`) instead of asking the VARIANT for each field. The
lookup must say what the VARIANT says: checked against Spark's own ``schema_of_variant`` for every
hot shape and every field name any of them has, on a record built from the shape."""

from __future__ import annotations

import json

import pytest
from pyspark.sql import functions as F

from streaming.job import dense, field_columns
from streaming.job import variant_fields as vf

pytestmark = pytest.mark.integration

SAMPLE = {"STRING": "s", "BIGINT": 7, "BOOLEAN": True, "ARRAY<BIGINT>": [1, 2],
          "ARRAY<BOOLEAN>": [True, False]}
"""A JSON value of each type a hot shape holds."""
SHAPES = [*field_columns.LAG_HOT_SHAPES, *dense.HOT_SHAPES]


def _lookup(spark, texts: list[str], names: list[str]) -> list:
    df = spark.createDataFrame([(t,) for t in texts], "text string")
    v = F.parse_json("text")
    return df.select(field_columns.hot_kinds(F.schema_of_variant(v)).alias("hot"),
                     *(vf.kind(v, f"$.{n}").alias(n) for n in names)).collect()


def test_every_hot_shape_gives_each_field_its_variant_type(spark):
    names = sorted({n for kinds in SHAPES for n in kinds} | {"absent"})
    texts = [json.dumps({n: SAMPLE[k] for n, k in kinds.items()}) for kinds in SHAPES]
    rows = _lookup(spark, texts, names)
    assert len(rows) == len(SHAPES) == 12
    for kinds, row in zip(SHAPES, rows, strict=True):
        assert row["hot"] is not None, kinds
        assert {n: row["hot"].get(n) for n in names} == {n: row[n] for n in names}
        assert {n: row[n] for n in kinds} == kinds  # the sample has the shape it was built from


def test_a_shape_that_is_not_hot_has_no_lookup(spark):
    lag = {n: SAMPLE[k] for n, k in field_columns.LAG_HOT_SHAPES[0].items()}
    near = [{**lag, "ts": 1.5}, {**lag, "extra": 1}, {n: v for n, v in lag.items() if n != "ts"}]
    texts = [*map(json.dumps, near), "[1]", "7"]
    assert [r["hot"] for r in _lookup(spark, texts, ["ts"])] == [None] * 5

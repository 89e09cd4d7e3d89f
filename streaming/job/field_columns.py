"""A record's top-level fields as columns, read once per record so that no rule of
:mod:`streaming.job.validate` looks a field up again: ``k_<name>``, the field's JSON type
as ``schema_of_variant`` names it (:func:`k`), and ``x_<name>``, its value when the type
is right (:func:`x`).

The hot path, an event of exactly one of the collector's shapes, is recognised from the schema of
the whole object (one call), which one lookup turns into every field's type (``hot``); its values
come from one cast to a struct. A record a fast path read (:mod:`streaming.job.canonical`) has its
fields from there; anything else reads each field's type on its own.

The lookup replaces a branch per hot shape and field: validation's plan went from ~4,490 expression
nodes to ~4,060, and the planning Spark repeats in every micro-batch from ~340 to ~300 ms
(``python -m benchmarks.planning``; ``benchmarks/results/job.txt``).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from streaming.contracts import events
from streaming.contracts.events import LOG_START, MEMBERS, METADATA_EVENTS, PARTITIONS
from streaming.job import canonical as fast
from streaming.job import dense
from streaming.job import variant_fields as vf

_SCALARS = ("type", "ts", "group", "topic", "partition", "committed_offset", "end_offset",
            "no_commit", LOG_START, METADATA_EVENTS, "generation", "protocol", "part", "parts")
_STRINGS = ("type", "group", "topic", "protocol")
_BOOLEANS = ("no_commit",)
_TYPES = {n: "string" if n in _STRINGS else "boolean" if n in _BOOLEANS else "bigint"
          for n in _SCALARS}  # SQL types
_VALUES = "struct<" + ", ".join(f"{n}: {t}" for n, t in _TYPES.items()) + ">"
LAG_HOT_SHAPES = [fast.LAG_KINDS | flag | start | count
                  for flag in ({}, {"no_commit": "BOOLEAN"})
                  for start in ({}, {LOG_START: "BIGINT"})
                  for count in ({}, {METADATA_EVENTS: "BIGINT"})]
"""The fields and types of the collector's lag events (``schema_of_variant``'s names)."""


def _shape(kinds: dict[str, str]) -> str:
    """``schema_of_variant`` of an object with these fields (it lists them sorted by name)."""
    return "OBJECT<" + ", ".join(f"{n}: {kinds[n]}" for n in sorted(kinds)) + ">"


def hot_kinds(shape: Column) -> Column:
    """Field name -> JSON type of a record whose ``shape`` is one of the hot shapes (a lag event's
    or a ``lag_dense`` event's, :data:`streaming.job.dense.HOT_SHAPES`), else null. A shape names
    every field with its type, so a field absent from it has no type (null), as for any record."""
    def kinds_map(kinds: dict[str, str]) -> Column:
        return F.create_map(*(F.lit(part) for n in sorted(kinds) for part in (n, kinds[n])))

    shapes = (*LAG_HOT_SHAPES, *dense.HOT_SHAPES)
    table = F.create_map(*(c for kinds in shapes for c in (F.lit(_shape(kinds)), kinds_map(kinds))))
    return table[shape]


def k(name: str) -> Column:
    """The JSON type of top-level field ``name`` (column ``k_<name>``)."""
    return F.col(f"k_{name}")


def x(name: str) -> Column:
    """The value of top-level field ``name`` when its type is right, else null (``x_<name>``)."""
    return F.col(f"x_{name}")


def with_fields(df: DataFrame) -> DataFrame:
    """Adds the top-level field columns; ``members``/``partitions`` as arrays of
    VARIANTs (metadata only)."""
    canonical = F.col("canonical")
    df = df.select("*", F.schema_of_variant("v").alias("shape"),
                   vf.get("v", "$", _VALUES).alias("values"))
    df = df.select("*", hot_kinds(F.col("shape")).alias("hot"))
    hot = F.col("hot")

    exact, read = F.col("exact_dense"), F.col("dense_read")

    def kind(name: str) -> Column:
        slow = F.schema_of_variant(vf.get("v", f"$.{name}"))
        dense_kind = (fast.dense_kind(read, name) if name in fast.DENSE_SCALARS
                      else F.lit(None).cast("string"))
        return (F.when(canonical, fast.canonical_kind(name)).when(exact, dense_kind)
                .when(hot.isNotNull(), hot[name]).otherwise(slow))

    def value(name: str, general: Column) -> Column:
        lag = fast.canonical_value(name)
        general = general if lag is None else F.when(canonical, lag).otherwise(general)
        dense_value = read[name] if name in fast.DENSE_SCALARS else F.lit(None)
        return F.when(exact, dense_value).otherwise(general)

    df = df.select("*", *(kind(n).alias(f"k_{n}") for n in _SCALARS))
    return df.select(
        "*",
        # a field of the right type casts exactly; the per-field read covers a struct cast another
        # field failed
        *(value(n, F.when(k(n) == _TYPES[n].upper(),
                          F.coalesce(F.col(f"values.{n}"), vf.get("v", f"$.{n}", _TYPES[n]))))
          .alias(f"x_{n}") for n in _SCALARS),
    ).select(
        "*",
        F.when(x("type") == MEMBERS, vf.as_list("v", "$.members")).alias("x_members"),
        F.when(x("type") == PARTITIONS, vf.as_list("v", "$.partitions")).alias("x_partitions"),
    ).transform(lambda d: dense.columns(d, lambda path: vf.kind("v", path),
                                        x("type") == events.LAG_DENSE, hot, exact, read))


def field(name: str, type_name: str, ok: Column) -> Column:
    """Reason for a missing or wrongly typed top-level field, else null."""
    kind = k(name) if name in _SCALARS else F.schema_of_variant(vf.get("v", f"$.{name}"))
    return F.when(
        ~F.coalesce(ok, F.lit(False)),
        F.when(kind.isNull(), F.lit(f"missing field {name}"))
        .otherwise(F.format_string(f"field {name} is not {type_name}: %s (%s)",
                                   F.substring(vf.get("v", f"$.{name}").cast("string"), 1, 40),
                                   F.substring(kind, 1, 20))),
    )


def opt(name: str, kind: str) -> Column:
    """An optional field: absent, JSON null, or of this type."""
    return F.coalesce(k(name).isin("VOID", kind), F.lit(True))

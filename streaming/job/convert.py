"""The stateful step's output rows converted to Arrow exactly as pyspark's worker will convert them.

pyspark converts what an ``applyInPandasWithState`` function returns only after it has returned
(``ApplyInPandasWithStateSerializer.dump_stream`` -> ``PandasToArrowConversion.convert`` with
``arrow_cast``); a value it refuses there fails the task, so the query, and its restart replays the
same batch. The stateful step therefore runs that same conversion, with the worker's configuration,
on each group's rows before it keeps the group's state: a group whose rows do not convert is
rejected (:mod:`streaming.job.stateful`), and the rows that do convert leave as the values Arrow
made of them (:class:`Converted`, never converted again in the call), so the worker's conversion of
the whole call repeats a conversion that already succeeded.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import pandas as pd
from pyspark.sql.conversion import PandasToArrowConversion
from pyspark.sql.types import (
    DataType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from assignors.errors import RebalancerError
from streaming.contracts.recommendation import OUTPUT_COLUMNS, OUTPUT_SCHEMA

ROW_SCHEMA = "kind STRING, " + OUTPUT_SCHEMA + ", rejected STRING"
"""The stateful step's output rows: ``kind`` is ``recommendation`` (the
recommendation columns), ``rejected`` (``group`` and ``rejected``, the record's
JSON detail in :data:`streaming.job.validate.REJECTED_SCHEMA`) or ``metadata_missing``
(``group`` and ``event_ts``: :func:`streaming.job.stateful.missing_rows`)."""
ROW_COLUMNS = ["kind", *OUTPUT_COLUMNS, "rejected"]

# Keys and defaults as pyspark.worker.RunnerConf reads them; the JVM sends the session's values.
SAFECHECK = ("spark.sql.execution.pandas.convertToArrowArraySafely", "false")
BY_NAME = ("spark.sql.legacy.execution.pandas.groupedMap.assignColumnsByName", "true")
INT_TO_DECIMAL = ("spark.sql.execution.pythonUDF.pandas.intToDecimalCoercionEnabled", "false")
TIMEZONE = "spark.sql.session.timeZone"
_TYPES: dict[str, DataType] = {"STRING": StringType(), "LONG": LongType(), "BIGINT": LongType(),
                               "INT": IntegerType(), "DOUBLE": DoubleType()}


@dataclass(frozen=True)
class Options:
    """The worker's conversion settings (pyspark.worker.RunnerConf)."""

    timezone: str | None = None
    safecheck: bool = False
    assign_cols_by_name: bool = True
    int_to_decimal: bool = False

    @classmethod
    def of_session(cls, spark: Any = None) -> Options:
        """The settings of ``spark`` (default: the active session; none: the worker's defaults)."""
        if spark is None:
            from pyspark.sql import SparkSession

            spark = SparkSession.getActiveSession()
        if spark is None:
            return cls()

        def flag(key: tuple[str, str]) -> bool:
            return str(spark.conf.get(key[0], key[1])).lower() == "true"

        return cls(spark.conf.get(TIMEZONE, None), flag(SAFECHECK), flag(BY_NAME),
                   flag(INT_TO_DECIMAL))


def struct_of(ddl: str) -> StructType:
    """The StructType of a flat ``name TYPE, ...`` schema (Spark's DDL parser needs a JVM; the
    worker has none)."""
    fields = [part.split() for part in ddl.split(",")]
    return StructType([StructField(name, _TYPES[kind.upper()]) for name, kind in fields])


@functools.cache
def row_type() -> StructType:
    """The update function's output type (:data:`ROW_SCHEMA`)."""
    return struct_of(ROW_SCHEMA)


class Converted(dict):
    """A row as :func:`converted` read it back from Arrow: pyspark's conversion of it succeeds, and
    gives it back."""


class Unconvertible(RebalancerError, ValueError):
    """pyspark's conversion refused the rows (its message says which column)."""


def converted(rows: list[dict[str, Any]], options: Options) -> list[Converted]:
    """``rows`` (of :func:`row_type`'s columns) as pyspark's worker converts them, read back as
    Python values (a BIGINT an int, a DOUBLE a float; a column null in every row is left out: null
    converts to every type). Raises :class:`Unconvertible` where pyspark's conversion raises.

    Only the columns with a value are converted: pyspark's conversion, and pandas, cost something
    per column whatever the rows, and most calls return rejected rows, three columns of the 29."""
    present = {k for row in rows for k, v in row.items()
               if v is not None and not (isinstance(v, float) and v != v)}
    schema = StructType([f for f in row_type().fields if f.name in present])
    try:
        batch = PandasToArrowConversion.convert(
            pd.DataFrame(rows, columns=schema.names, dtype=object), schema,
            timezone=options.timezone, safecheck=options.safecheck, arrow_cast=True,
            assign_cols_by_name=options.assign_cols_by_name,
            int_to_decimal_coercion_enabled=options.int_to_decimal)
    except Exception as exc:
        # pyspark's own errors, and Arrow's that it lets through (OverflowError)
        cause = exc.__cause__ or exc
        raise Unconvertible(f"{exc} ({type(cause).__name__}: {cause})") from exc
    return [Converted(row) for row in batch.to_pylist()]

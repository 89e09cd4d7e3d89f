"""What the job's start does with its Delta tables' logs without a Spark job where a table is local:
create the table, and read its schema, its properties and the highest recommendation version per
group.

Why: in a new driver JVM Spark answers each read with a job that rebuilds the table's state
(a read's schema, DESCRIBE DETAIL, a GROUP BY): 9-10 s of every restart of the job, measured with
py-spy on a ``rebalancer run`` child; its CREATE TABLE took 5 s for the two tables. delta-rs does
the same in milliseconds. The rule is the one of the driver-side appender
(:mod:`streaming.job.driver_delta`) and ``rebalancer recommendations``: local tables only (delta-rs
knows nothing of the Hadoop configuration that holds an object store's credentials), and what
delta-rs cannot do (a table feature it lacks) Spark does, as before. A table delta-rs creates has
the protocol that its properties need (writer version 4 for the Change Data Feed) where Spark
writes version 7 with those features named; Spark reads, appends to, alters and compacts either.

A table's schema in its log is Spark's own StructType JSON (the ``schemaString`` of its metadata),
so both readers give the same StructType; tests/integration/test_driver_delta.py checks they do.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyspark.sql import Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, StructType

from streaming.errors import JobError
from streaming.paths import local_path

if TYPE_CHECKING:
    from deltalake import DeltaTable

log = logging.getLogger(__name__)

MAPPING = "delta.columnMapping."


def create(spark: SparkSession, location: str, ddl: str, properties: dict[str, str],
           by_delta_rs: bool = True) -> None:
    """An empty table of the columns ``ddl`` names, with these properties. Raises
    :class:`JobError` when a table is there already: no IF NOT EXISTS, since a table appearing
    in between is another writer's, and must not pass silently. ``by_delta_rs`` False: Spark
    does it (``job.delta_writer = spark``), as every function here."""
    local = local_path(location) if by_delta_rs else None
    if local is not None and _created_by_delta_rs(local, schema_of(ddl), properties):
        return
    listed = ", ".join(f"{k} = '{v}'" for k, v in properties.items())
    spark.sql(f"CREATE TABLE delta.`{location}` ({ddl}) USING DELTA TBLPROPERTIES ({listed})")


def schema_of(ddl: str) -> StructType:
    """The columns ``ddl`` names, as Spark parses them: one call of the driver JVM, where an empty
    DataFrame's schema (the same StructType) cost 9 s in a new JVM under load, 0.2-0.6 s after."""
    found = DataType.fromDDL(ddl)
    if not isinstance(found, StructType):
        raise ValueError(f"not a list of columns: {ddl[:80]!r}")
    return found


def _created_by_delta_rs(local: Path, schema: StructType, properties: dict[str, str]) -> bool:
    """Whether delta-rs created the table (from Spark's own reading of the DDL, so its types are
    the ones Spark gives it); False when Spark should try."""
    from deltalake import DeltaTable, Schema
    from deltalake.exceptions import DeltaError

    try:
        DeltaTable.create(str(local), Schema.from_json(schema.json()), mode="error",
                          configuration=dict(properties))
        return True
    except DeltaError as e:
        if (local / "_delta_log").is_dir():
            raise JobError(f"a table appeared at {local} while the job created it: another "
                           f"writer's ({str(e).splitlines()[0][:200]})") from e
        _say(str(local), e)
        return False


def schema(spark: SparkSession, location: str, by_delta_rs: bool = True) -> StructType:
    """The table's schema."""
    table = _delta_rs(location) if by_delta_rs else None
    if table is not None:
        try:
            return StructType.fromJson(_without_mapping(json.loads(table.schema().to_json())))
        except (KeyError, ValueError) as e:  # a type pyspark does not know: Spark reads it
            _say(location, e)
    return spark.read.format("delta").load(location).schema


def _without_mapping(node: Any) -> Any:
    """The schema's JSON without the column mapping's field metadata (ids, physical names), which a
    Spark read leaves out of the schema it gives."""
    if isinstance(node, list):
        return [_without_mapping(n) for n in node]
    if not isinstance(node, dict):
        return node
    return {k: ({m: x for m, x in v.items() if not m.startswith(MAPPING)}
                if k == "metadata" and isinstance(v, dict) else _without_mapping(v))
            for k, v in node.items()}


def properties(spark: SparkSession, location: str, by_delta_rs: bool = True) -> dict[str, str]:
    """The table's properties (``TBLPROPERTIES``)."""
    table = _delta_rs(location) if by_delta_rs else None
    if table is not None:
        return dict(table.metadata().configuration)
    return dict(detail(spark, location)["properties"] or {})


def detail(spark: SparkSession, location: str) -> Row:
    """The table's DESCRIBE DETAIL row (one row for any Delta table), by Spark."""
    row = spark.sql(f"DESCRIBE DETAIL delta.`{location}`").first()
    if row is None:
        raise JobError(f"DESCRIBE DETAIL of {location} returned nothing")
    return row


def max_versions(spark: SparkSession, location: str, by_delta_rs: bool = True) -> dict[str, int]:
    """The highest ``version`` per ``group`` of the recommendations table at ``location``."""
    pairs = _max_versions_by_delta_rs(location) if by_delta_rs else None
    if pairs is None:
        rows = (spark.read.format("delta").load(location)
                .groupBy("group").agg(F.max("version").alias("v")).collect())
        pairs = [(r["group"], r["v"]) for r in rows]
    return {g: int(v) for g, v in pairs if g is not None and v is not None}


def _max_versions_by_delta_rs(location: str) -> list[tuple[Any, Any]] | None:
    """(group, its highest version) pairs, or None when Spark must read the table (not local, or
    delta-rs opens its log but cannot read its files: a reader feature it lacks)."""
    from deltalake.exceptions import DeltaError

    table = _delta_rs(location)
    if table is None:
        return None
    try:
        data = table.to_pyarrow_dataset().to_table(columns=["group", "version"])
    except DeltaError as e:
        _say(location, e)
        return None
    highest = data.group_by("group").aggregate([("version", "max")])
    return list(zip(highest.column("group").to_pylist(),
                    highest.column("version_max").to_pylist(), strict=True))


def _delta_rs(location: str) -> DeltaTable | None:
    """The table opened by delta-rs, or None when Spark must read it (not local, or a table
    delta-rs cannot open)."""
    local = local_path(location)
    if local is None:
        return None
    from deltalake import DeltaTable
    from deltalake.exceptions import DeltaError

    try:
        return DeltaTable(str(local))
    except DeltaError as e:
        _say(location, e)
        return None


def _say(location: str, e: Exception) -> None:
    first = str(e).splitlines()[0][:200] if str(e) else type(e).__name__
    log.info("delta-rs cannot read %s (%s); Spark reads it", location, first)

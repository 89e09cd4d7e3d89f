"""The job's Delta tables at start: created once, checked every other time,
never silently recreated.

- no checkpoint batches and no table: the table is created (schema, Change Data Feed on
  recommendations, and the upkeep properties of :func:`table_properties`: log and deleted-file
  retention, auto compaction);
- the checkpoint has committed batches and a table is missing: the rows it wrote are gone, and
  recreating it empty would hide that, so the job stops with a message naming the table;
- the recommendations table of an older release, without columns added since
  (``contracts.tables.ADDED_COLUMNS``): the ones it lacks are added (nullable: its rows read NULL),
  when nothing else differs; columns whose type changed since (``contracts.tables.OLDER_TYPES``: the
  figures in records, DOUBLE then, BIGINT now) keep their older type, and every append of the run
  casts to it (:data:`KEPT_TYPES`);
- a table with other columns or types, not a Delta table, or recommendations without the
  Change Data Feed: stops with what differs (every batch would fail, or consumers of the feed
  would miss changes).

Also the per-group version floors (:func:`version_floors`): versions, and the
recommendation ids derived from them, continue after the highest already in the table,
whatever happened to the checkpoint.

Upkeep (``rebalancer maintain``): :func:`optimize` compacts the small files every micro-batch
leaves, :func:`expire_rejected` and :func:`expire_recommendations` delete rows older than their
retention windows (each group's latest recommendation stays), :func:`vacuum` removes the files no
table version within the retention still references. Each runs beside the job's appends:
:func:`retry_conflicts` runs it again when Delta refuses its commit for a concurrent one (a
DELETE that read the rows an append then added to, an OPTIMIZE whose files the job's own
compaction removed first).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import TypeVar

from pyspark.sql import SparkSession
from pyspark.sql.types import StructType

from streaming import catalog
from streaming.config import AUTO_WRITER, Config
from streaming.contracts.tables import (
    ADDED_COLUMNS,
    OLDER_TYPES,
    RECOMMENDATIONS,
    RECOMMENDATIONS_DDL,
    REJECTED,
    REJECTED_DDL,
    REJECTED_TIME,
)
from streaming.errors import JobError
from streaming.operations import delta_log, hfs, recover

log = logging.getLogger(__name__)

T = TypeVar("T")
FLOORS_FILE = "version_floors.json"
CONFLICT_ATTEMPTS = 6
"""Commits of one upkeep step before its conflict is raised; waits 1, 2, 4, 8, 16 s in between (~30
s, far longer than a batch's append, which is what the step races)."""
TABLES = ((RECOMMENDATIONS, RECOMMENDATIONS_DDL, True), (REJECTED, REJECTED_DDL, False))
KEPT_TYPES: dict[str, dict[str, str]] = {}
"""table location -> column -> the older type it keeps
(``contracts.tables.OLDER_TYPES``); filled by :func:`prepare` when the job starts, read
by every append of the run (:mod:`streaming.job.sinks`)."""


def checkpoint_committed(spark: SparkSession, checkpoint: str) -> bool:
    """True when the checkpoint has at least one committed batch (its tables hold what it wrote)."""
    return hfs.has_files(spark, checkpoint, "commits")


def schema_differences(expected: StructType, actual: StructType) -> list[str]:
    """What differs between two table schemas, by column name and type (nullability aside)."""
    have = {f.name: f.dataType.simpleString() for f in actual.fields}
    want = {f.name: f.dataType.simpleString() for f in expected.fields}
    out = [f"column {n} missing" for n in want if n not in have]
    out += [f"column {n} is {have[n]}, expected {want[n]}"
            for n in want if n in have and have[n] != want[n]]
    out += [f"unexpected column {n}" for n in have if n not in want]
    return out


def is_delta_table(spark: SparkSession, location: str) -> bool:
    """Cheap (one file-system call, no Delta log cache): the table's
    ``_delta_log`` folder exists."""
    return hfs.exists(spark, location, "_delta_log")


def prepare(spark: SparkSession, cfg: Config, checkpoint: str) -> set[str]:
    """Create the tables on a first start; otherwise check they are ours. Returns the names of the
    tables it created. Raises :class:`JobError`."""
    created: set[str] = set()
    committed = checkpoint_committed(spark, checkpoint)
    rs = cfg.job.delta_writer == AUTO_WRITER  # delta-rs where it can (delta_log)
    for name, ddl, cdf in TABLES:
        location = cfg.table_path(name)
        if not is_delta_table(spark, location):
            if hfs.has_files(spark, location):
                raise JobError(f"table {name}: {location} exists but is not a Delta table; move "
                               "it away or set paths.tables to another folder")
            if committed:
                raise JobError(
                    f"table {name} at {location} is missing but checkpoint {checkpoint} has "
                    "committed batches: its rows are gone. Restore the table, or start over with a "
                    "new checkpoint (--checkpoint) to rebuild it from the topics")
            delta_log.create(spark, location, ddl, table_properties(cfg, cdf), rs)
            log.info("created table %s at %s", name, location)
            created.add(name)
            continue
        expected = delta_log.schema_of(ddl)
        diff = schema_differences(expected, delta_log.schema(spark, location, rs))
        kept = kept_types(diff, OLDER_TYPES if name == RECOMMENDATIONS else {})
        KEPT_TYPES[location] = kept
        diff = [d for d in diff if d not in type_lines(kept, expected)]
        missing = columns_to_add(diff, ADDED_COLUMNS if name == RECOMMENDATIONS else {})
        if missing:  # the job's table from before those columns (never another's)
            add_columns(spark, location, missing)
            schema = delta_log.schema(spark, location, rs)
            diff = [d for d in schema_differences(expected, schema)
                    if d not in type_lines(kept, expected)]
        if diff:
            raise JobError(f"table {name} at {location} does not have the job's schema: "
                           f"{'; '.join(diff)}")
        if cdf:
            have = delta_log.properties(spark, location, rs)
            if str(have.get("delta.enableChangeDataFeed", "false")).lower() != "true":
                raise JobError(f"table {name} at {location} has the Change Data Feed off; turn it "
                               f"on with ALTER TABLE delta.`{location}` SET TBLPROPERTIES "
                               "(delta.enableChangeDataFeed = true)")
    catalog.register(spark, cfg, out=log.info)
    return created


def kept_types(diff: list[str], older: dict[str, str]) -> dict[str, str]:
    """Columns of ``older`` that the table has with their older type (what differs:
    :func:`schema_differences`)."""
    return {n: kind for n, kind in older.items()
            if any(d.startswith(f"column {n} is {kind}, expected ") for d in diff)}


def type_lines(kept: dict[str, str], expected: StructType) -> set[str]:
    """The differences :func:`schema_differences` reports for columns that keep an older type."""
    want = {f.name: f.dataType.simpleString() for f in expected.fields}
    return {f"column {n} is {kind}, expected {want[n]}" for n, kind in kept.items()}


def columns_to_add(diff: list[str], added: dict[str, str]) -> list[str]:
    """The columns to add when what differs (:func:`schema_differences`) is only some of the
    ``added`` columns missing, in the order of ``added``; otherwise [] (nothing to add, or a
    difference that stays an error: a foreign or damaged table is never altered)."""
    missing = {f"column {n} missing": n for n in added}
    if not diff or not set(diff) <= set(missing):
        return []
    return [n for n in added if f"column {n} missing" in diff]


def add_columns(spark: SparkSession, location: str, names: list[str]) -> None:
    """Add columns of contracts.tables.ADDED_COLUMNS to an older recommendations table (its rows
    read NULL)."""
    spark.sql(f"ALTER TABLE delta.`{location}` ADD COLUMNS "
              f"({', '.join(f'{n} {ADDED_COLUMNS[n]}' for n in names)})")
    log.info("table %s: added column(s) %s", location, ", ".join(names))


def version_floors(spark: SparkSession, cfg: Config, checkpoint: str,
                   fresh: bool = False) -> dict[str, int]:
    """Highest recommendation version per group already in the table when this checkpoint began.

    Computed once per checkpoint, when it has no floors file yet, and kept in the checkpoint: a
    batch replayed after a crash must decide exactly as the first time, so the floors may not
    include what this checkpoint itself wrote since. A checkpoint that already has committed batches
    but no floors file (made before floors existed) keeps its own counters (empty floors). A floors
    file left empty or damaged is rebuilt from the table as of the version before this checkpoint's
    first write to it (see :mod:`streaming.operations.recover`), or the job stops with what to do.

    ``fresh``: this start created the recommendations table (:func:`prepare`), so it holds nothing
    to continue after, and the floors are empty without a Spark job over it (the first read of a
    Delta table costs a new JVM seconds of work)."""
    text = hfs.read_text(spark, checkpoint, FLOORS_FILE)
    floors = recover.parse_floors(text)
    if floors is not None:
        return floors
    if text is None and (fresh or checkpoint_committed(spark, checkpoint)):
        floors = {}
    elif text is None:
        # a new checkpoint: it has written nothing yet (the file comes before its first batch)
        floors = delta_log.max_versions(spark, cfg.table_path(RECOMMENDATIONS),
                                        cfg.job.delta_writer == AUTO_WRITER)
    else:  # damaged: the table without what this checkpoint wrote to it
        txn_app = f"{recover.app_id(checkpoint, spark, cfg)}/{RECOMMENDATIONS}"
        floors = recover.floors_before(spark, cfg.table_path(RECOMMENDATIONS), txn_app, FLOORS_FILE)
        log.warning("%s/%s was empty or unreadable (%r): rebuilt from the table's history",
                    checkpoint, FLOORS_FILE, text[:40])
    hfs.write_text(spark, checkpoint, FLOORS_FILE, json.dumps(floors, sort_keys=True),
                   overwrite=True)
    if floors:
        log.info("versions continue after those in the table for %d group(s)", len(floors))
    return floors


# -- upkeep ----------------------------------------------------------------------------------------

def table_properties(cfg: Config, cdf: bool) -> dict[str, str]:
    """Delta properties the job's tables are created with (``maintain`` sets them
    on older tables)."""
    m = cfg.maintenance
    props = {"delta.logRetentionDuration": m.log_retention,
             "delta.deletedFileRetentionDuration": m.deleted_file_retention,
             "delta.autoOptimize.autoCompact": str(m.auto_compact).lower()}
    return ({"delta.enableChangeDataFeed": "true"} if cdf else {}) | props


def set_missing_properties(spark: SparkSession, location: str,
                           wanted: dict[str, str]) -> dict[str, str]:
    """Set the properties whose value differs; return them."""
    have = delta_log.detail(spark, location)["properties"] or {}
    todo = {k: v for k, v in wanted.items() if str(have.get(k, "")).lower() != v.lower()}
    if todo:
        spark.sql(f"ALTER TABLE delta.`{location}` SET TBLPROPERTIES "
                  f"({', '.join(f'{k} = {chr(39)}{v}{chr(39)}' for k, v in todo.items())})")
    return todo


def file_count(spark: SparkSession, location: str) -> int:
    """Data files of the table's current version."""
    return int(delta_log.detail(spark, location)["numFiles"])


def optimize(spark: SparkSession, location: str) -> dict[str, int]:
    """Bin-packing compaction; numFilesAdded / numFilesRemoved."""
    from delta.tables import DeltaTable

    result = DeltaTable.forPath(spark, location).optimize().executeCompaction().first()
    if result is None:
        raise JobError(f"OPTIMIZE of {location} returned no metrics")
    m = result["metrics"]
    return {"numFilesAdded": int(m["numFilesAdded"]), "numFilesRemoved": int(m["numFilesRemoved"])}


def expire_rejected(spark: SparkSession, location: str, days: float) -> int:
    """Delete rejected rows whose record is more than ``days`` old; the number deleted (0 when
    days <= 0)."""
    if days <= 0:
        return 0
    seconds = int(days * 86400)
    row = spark.sql(f"DELETE FROM delta.`{location}` WHERE {REJECTED_TIME} < "
                    f"current_timestamp() - INTERVAL {seconds} SECONDS").first()
    return int(row["num_affected_rows"]) if row is not None else 0


def expire_recommendations(spark: SparkSession, location: str, days: float) -> int:
    """Delete recommendation rows written more than ``days`` ago, except each group's latest (what
    stands, and the floor its next version continues from); the number deleted (0 when
    days <= 0)."""
    if days <= 0:
        return 0
    table, seconds = f"delta.`{location}`", int(days * 86400)
    row = spark.sql(f"""
        MERGE INTO {table} t
        USING (SELECT `group`, max(version) AS latest FROM {table} GROUP BY `group`) s
        ON t.`group` = s.`group` AND t.version < s.latest
           AND t.event_time < current_timestamp() - INTERVAL {seconds} SECONDS
        WHEN MATCHED THEN DELETE""").first()
    return int(row["num_deleted_rows"]) if row is not None else 0


def vacuum(spark: SparkSession, location: str, now: bool = False) -> None:
    """VACUUM. Delta 4 keeps files for the table's ``delta.deletedFileRetentionDuration`` whatever
    RETAIN says, except RETAIN 0 HOURS (``now``), which its safety check refuses unless lifted, as
    here for this call only."""
    from delta.tables import DeltaTable

    if not now:
        DeltaTable.forPath(spark, location).vacuum()
        return
    key = "spark.databricks.delta.retentionDurationCheck.enabled"
    before = spark.conf.get(key, "true") or "true"
    spark.conf.set(key, "false")
    try:
        DeltaTable.forPath(spark, location).vacuum(0.0)
    finally:
        spark.conf.set(key, before)


def storage_files(spark: SparkSession, location: str) -> int:
    """Parquet files under the table's folder (current or not), through Hadoop's FileSystem."""
    path = hfs.jvm(spark).org.apache.hadoop.fs.Path(location)
    fs = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    it = fs.listFiles(path, True)
    count = 0
    while it.hasNext():
        file = it.next().getPath().toString()
        count += file.endswith(".parquet") and "/_delta_log/" not in file
    return count


def is_conflict(error: BaseException) -> bool:
    """Delta refused the commit because another writer committed since the step read the table."""
    import delta.exceptions

    # delta-spark's conflict classes do not share a base class: every one it exports is a conflict
    if isinstance(error, tuple(getattr(delta.exceptions, n) for n in delta.exceptions.__all__)):
        return True
    # a conflict Delta raised inside a Spark error delta-spark's conversion did not recognise (that
    # package holds Delta's conflict exceptions only)
    return "io.delta.exceptions." in str(error)


def retry_conflicts(step: Callable[[], T], what: str, out: Callable[[str], object] = log.info,
                    attempts: int = CONFLICT_ATTEMPTS,
                    sleep: Callable[[float], None] = time.sleep) -> T:
    """``step()``, run again (after 1, 2, 4... s) while Delta refuses its commit for a concurrent
    one; a step re-reads the table each time, so a retry is the whole step on the newer version, as
    Delta advises. The last conflict is raised."""
    for attempt in range(1, attempts + 1):
        try:
            return step()
        except Exception as e:
            if attempt == attempts or not is_conflict(e):
                raise
            name = (type(e).__name__ if type(e).__name__ != "Py4JJavaError"
                    else "a concurrent commit")
            out(f"{what}: {name} (another writer committed first); again in {2 ** (attempt - 1)} s "
                f"({attempt}/{attempts - 1})")
            sleep(2 ** (attempt - 1))
    raise AssertionError("unreachable")

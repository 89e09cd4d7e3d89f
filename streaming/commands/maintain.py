"""``rebalancer maintain``: upkeep of the job's Delta tables (compaction, retention, VACUUM).

Every micro-batch that writes adds a file or two; after weeks the tables are thousands of small
files and every read lists them all. In order, per table: the upkeep properties of
:func:`streaming.operations.delta_tables.table_properties` are set where they differ (tables made
before they existed), OPTIMIZE compacts the files, ``rejected_events`` loses rows older than
``maintenance.rejected_retention_days`` and ``recommendations`` those older than
``maintenance.recommendations_retention_days`` (each group's latest stays), VACUUM deletes the files
no version within the table's deleted-file retention references, and a local table's log loses the
checksum files of expired commits (:mod:`streaming.operations.log_orphans`). Safe while the job
runs: compaction and deletes commit like any writer, and a step whose commit loses the race to the
job's append runs again on the newer version
(:func:`streaming.operations.delta_tables.retry_conflicts`).
"""

from __future__ import annotations

import argparse

from streaming.commands._common import add_config_args, load_config
from streaming.contracts.tables import NAMES as TABLES
from streaming.contracts.tables import REJECTED


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("maintain", help="compact, expire and vacuum the Delta tables",
                       description=__doc__.split("\n\n")[1].replace("\n", " "))
    add_config_args(p)
    p.add_argument("--retention-days", type=float, default=None, metavar="DAYS",
                   help="delete rejected_events rows older than this (default "
                        "maintenance.rejected_retention_days; 0 keeps every row)")
    p.add_argument("--vacuum-now", action="store_true",
                   help="VACUUM RETAIN 0 HOURS: delete every file the current version does not "
                        "use, at once. Unsafe while the job or a reader of an older version runs; "
                        "default: files unreferenced for less than "
                        "maintenance.deleted_file_retention stay")
    p.add_argument("--no-optimize", action="store_true", help="skip OPTIMIZE")
    p.add_argument("--no-vacuum", action="store_true", help="skip VACUUM")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from streaming import jvm
    from streaming.errors import UsageError
    from streaming.spark_session import get_spark

    cfg = load_config(args)
    days = (cfg.maintenance.rejected_retention_days if args.retention_days is None
            else args.retention_days)
    if days < 0:
        raise UsageError("--retention-days must be >= 0")
    if cfg.spark.use_cached_jars:
        jvm.resolve()
    spark = get_spark(cfg)
    try:
        return maintain(spark, cfg, days, optimize=not args.no_optimize, vacuum=not args.no_vacuum,
                        vacuum_now=args.vacuum_now)
    finally:
        spark.stop()


def maintain(spark, cfg, days: float, optimize: bool = True, vacuum: bool = True,
             vacuum_now: bool = False, out=print) -> int:
    from streaming import catalog
    from streaming.operations import delta_tables

    found = 0
    if catalog.enabled(cfg) and all(delta_tables.is_delta_table(spark, cfg.table_path(n))
                                    for n in TABLES):
        # tables made before catalog.schema was set get their names too
        catalog.register(spark, cfg, out)
    for name in TABLES:
        location = (catalog.location(spark, cfg, name) if catalog.enabled(cfg)
                    else cfg.table_path(name))
        if not delta_tables.is_delta_table(spark, location):
            out(f"{name}: no Delta table at {location}; skipped")
            continue
        found += 1
        _upkeep(spark, cfg, name, location, days, optimize, vacuum, vacuum_now, out)
    return 0 if found else 1


def _upkeep(spark, cfg, name: str, location: str, days: float, optimize: bool, vacuum: bool,
            vacuum_now: bool, out) -> None:
    """One table's steps, each committed on its own and run again when a concurrent commit (the
    job's append or compaction) wins the race."""
    from streaming.operations import delta_tables, log_orphans
    from streaming.paths import local_path

    def retried(step, what):
        return delta_tables.retry_conflicts(step, f"{name}: {what}", out=out)

    changed = retried(lambda: delta_tables.set_missing_properties(
        spark, location, delta_tables.table_properties(cfg, name == TABLES[0])),
        "SET TBLPROPERTIES")
    if changed:
        out(f"{name}: set {', '.join(f'{k}={v}' for k, v in changed.items())}")
    files = delta_tables.file_count(spark, location)
    if optimize:
        m = retried(lambda: delta_tables.optimize(spark, location), "OPTIMIZE")
        out(f"{name}: OPTIMIZE {files} -> {delta_tables.file_count(spark, location)} files "
            f"({m['numFilesRemoved']} removed, {m['numFilesAdded']} added)")
    _expire(spark, cfg, name, location, days, out)
    if vacuum:
        retried(lambda: delta_tables.vacuum(spark, location, now=vacuum_now), "VACUUM")
        out(f"{name}: VACUUM {'RETAIN 0 HOURS' if vacuum_now else 'with the table retention'} "
            f"done, {delta_tables.storage_files(spark, location)} data file(s) in storage")
    local = local_path(location)
    if local is not None:
        out(f"{name}: {log_orphans.sweep(local)} orphan checksum file(s) of expired commits "
            "deleted")


def _expire(spark, cfg, name: str, location: str, days: float, out) -> None:
    """The table's row retention. Beside a job appending every second it can lose every retry
    (open-source Delta's DELETE and MERGE are Serializable): that is no failure, the running job
    deletes those rows itself (:mod:`streaming.operations.row_retention`)."""
    from streaming.operations import delta_tables
    from streaming.operations.row_retention import row_retention

    keep, expire = next((d, f) for t, d, f in row_retention(cfg.maintenance, days) if t == name)
    if keep <= 0:
        out(f"{name}: retention off, every row kept")
        return
    try:
        deleted = delta_tables.retry_conflicts(lambda: expire(spark, location, keep),
                                               f"{name}: DELETE", out=out)
    except Exception as e:
        if not delta_tables.is_conflict(e):
            raise
        out(f"{name}: DELETE lost every retry to a running job's appends; the job deletes these "
            f"rows itself every {cfg.maintenance.expire_every_s:g} s (maintenance.expire_every_s)")
        return
    out(f"{name}: {deleted} row(s) older than {keep:g} days deleted" +
        (", each group's latest kept" if name != REJECTED else ""))

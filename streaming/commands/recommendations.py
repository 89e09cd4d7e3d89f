"""``rebalancer recommendations``: read the recommendations Delta table.

A local table (a plain path or a ``file:`` URI) is read with ``deltalake`` (delta-rs): no Maven, no
JVM, no Spark session, so the command answers in about a second. Other URIs (``s3a://``,
``abfss://``, ``hdfs://``) are read through Spark, whose Hadoop configuration holds their
credentials; so is a table deltalake cannot read (a table feature it lacks), and the command says so
on stderr. Both give the same rows.

``--diff`` reviews the group's latest recommendation member by member
(:mod:`streaming.proposals.diff`): the partitions each member gains and loses, its load, produce
rate and time to catch up, and its cross-rack partitions, before and after.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from streaming.commands._common import add_config_args, load_config
from streaming.contracts.tables import RECOMMENDATIONS as TABLE
from streaming.proposals import diff

ENGINES = ("auto", "deltalake", "spark")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("recommendations", help="show recommendations from the Delta table")
    add_config_args(p)
    p.add_argument("--group", default=None, help="only this consumer group")
    p.add_argument("--latest", action="store_true",
                   help="only the latest recommendation of each group")
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.add_argument("--limit", type=int, default=50)
    p.add_argument("--diff", action="store_true",
                   help="with --group: what its latest recommendation changes, member by member")
    p.add_argument("--engine", choices=ENGINES, default="auto",
                   help="auto (default): deltalake for a local table, Spark for other URIs or when "
                        "deltalake cannot read the table")
    add_table_arg(p)
    p.set_defaults(func=run)


def add_table_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--table", metavar="NAME", default=None,
                   help="read the recommendations table of this name in Spark's catalog (e.g. "
                        "ops.recommendations), through Spark; with catalog.schema set, --engine "
                        "spark reads it by that name")


def by_name(cfg, table: str | None, engine: str) -> str | None:
    """The catalog name to read the table by: ``--table``, else the configured one under
    ``--engine spark``."""
    from streaming import catalog

    if table:
        return table
    return catalog.name(cfg, TABLE) if catalog.enabled(cfg) and engine == "spark" else None


def run(args: argparse.Namespace) -> int:
    from streaming.paths import local_path

    if args.diff and not args.group:
        from streaming.errors import UsageError

        raise UsageError("--diff needs --group")
    latest = args.latest or args.diff  # --diff reviews the group's latest recommendation
    cfg = load_config(args)
    name = by_name(cfg, args.table, args.engine)
    if name is not None:
        return show(read_with_spark(cfg, "", args.group, latest, args.limit, None, name), args)
    path = cfg.table_path(TABLE)
    local = local_path(path)
    if local is not None and not (local / "_delta_log").is_dir():
        raise _no_table(path)
    rows = None
    if args.engine != "spark":
        if local is None:
            if args.engine == "deltalake":
                from streaming.errors import UsageError

                raise UsageError(f"--engine deltalake reads local tables only; {path} is not one")
            _say(f"reading {path} through Spark: its Hadoop configuration has the file system "
                 "settings")
        else:
            rows = _read_deltalake(local, path, args.group, latest, args.limit,
                                   strict=args.engine == "deltalake")
    if rows is None:
        rows = read_with_spark(cfg, path, args.group, latest, args.limit, local)
    return show(rows, args)


def show(rows: list[dict], args: argparse.Namespace) -> int:
    if args.diff:
        return show_diff(rows, args.format)
    if args.format == "json":
        print(json.dumps(rows, indent=2, default=str))
    else:
        print(render_table(rows))
    return 0


def show_diff(rows: list[dict], fmt: str) -> int:
    if not rows:
        print("no recommendations")
        return 0
    latest = max(rows, key=lambda r: r["version"])
    # diff.NoFigures (a UsageError) for a row from before member figures
    found = diff.of_row(latest)
    print(json.dumps(found.as_dict(), indent=2) if fmt == "json" else render_diff(latest, found))
    return 0


def _say(message: str) -> None:
    print(f"rebalancer recommendations: {message}", file=sys.stderr, flush=True)


def _no_table(path: str) -> Exception:
    from streaming.errors import UsageError

    return UsageError(f"no recommendations table at {path} (has `rebalancer run` written one?)")


def _read_deltalake(local: Path, path: str, group: str | None, latest: bool, limit: int,
                    strict: bool) -> list[dict] | None:
    """The rows, or None (after saying why) when deltalake cannot read this table and Spark
    should."""
    import pyarrow as pa
    from deltalake.exceptions import DeltaError

    try:
        return read_local(local, group, latest, limit)
    except (DeltaError, pa.ArrowException) as e:
        if strict:
            from streaming.errors import UsageError

            raise UsageError(f"deltalake cannot read {path}: {e}") from None
        _say(f"deltalake cannot read {path} ({type(e).__name__}: {str(e).splitlines()[0][:200]}); "
             "falling back to Spark")
        return None


def read_local(table: Path, group: str | None, latest: bool, limit: int) -> list[dict]:
    """The table's rows as ``read`` (Spark) returns them, read with deltalake and pyarrow."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from deltalake import DeltaTable

    dataset = DeltaTable(str(table)).to_pyarrow_dataset()
    data = dataset.to_table(filter=pc.field("group") == group if group else None)
    if latest:
        data = data.sort_by([("group", "ascending"), ("version", "descending")])
        groups = data.column("group").to_pylist()
        firsts = [i for i, g in enumerate(groups) if i == 0 or g != groups[i - 1]]
        data = data.take(pa.array(firsts, type=pa.int64()))
    data = data.sort_by([("event_time", "descending"), ("group", "ascending"),
                         ("version", "descending")])
    return [_as_spark_collects(r) for r in data.slice(0, max(limit, 0)).to_pylist()]


def _as_spark_collects(row: dict[str, Any]) -> dict[str, Any]:
    # pyspark's collect() gives timestamps as naive local time; pyarrow gives them aware, in UTC
    return {k: v.astimezone().replace(tzinfo=None) if isinstance(v, dt.datetime) and v.tzinfo else v
            for k, v in row.items()}


def read_with_spark(cfg, path: str, group: str | None, latest: bool, limit: int, local: Path | None,
                    name: str | None = None) -> list[dict]:
    """The rows through Spark, from the table at ``path`` or, given ``name``, the catalog's table of
    that name."""
    from streaming import jvm
    from streaming.spark_session import get_spark

    # under spark-submit --jars/--packages there is nothing to resolve
    if cfg.spark.use_cached_jars:
        jvm.resolve()
    spark = get_spark(cfg)
    try:
        from delta.tables import DeltaTable

        if name is None and local is None and not DeltaTable.isDeltaTable(spark, path):
            raise _no_table(path)
        return read(spark, path, group, latest, limit, name)
    finally:
        spark.stop()


def read(spark, path: str, group: str | None, latest: bool, limit: int,
         name: str | None = None) -> list[dict]:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    df = spark.read.table(name) if name else spark.read.format("delta").load(path)
    if group:
        df = df.filter(F.col("group") == group)
    if latest:
        w = Window.partitionBy("group").orderBy(F.col("version").desc())
        df = df.withColumn("_n", F.row_number().over(w)).filter("_n = 1").drop("_n")
    df = df.orderBy(F.col("event_time").desc(), "group", F.col("version").desc()).limit(limit)
    return [r.asDict(recursive=True) for r in df.collect()]


def render_table(rows: list[dict]) -> str:
    if not rows:
        return "no recommendations"
    head = ["group", "ver", "event time", "triggers", "max lag before -> after", "catch-up s",
            "age s", "imbalance", "cross-rack", "moved", "mode"]
    lines = [head]
    for r in rows:
        lines.append([
            r["group"], str(r["version"]), str(r["event_time"])[:19], ",".join(r["triggers"]),
            f"{r['before_max_lag']:,.0f} -> {r['after_max_lag']:,.0f}",
            f"{_seconds(r.get('before_catch_up_s'))} -> {_seconds(r.get('after_catch_up_s'))}",
            _seconds(r.get("lag_age_s")),
            f"{r['before_imbalance']:.2f} -> {r['after_imbalance']:.2f}",
            f"{r['before_cross_rack']} -> {r['after_cross_rack']}", str(r["partitions_moved"]),
            # NULL: a row from before modes, when every recommendation was published
            r.get("mode") or "auto",
        ])
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True))
                     for line in lines)


def render_diff(row: dict, found: diff.Diff) -> str:
    """The row's headline figures, then one line per member (``-``: none, or not known)."""
    head = [f"Recommendation v{row['version']} of group {row['group']} "
            f"({row.get('mode') or 'auto'}), {str(row['event_time'])[:19]}, "
            f"triggers {','.join(row['triggers']) or '-'}: "
            f"partitions moved {found.moved}, new {found.new}; "
            f"max load {row['before_max_lag']:,} -> {row['after_max_lag']:,}, "
            f"catch-up s {_seconds(row.get('before_catch_up_s'))} -> "
            f"{_seconds(row.get('after_catch_up_s'))}, "
            f"cross-rack {row['before_cross_rack']} -> {row['after_cross_rack']}"]
    lines = [["MEMBER", "RACK", "GAINS", "LOSES", "KEEPS", "LOAD", "RATE/S", "CATCH-UP S",
              "CROSS-RACK"]]
    for m in found.members:
        lines.append([m.label, m.rack or "-", _parts(m.gains), _parts(m.loses), str(m.keeps),
                      _arrow(m.load, "{:,}"), _arrow(m.rate, "{:,.1f}"),
                      f"{_seconds(m.catch_up_s[0])} -> {_seconds(m.catch_up_s[1])}",
                      _arrow(m.cross_rack, "{}")])
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    return "\n".join(head +
                     ["  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip()
                      for line in lines])


def _parts(tps: Sequence[tuple[str, int]]) -> str:
    return ",".join(f"{t}-{p}" for t, p in tps) or "-"


def _arrow(pair: tuple[Any, Any], fmt: str) -> str:
    return " -> ".join("-" if v is None else fmt.format(v) for v in pair)


def _seconds(value: float | None) -> str:
    """A lag-seconds column: ``-`` for null (unbounded, not known yet, or a row from before the
    columns)."""
    return "-" if value is None or math.isnan(value) else f"{value:,.1f}"

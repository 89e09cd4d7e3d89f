"""``rebalancer recommendations``: read the recommendations Delta table."""

from __future__ import annotations

import argparse
import json

from streaming.commands._common import add_config_args, load_config


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("recommendations", help="show recommendations from the Delta table")
    add_config_args(p)
    p.add_argument("--group", default=None, help="only this consumer group")
    p.add_argument("--latest", action="store_true", help="only the latest recommendation of each group")
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.add_argument("--limit", type=int, default=50)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from streaming import jvm
    from streaming.errors import UsageError
    from streaming.job import sinks
    from streaming.spark_session import get_spark

    cfg = load_config(args)
    path = cfg.table_path(sinks.RECOMMENDATIONS)
    if not (Path(path) / "_delta_log").exists():
        raise UsageError(f"no recommendations table at {path} (has `rebalancer run` written one?)")
    jvm.resolve()
    spark = get_spark(cfg)
    try:
        rows = read(spark, path, args.group, args.latest, args.limit)
    finally:
        spark.stop()
    if args.format == "json":
        print(json.dumps(rows, indent=2, default=str))
    else:
        print(render_table(rows))
    return 0


def read(spark, path: str, group: str | None, latest: bool, limit: int) -> list[dict]:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    df = spark.read.format("delta").load(path)
    if group:
        df = df.filter(F.col("group") == group)
    if latest:
        w = Window.partitionBy("group").orderBy(F.col("version").desc())
        df = df.withColumn("_n", F.row_number().over(w)).filter("_n = 1").drop("_n")
    df = df.orderBy(F.col("event_time").desc(), "group").limit(limit)
    return [r.asDict(recursive=True) for r in df.collect()]


def render_table(rows: list[dict]) -> str:
    if not rows:
        return "no recommendations"
    head = ["group", "ver", "event time", "triggers", "max lag before -> after", "imbalance", "cross-rack",
            "moved"]
    lines = [head]
    for r in rows:
        lines.append([
            r["group"], str(r["version"]), str(r["event_time"])[:19], ",".join(r["triggers"]),
            f"{r['before_max_lag']:,.0f} -> {r['after_max_lag']:,.0f}",
            f"{r['before_imbalance']:.2f} -> {r['after_imbalance']:.2f}",
            f"{r['before_cross_rack']} -> {r['after_cross_rack']}", str(r["partitions_moved"]),
        ])
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) for line in lines)

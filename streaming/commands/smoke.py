"""``rebalancer smoke``: records through Kafka, Spark's Kafka source and Delta, compared on the way
out."""

from __future__ import annotations

import argparse

from streaming.commands._common import add_config_args, load_config


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("smoke",
                       help="run a smoke pipeline Kafka -> Spark -> Delta on the configured "
                            "cluster")
    add_config_args(p)
    p.add_argument("--records", type=int, default=1000)
    p.add_argument("--keep", action="store_true", help="keep the Delta table and checkpoint")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from streaming import jvm
    from streaming.config import EMBEDDED
    from streaming.dev import smoke
    from streaming.embedded.live_cluster import kafka_for
    from streaming.spark_session import get_spark

    cfg = load_config(args)
    # Maven only for the jars this run uses: Spark's (unless spark-submit brings them) or the
    # embedded broker's
    if cfg.spark.use_cached_jars or cfg.kafka.bootstrap_servers == EMBEDDED:
        jvm.resolve()
    with kafka_for(cfg) as live:
        print(f"Kafka at {live.kafka.bootstrap_servers}; starting Spark ...", flush=True)
        spark = get_spark(live)
        try:
            result = smoke.run(spark, live, args.records)
        finally:
            spark.stop()
    print(f"topic {result.topic}: produced {result.produced} records, Delta table {result.table} "
          f"holds {result.written}; identical: {result.matching} ({result.seconds:.1f}s)")
    if not args.keep:
        smoke.cleanup(result, live)
    return 0 if result.matching else 1

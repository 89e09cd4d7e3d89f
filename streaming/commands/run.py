"""``rebalancer run``: the streaming rebalancer (long-running, or ``--available-now`` to drain and exit)."""

from __future__ import annotations

import argparse

from streaming.commands._common import add_config_args, load_config


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run the streaming rebalancer: events from Kafka -> recommendations to Delta")
    add_config_args(p)
    p.add_argument("--available-now", action="store_true",
                   help="process what is in the topics now, then exit (default: run until stopped)")
    p.add_argument("--checkpoint", default=None, help="checkpoint folder (default <paths.checkpoints>/rebalancer)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from streaming import jvm
    from streaming.config import EMBEDDED
    from streaming.errors import ConfigError
    from streaming.job import query
    from streaming.spark_session import get_spark

    cfg = load_config(args)
    if cfg.kafka.bootstrap_servers == EMBEDDED:
        raise ConfigError("`rebalancer run` needs a Kafka cluster with events: set kafka.bootstrap_servers "
                          "(e.g. from `rebalancer kafka up`), or run `rebalancer demo` for the embedded default")
    if cfg.spark.use_cached_jars:  # false under spark-submit: the connectors come from --jars, no Maven
        jvm.resolve()
    # Kafka first: an unreachable cluster is retried, then reported, before a JVM starts for nothing
    from streaming.kafka import clients as kafka_clients

    kafka_clients.ensure_rebalancer_topics(cfg)
    print(f"Kafka {cfg.kafka.bootstrap_servers} (options {cfg.kafka.redacted()}); tables in {cfg.paths.tables}",
          flush=True)
    spark = get_spark(cfg)
    try:
        batches = query.run(spark, cfg, available_now=args.available_now, checkpoint=args.checkpoint)
    finally:
        spark.stop()
    recs = sum(b["recommendations"] for b in batches)
    rejected = sum(b["rejected"] for b in batches)
    print(f"{len(batches)} batches, {recs} recommendations, {rejected} rejected")
    return 0

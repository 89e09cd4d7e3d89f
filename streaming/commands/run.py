"""``rebalancer run``: the streaming rebalancer (long-running, or ``--available-now`` to drain and
exit)."""

from __future__ import annotations

import argparse

from streaming.commands._common import add_config_args, load_config


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run the streaming rebalancer: events from Kafka -> "
                                   "recommendations to Delta")
    add_config_args(p)
    p.add_argument("--available-now", action="store_true",
                   help="process what is in the topics now, then exit (default: run until stopped)")
    p.add_argument("--checkpoint", default=None,
                   help="checkpoint folder (default <paths.checkpoints>/rebalancer)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from streaming import jvm
    from streaming.config import EMBEDDED
    from streaming.errors import ConfigError
    from streaming.job import query
    from streaming.operations.stopping import Stop, Totals
    from streaming.spark_session import get_spark

    cfg = load_config(args)
    if cfg.kafka.bootstrap_servers == EMBEDDED:
        raise ConfigError("`rebalancer run` needs a Kafka cluster with events: set "
                          "kafka.bootstrap_servers (e.g. from `rebalancer kafka up`), or run "
                          "`rebalancer demo` for the embedded default")
    # false under spark-submit: the connectors come from --jars, no Maven
    if cfg.spark.use_cached_jars:
        jvm.resolve()
    # Kafka first: an unreachable cluster is retried, then reported, before a JVM starts for nothing
    from streaming.kafka_clients import factories as kafka_clients

    kafka_clients.ensure_rebalancer_topics(cfg)
    print(f"Kafka {cfg.kafka.bootstrap_servers} (options {cfg.kafka.redacted()}); tables in "
          f"{cfg.paths.tables}", flush=True)
    spark = get_spark(cfg)
    # after the SparkContext: it installs a SIGINT handler that calls the JVM from inside the
    # handler
    stop = Stop().install()
    totals = Totals()
    try:
        query.run(spark, cfg, available_now=args.available_now, checkpoint=args.checkpoint,
                  stop=stop.requested, now=stop.now, totals=totals)
    finally:
        spark.stop()
    if stop.signal is not None:
        print(stop_line(stop, totals), flush=True)
    else:
        print(f"{totals.batches} batches, {totals.recommendations} recommendations, "
              f"{totals.rejected} rejected")
    return 0


def stop_line(stop, totals) -> str:
    """The one line a stopped job leaves: which signal, the last batch, what this run committed."""
    how = f"{stop.signal}, then at once on a second signal" if stop.now.is_set() else stop.signal
    last = "no batch" if totals.last_batch is None else f"batch {totals.last_batch}"
    return (f"rebalancer run: stopped by {how} after {last} ({totals.batches} "
            f"batch{'' if totals.batches == 1 else 'es'} this run, {totals.recommendations} "
            f"recommendation{'' if totals.recommendations == 1 else 's'} and {totals.rejected} "
            "rejected committed); lease released"
            + ("; a batch still running was interrupted, the next run replays it"
               if totals.interrupted else ""))

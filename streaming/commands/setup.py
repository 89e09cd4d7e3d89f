"""``rebalancer setup``: resolve the JVM artifacts (Maven Central) and Prometheus with promtool
(Debian's package), once; then everything runs offline. Prometheus is only for the alert-rule tests:
where it cannot be obtained (no apt), setup says so in one line and still succeeds."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("setup", help="resolve the Kafka broker, Kafka source and Delta jars into "
                                     ".cache/jars, and Prometheus with promtool (for the alert "
                                     "rules) into .cache/prometheus (once)")
    p.add_argument("--force", action="store_true",
                   help="resolve again even if the cache is up to date")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from streaming import jvm, prometheus_bin
    from streaming.paths import JARS_DIR

    jvm.java_executable()
    jvm.resolve(force=args.force)
    spark = len(jvm.spark_jars())
    kafka = len(list((JARS_DIR / "kafka").glob("*.jar")))
    print(
        f"JVM artifacts ready in {JARS_DIR}: {spark} jars for Spark, {kafka} for the Kafka broker")
    print(prometheus_bin.setup_line(force=args.force), flush=True)  # never fails setup
    return 0

"""Validation alone, in the JVM: the CPU :func:`streaming.job.validate.parse` costs a record,
without Kafka.

    python -m benchmarks.validation [--form lag|dense] [--records N] [--rounds 10]

``--records`` texts as the collector encodes them (``lag``: one event per partition, 1000 groups x
100 partitions; ``dense``: one ``lag_dense`` event per group and poll, 100 partitions) are cached in
a local[1] Spark (the job's ``-XX:-DontCompileHugeMethods``), then validated into Spark's ``noop``
sink ``--rounds`` times. Each round's figure is the CPU time of Spark's JVM over the records; the
first round (compiling) is left out and the median of the others printed with every round's. Nothing
else runs in that JVM, so a run moves less with the machine's other work than a throughput run does,
though still by +-20% on a shared machine: compare two trees by alternating their runs, several each
(``PYTHONPATH=<tree>``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import sys
from typing import Any

from benchmarks.parse import jvm_cpu_s
from streaming import jvm
from streaming.contracts import events
from streaming.job import validate

NOW = 1_763_800_000_000
LAG_TOPIC = "rebalancer.lag"
RAW_SCHEMA = ("key binary, value binary, topic string, partition int, offset long, "
              "timestamp timestamp, timestampType int")


def messages(form: str, records: int) -> list[tuple[bytes, bytes]]:
    """(key, value) of ``records`` collector records of the ``form``; offsets spread over 40
    bits."""
    out = []
    for i in range(records):
        group, part = (i // 100, i % 100) if form == "lag" else (i, 0)
        name, topic = f"group-{group % 1000:04d}", f"topic-{group % 50:02d}"
        if form == "lag":
            committed = (part * 7919 + i) * 1_000_003 % (1 << 40)
            event = events.lag_event(NOW - 1000, name, topic, part, committed,
                                     committed + 100 + i % 50)
        else:
            committed_offsets = [(p * 7919 + i) * 1_000_003 % (1 << 40) for p in range(100)]
            ends = [c + 100 + (i + p) % 50 for p, c in enumerate(committed_offsets)]
            event = events.dense_lag_event(NOW - 1000, name, topic, list(range(100)),
                                           committed_offsets, ends)
        out.append(events.encode(event))
    return out


def _spark() -> Any:
    jvm.resolve()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    from streaming.spark_session import HUGE_METHODS

    spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
             .config("spark.sql.adaptive.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.extraJavaOptions", HUGE_METHODS)
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def measure(form: str, records: int, rounds: int) -> tuple[int, list[float]]:
    """The rejected records of the first round, and each later round's JVM CPU microseconds per
    record."""
    spark = _spark()
    stamp = dt.datetime.fromtimestamp(NOW / 1000, tz=dt.UTC)
    rows = [(k, v, LAG_TOPIC, i % 6, i, stamp, 0)
            for i, (k, v) in enumerate(messages(form, records))]
    raw = spark.createDataFrame(rows, RAW_SCHEMA).cache()
    raw.count()
    pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    rejected, figures = 0, []
    for r in range(rounds):
        df = validate.parse(raw, 4 << 20, 600_000, LAG_TOPIC)
        if r == 0:
            rejected = df.filter("type is null").count()
        before = jvm_cpu_s(pid)
        df.write.format("noop").mode("overwrite").save()
        if r:
            figures.append(1e6 * (jvm_cpu_s(pid) - before) / records)
    spark.stop()
    return rejected, figures


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="benchmarks.validation", description=__doc__.split("\n\n")[0])
    ap.add_argument("--form", choices=("lag", "dense"), default="dense")
    ap.add_argument("--records", type=int,
                    help="default: 200,000 lag events or 20,000 lag_dense events")
    ap.add_argument("--rounds", type=int, default=10)
    args = ap.parse_args(argv)
    records = args.records or (200_000 if args.form == "lag" else 20_000)
    rejected, figures = measure(args.form, records, max(args.rounds, 2))
    print(f"validate.parse, {records:,} {args.form} records, local[1]: JVM CPU per record median "
          f"{statistics.median(figures):.1f} us over rounds 2-{len(figures) + 1} "
          f"[{', '.join(f'{x:.1f}' for x in figures)}]; {rejected} rejected")


if __name__ == "__main__":
    main()

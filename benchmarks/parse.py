"""The job's first step alone: Kafka read and validation, timed apart from the stateful step and the
writes.

    python -m benchmarks.parse [--groups 1000 --partitions 100 --polls 10] [--dense] [--save]

One broker on loopback gets ``polls`` polls of every group's lag events (as the collector encodes
them: one ``lag`` event per partition, or with ``--dense`` one ``lag_dense`` event per group and
poll); then each variant below reads all of them as a batch query into Spark's ``noop`` sink, three
times, and the median is reported:

- ``kafka read``: the records only (the floor);
- ``validate (fast path)``: :func:`streaming.job.validate.parse` as the job runs it;
- ``validate (general path)``: the same with ``fast_path=False``: every record parsed as a VARIANT
  (for ``lag_dense`` events, the job before its fast path);
- ``validate + shuffle``: the fast path and the job's exchange by bucket of groups, sorted within
  partitions.

CPU per event is the wall time times the local cores, over the events (2 cores here: Spark, the
broker and this process share them); "JVM" is the CPU time Spark's JVM (driver and executor in local
mode) spent in the run, over the events: on a machine shared with other work it moves much less than
the wall time (``--only`` times some variants alone: compare two trees' commits by running each in
turn, several rounds).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from streaming import jvm
from streaming.embedded.cluster import KafkaCluster
from streaming.job import query, validate
from streaming.kafka_clients.properties import spark_options

RESULTS = Path(__file__).parent / "results" / "parse.txt"


def _parser() -> argparse.ArgumentParser:
    """The command line's options."""
    ap = argparse.ArgumentParser(prog="benchmarks.parse",
                                 description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--groups", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--polls", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dense", action="store_true",
                    help="lag_dense events (one per group and poll)")
    ap.add_argument("--only", default="",
                    help="comma-separated variant names to time (all by default)")
    ap.add_argument("--save", action="store_true", help=f"append the report to {RESULTS}")
    return ap


def _variants(spark, cfg) -> tuple[dict[str, Any], int]:
    """The dataframes to time, by name, over every record of the run's topics; and how many
    records."""
    from pyspark.sql import functions as F

    options = query.SOURCE_CONSUMER_DEFAULTS | spark_options(cfg.kafka)
    raw = (spark.read.format("kafka").options(**options)
           .option("subscribe", f"{cfg.kafka.lag_topic},{cfg.kafka.metadata_topic}")
           .option("startingOffsets", "earliest").load())
    events = raw.count()

    def parsed(fast: bool):
        return validate.parse(raw, cfg.job.max_value_bytes, int(cfg.job.max_clock_skew_s * 1000),
                              cfg.kafka.lag_topic, fast_path=fast)

    bucket = F.pmod(F.crc32(F.col("group").cast("binary")), F.lit(64))
    variants = {
        "kafka read": raw.select("key", "value", "offset"),
        "validate (fast path)": parsed(True),
        "validate (general path)": parsed(False),
        "validate + shuffle": parsed(True).withColumn("bucket", bucket).repartition(4, "bucket")
        .sortWithinPartitions("bucket"),
    }
    return variants, events


def jvm_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) process ``pid`` has spent so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _time_variants(variants: dict[str, Any], events: int, repeats: int, cores: int,
                   lines: list[str], jvm_pid: int) -> None:
    """The median of ``repeats`` writes of each variant to the noop sink, then validation's cost
    beyond the read."""
    medians = {}
    for name, df in variants.items():
        times, jvm_us = [], []
        for _ in range(repeats):
            cpu, start = jvm_cpu_s(jvm_pid), time.perf_counter()
            df.write.format("noop").mode("overwrite").save()
            times.append(time.perf_counter() - start)
            jvm_us.append((jvm_cpu_s(jvm_pid) - cpu) / events * 1e6)
        medians[name] = m = statistics.median(times)
        lines.append(f"{name}: {m:.2f}s for {events:,} events ({events / m:,.0f}/s, "
                     f"{m * cores / events * 1e6:.1f} us CPU per event, JVM "
                     f"{statistics.median(jvm_us):.1f} us; runs "
                     f"{', '.join(f'{t:.2f}' for t in times)}; JVM "
                     f"{', '.join(f'{u:.1f}' for u in jvm_us)})")
        print(lines[-1], flush=True)
    if not {"kafka read", "validate (fast path)", "validate (general path)"} <= medians.keys():
        return
    floor = medians["kafka read"]
    fast = medians["validate (fast path)"] - floor
    general = medians["validate (general path)"] - floor
    lines.append(f"validation beyond the read: fast path {fast:.2f}s, general path {general:.2f}s "
                 f"({general / fast if fast > 0 else float('inf'):.2f}x)")
    print(lines[-1], flush=True)


def main(argv: list[str] | None = None) -> int:
    """Write the polls on an embedded broker, then time each variant over them."""
    from benchmarks.job.configuration import Scale, bench_config, keyed
    from benchmarks.job.load import write_scale

    args = _parser().parse_args(argv)
    jvm.resolve()
    from streaming.spark_session import get_spark

    cores = os.cpu_count() or 1
    lines = [f"benchmarks.parse {time.strftime('%Y-%m-%d %H:%M')}: "
             f"{args.groups}x{args.partitions}, {args.polls} "
             f"polls{' as lag_dense events' if args.dense else ''}, local[2] on {cores} cores, "
             f"median of {args.repeats}, load average "
             f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}"]
    # the broker's log (GBs at a large scale): removed when the run ends
    with (tempfile.TemporaryDirectory(prefix="rebalancer-parse-",
                                      ignore_cleanup_errors=True) as tmp,
          KafkaCluster(brokers=1, base_dir=Path(tmp) / "kafka") as cluster):
        cfg = bench_config(cluster, Path(tmp))
        spark = get_spark(cfg)
        try:
            scale = Scale(args.groups, args.partitions)
            cfg = keyed(cfg, scale, 64, "")
            write_scale(spark, cfg, scale, args.polls, dense=args.dense)
            variants, events = _variants(spark, cfg)
            only = [n.strip() for n in args.only.split(",") if n.strip()]
            variants = {n: df for n, df in variants.items() if not only or n in only}
            _time_variants(variants, events, args.repeats, cores, lines,
                           spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
        finally:
            spark.stop()
    if args.save:
        with RESULTS.open("a") as f:
            f.write("\n".join(lines) + "\n\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

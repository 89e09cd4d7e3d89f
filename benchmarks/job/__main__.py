"""``python -m benchmarks.job``: the options, then either the Python share alone or the runs on an
embedded cluster (what each measures: :mod:`benchmarks.job`)."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import benchmarks.job
from streaming import config, jvm
from streaming.embedded.cluster import KafkaCluster

from .configuration import Scale, bench_config, keyed
from .floors import FRAME, beside_the_frame, floor_runs
from .load import write_scale
from .python_share import python_share
from .report import (
    RESULTS,
    RESULTS_PYTHON,
    keying,
    latency_line,
    side_by_side,
    throughput_line,
    write_report,
)
from .runs import latency, throughput
from .sampling import CpuSampler, MemorySampler


def parser() -> argparse.ArgumentParser:
    """The command line's options."""
    ap = argparse.ArgumentParser(prog="benchmarks.job",
                                 description=(benchmarks.job.__doc__ or "").split("\n")[0])
    ap.add_argument("--groups", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--scales", default="",
                    help="comma-separated GROUPSxPARTITIONS, e.g. 1000x100,10000x20 "
                         "(instead of --groups/--partitions)")
    ap.add_argument("--state-buckets", default="64",
                    help="job.state_buckets of the runs, comma-separated (0: keyed by group); "
                         "one run each")
    ap.add_argument("--polls", type=int, default=0,
                    help="polls written for the throughput runs "
                         "(default: 2.6M events' worth, at least 4)")
    ap.add_argument("--per-trigger", default="200000,500000",
                    help="maxOffsetsPerTrigger of the throughput runs, comma-separated "
                         "(one run each)")
    ap.add_argument("--latency-polls", type=int, default=30,
                    help="live polls of the latency run (0: none)")
    ap.add_argument("--poll-every", type=float, default=2.0,
                    help="seconds between live polls (load)")
    ap.add_argument("--interval", type=int, default=10,
                    help="trigger interval (s) of the latency run")
    ap.add_argument("--lag-form", choices=("partition", "dense"), default="partition",
                    help="the throughput runs' lag as one lag event per partition or one lag_dense "
                         "event per group and poll, in the throughput and the latency runs (then "
                         "--per-trigger counts records, each of PARTITIONS readings)")
    ap.add_argument("--standalone-workers", default="",
                    help="comma-separated worker counts: the throughput runs on local mode, then "
                         "on a Spark standalone cluster of each count on this machine "
                         "(no latency run)")
    ap.add_argument("--floors", action="store_true",
                    help="before the throughput runs, the floors of benchmarks.job.floors on the "
                         "same records at each --per-trigger (the job's frame without its work)")
    ap.add_argument("--python-only", action="store_true",
                    help="the stateful step's Python share alone (no JVM)")
    ap.add_argument("--save", action="store_true",
                    help=f"write the report to {RESULTS} "
                         f"({RESULTS_PYTHON.name} with --python-only)")
    ap.add_argument("--append", action="store_true", help="append the report to that file")
    return ap


def python_only(args: argparse.Namespace, scales: list[Scale], keyings: list[int],
                stamp: str) -> None:
    """``--python-only``: the worker's Python time for each scale and keying, with pyspark's own
    share."""
    lines = [f"benchmarks.job --python-only {stamp}: the Python worker's time per batch of one "
             "poll of every group (pyspark's serializer and wrapper around the update function, in "
             "process: no JVM, no socket, no state store)"]
    for scale in scales:
        for b in keyings:
            r, alone = python_share(scale, b), python_share(scale, b, noop=True)
            lines.append(f"{r['scale']}, {keying(b)}: {r['batch_s']:.2f}s per batch, "
                         f"{r['ms_per_group']:.3f} ms per group ({alone['ms_per_group']:.3f} ms of "
                         "it pyspark's own: the same with an update function that only keeps the "
                         f"state), {r['events_per_s']:,.0f} events/s")
            print(lines[-1], flush=True)
    write_report(lines, args, RESULTS_PYTHON)


def on_cluster(args: argparse.Namespace, scales: list[Scale], keyings: list[int],
               stamp: str) -> None:
    """Every scale and keying on a one-broker embedded cluster, memory and CPU sampled throughout;
    the report."""
    jvm.resolve()
    with tempfile.TemporaryDirectory(prefix="rebalancer-bench-", ignore_cleanup_errors=True) as tmp:
        # the broker's log and Spark's checkpoints, GBs a run: removed when the run ends (a killed
        # run leaves them)
        _on_cluster(args, scales, keyings, stamp, Path(tmp))


def _on_cluster(args: argparse.Namespace, scales: list[Scale], keyings: list[int], stamp: str,
                work: Path) -> None:
    from streaming.spark_session import get_spark

    lines = [f"benchmarks.job {stamp}: {', '.join(s.tag for s in scales)} (groups x partitions), "
             f"{', '.join(keying(b) for b in keyings)}, {os.cpu_count()} cores (broker, Spark, "
             "Python workers and load generator share them)"]
    results: list[dict] = []
    with KafkaCluster(brokers=1, base_dir=work / "kafka") as cluster:
        cfg = bench_config(cluster, work)
        sampler = MemorySampler(set(cluster.pids()))
        sampler.start()
        cpu = CpuSampler()
        cpu.start()
        spark = get_spark(cfg)
        try:
            sizes = [int(x) for x in args.per_trigger.split(",") if x.strip()]
            for scale in scales:
                polls = args.polls or max(4, 2_600_000 // (scale.groups * scale.partitions))
                write_scale(spark, keyed(cfg, scale, 0, ""), scale, polls, args.lag_form == "dense")
                dense = args.lag_form == "dense"
                frames = {}
                if args.floors:
                    for size in sizes:
                        found, frames[size] = floor_runs(spark, keyed(cfg, scale, keyings[0], ""),
                                                         scale, size, cpu, work, dense)
                        lines += found
                for b in keyings:
                    sampler.reset()
                    results.append(run_keying(spark, cfg, scale, b, sizes, args, sampler, cpu,
                                              lines))
                    beside = [line for t in results[-1]["throughput"] if t["per_trigger"] in frames
                              for line in beside_the_frame(scale, frames[t["per_trigger"]][FRAME],
                                                           t, dense)]
                    lines += beside
                    print("\n".join(beside), flush=True)
        finally:
            spark.stop()
            sampler.stop_flag.set()
            cpu.stop_flag.set()
    if len(results) > 1:
        lines += side_by_side(results)
        print("\n".join(side_by_side(results)))
    write_report(lines, args, RESULTS)


def run_keying(spark: Any, cfg: config.Config, scale: Scale, b: int, sizes: list[int],
               args: argparse.Namespace, sampler: MemorySampler, cpu: CpuSampler,
               lines: list[str]) -> dict[str, Any]:
    """One scale and keying: throughput at each batch size, latency under live load, peak memory
    (lines added)."""
    dense = args.lag_form == "dense"
    run: dict[str, Any] = {"scale": scale.tag, "buckets": b,
                           "throughput": throughput(spark, keyed(cfg, scale, b, ""), scale, sizes,
                                                    cpu, dense)}
    lines += [throughput_line(scale, b, t) for t in run["throughput"]]
    if args.lag_form == "dense":  # each event carries a poll of the group's partitions
        lines += [f"{scale.tag}, {keying(b)}, lag_dense: at maxOffsetsPerTrigger "
                  f"{t['per_trigger']:,} records: steady "
                  f"{t['steady_events_per_s'] * scale.partitions:,.0f} partition readings/s"
                  for t in run["throughput"]]
        print("\n".join(lines[-len(run["throughput"]):]), flush=True)
    if args.latency_polls:
        run["latency"] = latency(spark, keyed(cfg, scale, b, f".live-{b}"), scale,
                                 args.latency_polls, args.interval, args.poll_every,
                                 args.lag_form == "dense")
        lines.append(latency_line(scale, b, run["latency"]))
        print(lines[-1], flush=True)
    run["peak_gib"] = sampler.peak / 2**30
    lines.append(f"{scale.tag}, {keying(b)}: memory: peak of driver JVM + Python workers + this "
                 f"process (load generator included) {sampler.peak / 2**30:.2f} GiB PSS (state on "
                 f"RocksDB); summed RSS, which counts the forked workers' shared pages once each, "
                 f"{sampler.peak_rss / 2**30:.2f} GiB")
    print(lines[-1], flush=True)
    return run


def main(argv: list[str] | None = None) -> int:
    """Parse the options and run what they ask for."""
    args = parser().parse_args(argv)
    scales = ([Scale.parse(s) for s in args.scales.split(",") if s.strip()]
              or [Scale(args.groups, args.partitions)])
    keyings = [int(b) for b in args.state_buckets.split(",") if b.strip()]
    stamp = time.strftime("%Y-%m-%d %H:%M")
    if args.python_only:
        python_only(args, scales, keyings, stamp)
    elif args.standalone_workers:
        from .standalone import standalone_runs

        standalone_runs(args, scales, keyings, stamp)
    else:
        on_cluster(args, scales, keyings, stamp)
    return 0


if __name__ == "__main__":
    sys.exit(main())

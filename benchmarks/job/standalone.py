"""``python -m benchmarks.job --standalone-workers 1,2``: the throughput runs on local[2], then on a
Spark standalone cluster of each worker count, all on this machine.

The cluster is the integration tests' (:class:`streaming.dev.spark_standalone.StandaloneCluster`: a
master and N workers on loopback); the driver is this process. The machine's cores are dealt out
evenly (2 cores: one worker of 2 cores, or two of 1), so every run has the same task slots as
local[2] and what differs is the distribution: executors in their own JVMs, tasks and results over
RPC, shuffle blocks fetched between executors, each executor's own Python workers and state store
instances. On one machine the figure is that overhead, not a speed-up. The executors run this
checkout's code (``PYTHONPATH``), with the JVM flag the docs/deploying.md's cluster recipe gives
them.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from streaming import config, jvm
from streaming.dev.spark_standalone import StandaloneCluster
from streaming.embedded.cluster import KafkaCluster
from streaming.spark_session import HUGE_METHODS, LOCAL_ONLY

from .configuration import Scale, bench_config, keyed
from .load import write_scale
from .report import RESULTS, throughput_line, write_report
from .runs import throughput
from .sampling import CpuSampler, MemorySampler

CHECKOUT = Path(__file__).resolve().parents[2]
EXECUTOR_MEMORY = "1500m"


def cluster_conf(cores: int) -> dict[str, str]:
    """Spark settings for a driver here and executors on the standalone workers: local mode's own
    settings (driver address, partitions, no UI, 2g driver), the JVM flag on both sides, this
    checkout for Python."""
    return dict(LOCAL_ONLY) | {
        "spark.driver.extraJavaOptions": HUGE_METHODS,
        "spark.executor.extraJavaOptions": HUGE_METHODS,
        "spark.executor.memory": EXECUTOR_MEMORY,
        "spark.executor.cores": str(cores),
        "spark.pyspark.python": sys.executable,
        "spark.executorEnv.PYTHONPATH": str(CHECKOUT),
        # wait for every executor before the first job
        "spark.scheduler.minRegisteredResourcesRatio": "1.0",
    }


def standalone_runs(args: argparse.Namespace, scales: list[Scale], keyings: list[int],
                    stamp: str) -> None:
    """local[2], then a standalone cluster of each of ``--standalone-workers``; one Spark session at
    a time."""
    jvm.resolve()
    counts = [int(n) for n in args.standalone_workers.split(",") if n.strip()]
    sizes = [int(x) for x in args.per_trigger.split(",") if x.strip()]
    cpus = os.cpu_count() or 2
    lines = [f"benchmarks.job --standalone-workers {args.standalone_workers} {stamp}: "
             f"{', '.join(s.tag for s in scales)}, {cpus} cores; local[{cpus}], "
             f"then standalone clusters of {args.standalone_workers} worker(s) "
             f"sharing the {cpus} cores evenly (same machine: overhead, not speed-up)"]
    # the broker's log and every run's checkpoints and tables (GBs): removed when the runs end
    with (tempfile.TemporaryDirectory(prefix="rebalancer-bench-standalone-",
                                      ignore_cleanup_errors=True) as tmp,
          KafkaCluster(brokers=1, base_dir=Path(tmp) / "kafka") as kafka):
        work = Path(tmp)
        base = bench_config(kafka, work)
        sampler, cpu = MemorySampler(set(kafka.pids())), CpuSampler()
        sampler.start()
        cpu.start()
        try:
            for n in [0, *counts]:
                run_dir = work / f"run-{n}"
                cores = max(1, cpus // max(n, 1))  # a worker's cores (local[N]: all of them)
                with (StandaloneCluster(run_dir / "standalone", workers=n, cores=cores, memory="2g")
                      if n else _Local()) as cluster:
                    cfg = _on(base, cluster, run_dir, cores)
                    label = f"standalone {n} worker(s) x {cores} core(s)" if n else f"local[{cpus}]"
                    _runs(cfg, label, scales, keyings, sizes, args, sampler, cpu, lines,
                          write=n == 0)
        finally:
            sampler.stop_flag.set()
            cpu.stop_flag.set()
    write_report(lines, args, RESULTS)


def _runs(cfg: config.Config, label: str, scales: list[Scale], keyings: list[int], sizes: list[int],
          args: argparse.Namespace, sampler: MemorySampler, cpu: CpuSampler, lines: list[str],
          write: bool) -> None:
    """One master's throughput runs in a session of its own (``write``: the load first); lines
    added."""
    dense = args.lag_form == "dense"
    spark = _session(cfg)
    try:
        for scale in scales:
            if write:
                polls = args.polls or max(4, 2_600_000 // (scale.groups * scale.partitions))
                write_scale(spark, keyed(cfg, scale, 0, ""), scale, polls, dense)
            for b in keyings:
                sampler.reset()
                runs = throughput(spark, keyed(cfg, scale, b, ""), scale, sizes, cpu, dense)
                new = [f"{label}: {throughput_line(scale, b, t)}" for t in runs]
                if dense:
                    new += [f"{label}: {scale.tag}, lag_dense: "
                            f"at maxOffsetsPerTrigger {t['per_trigger']:,} records: "
                            f"steady {t['steady_events_per_s'] * scale.partitions:,.0f} "
                            f"partition readings/s"
                            for t in runs]
                new.append(f"{label}: {scale.tag}: memory: peak PSS of this process's descendants "
                           f"(Spark daemons and executors included) "
                           f"{sampler.peak / 2**30:.2f} GiB")
                print("\n".join(new[len(runs):]), flush=True)
                lines += new
    finally:
        spark.stop()


class _Local:
    """Stands in for a standalone cluster in the local[N] baseline run."""

    master_url = ""

    def __enter__(self) -> _Local:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def _on(base: config.Config, cluster: Any, run_dir: Path, cores: int) -> config.Config:
    """``base`` with this run's tables and checkpoints, and the standalone master and settings if
    any."""
    paths = config.PathSettings(checkpoints=str(run_dir / "checkpoints"),
                                tables=str(run_dir / "tables"))
    if not cluster.master_url:
        return dataclasses.replace(base, paths=paths)
    spark = dataclasses.replace(base.spark, master=cluster.master_url,
                                conf=cluster_conf(cores) | dict(base.spark.conf))
    return dataclasses.replace(base, paths=paths, spark=spark)


def _session(cfg: config.Config) -> Any:
    """A new session on ``cfg``'s master (the previous run's was stopped)."""
    from streaming.spark_session import get_spark

    return get_spark(cfg)

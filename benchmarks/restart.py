"""A job's start as an operator sees it: ``rebalancer run --available-now`` as a process of its own
on topics with nothing to read, first on new tables (it creates them) and then again on the same
checkpoint (a restart: the tables checked), with ``job.delta_writer = spark`` (Spark creates and
reads the tables) and ``auto`` (delta-rs does: :mod:`streaming.operations.delta_log`) side by
side, alternating round by round.

Each figure is the process's wall time and the machine's busy CPU over it (the driver, its JVM and
Python workers; the idle one-broker cluster adds about 0.03 of a core). Medians over ``--rounds``.

    .venv/bin/python -m benchmarks.restart [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WRITERS = ("spark", "auto")
STARTS = ("first start", "restart")


def busy_ticks() -> int:
    """The machine's busy CPU so far, in clock ticks (/proc/stat: all but idle and iowait)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:8]]
    return sum(fields) - fields[3] - fields[4]


def run_args(bootstrap: str, root: Path, writer: str) -> list[str]:
    conf = {"kafka.bootstrap_servers": bootstrap, "kafka.lag_topic": "bench.lag",
            "kafka.metadata_topic": "bench.meta", "kafka.trigger_topic": "bench.triggers",
            "paths.tables": str(root / "tables"), "paths.checkpoints": str(root / "checkpoints"),
            "spark.master": "local[2]", "spark.sql.shuffle.partitions": "2",
            "job.delta_writer": writer}
    args = [sys.executable, "-m", "streaming.cli", "run", "--available-now"]
    for k, v in conf.items():
        args += ["--conf", f"{k}={v}"]
    return args


def timed(args: list[str]) -> tuple[float, float]:
    """(wall seconds, busy CPU-seconds) of one run; raises when it fails."""
    ticks, t = busy_ticks(), time.monotonic()
    done = subprocess.run(args, capture_output=True, text=True)
    wall, cpu = time.monotonic() - t, (busy_ticks() - ticks) / 100.0
    if done.returncode:
        raise RuntimeError(f"run failed ({done.returncode}): {done.stderr[-2000:]}")
    return wall, cpu


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    rounds = parser.parse_args(argv).rounds
    from streaming import jvm
    from streaming.embedded.cluster import KafkaCluster

    jvm.resolve()
    work = Path(tempfile.mkdtemp(prefix="bench-restart-"))
    cluster = KafkaCluster(brokers=1, base_dir=work / "kafka")
    cluster.start()
    found: dict[tuple[str, str], list[tuple[float, float]]] = {}
    try:
        for r in range(rounds):
            for writer in WRITERS if r % 2 == 0 else WRITERS[::-1]:
                args = run_args(cluster.bootstrap_servers, work / f"{writer}-{r}", writer)
                for start in STARTS:
                    found.setdefault((start, writer), []).append(timed(args))
    finally:
        cluster.stop()
    report(found, rounds)


def report(found: dict[tuple[str, str], list[tuple[float, float]]], rounds: int) -> None:
    print(f"rebalancer run --available-now on empty topics, {rounds} rounds, medians "
          "(wall s / machine CPU-s):")
    for start in STARTS:
        med = {w: (statistics.median(x[0] for x in found[start, w]),
                   statistics.median(x[1] for x in found[start, w])) for w in WRITERS}
        cells = "   ".join(f"{w}: {med[w][0]:5.1f} s / {med[w][1]:5.1f} CPU-s" for w in WRITERS)
        print(f"  {start:>11}   {cells}   auto/spark: wall x{med['auto'][0] / med['spark'][0]:.2f},"
              f" CPU x{med['auto'][1] / med['spark'][1]:.2f}")


if __name__ == "__main__":
    main()

"""A job run from a cold start with work to do, two checkouts' code side by side: ``rebalancer run
--available-now`` as a process of its own on a new checkpoint over the chaos benchmark's seeded
events (4 groups, 6 batches of ~150 records, recommendations in most; ``--per-trigger`` smaller
gives more and smaller batches, where each batch's fixed cost shows), the code of ``--vs`` and of
this checkout alternating round by round on the same topics and the same JVM options.

Each figure is the process's wall time, the machine's busy CPU over it (driver, JVM, Python
workers), the first batch's duration (where a cold JVM and new Python workers pay), the later
batches' summed and their median. Medians over
``--rounds``. The job starts with the test suite's JVM options (:data:`streaming.dev.QUICK_JVM`:
C1 only), where most job starts are (``--c2`` for production's JIT).

    .venv/bin/python -m benchmarks.cold_run --vs /path/to/other/checkout [--rounds 4] [--c2]
        [--per-trigger 150]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks.restart import busy_ticks
from streaming.dev import QUICK_JVM

HERE = str(Path(__file__).resolve().parents[1])


Figures = tuple[float, float, int, int, float]


def one_run(args: list[str], code: str, c2: bool) -> Figures:
    """(wall s, busy CPU-s, first batch ms, the later batches' ms summed, their median) of one run
    of ``args`` with ``code`` on its path."""
    env = os.environ | {"PYTHONPATH": code}
    if not c2:
        env["JDK_JAVA_OPTIONS"] = QUICK_JVM
    ticks, t0 = busy_ticks(), time.monotonic()
    out = subprocess.run(args, capture_output=True, text=True, env=env, cwd=code)
    wall, cpu = time.monotonic() - t0, (busy_ticks() - ticks) / os.sysconf("SC_CLK_TCK")
    if out.returncode != 0:
        raise SystemExit(f"run failed ({out.returncode}) with {code}:\n{out.stderr[-3000:]}")
    ms = [int(line.rsplit(",", 1)[1].split()[0]) for line in out.stdout.splitlines()
          if line.startswith("batch ")]
    return wall, cpu, ms[0], sum(ms[1:]), statistics.median(ms[1:] or [0])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="benchmarks.cold_run", description=__doc__.split("\n\n")[0])
    ap.add_argument("--vs", required=True, help="another checkout whose code runs beside this one")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--c2", action="store_true", help="production's JIT (C1 only by default)")
    ap.add_argument("--per-trigger", type=int, default=150,
                    help="the job's maxOffsetsPerTrigger (records a batch)")
    a = ap.parse_args(argv)
    from benchmarks.chaos import prepare
    from streaming import config, jvm
    from streaming.embedded.cluster import KafkaCluster

    codes = {"vs": str(Path(a.vs).resolve()), "this": HERE}
    jvm.resolve()
    work = Path(tempfile.mkdtemp(prefix="rebalancer-cold-run-"))
    figures: dict[str, list[Figures]] = {name: [] for name in codes}
    with KafkaCluster(brokers=1, base_dir=work / "kafka") as cluster:
        cfg = config.load(overrides={"kafka.bootstrap_servers": cluster.bootstrap_servers,
                                     "spark.master": "local[1]", "spark.ui.enabled": "false"})
        bench = prepare(cfg, work, seed=11, groups=4, polls=30, per_trigger=a.per_trigger)
        for r in range(a.rounds):
            for name, code in codes.items():
                args, _ = bench.args(f"r{r}-{name}")
                figures[name].append(one_run(args, code, a.c2))
                wall, cpu, first, later, each = figures[name][-1]
                print(f"round {r} {name:>4} ({code}): {wall:.1f} s wall, {cpu:.1f} CPU-s, "
                      f"first batch {first:,} ms, later batches {later:,} ms "
                      f"(median {each:,.0f})", flush=True)
    medians = {name: [statistics.median(x) for x in zip(*runs, strict=True)]
               for name, runs in figures.items()}
    for name, (wall, cpu, first, later, each) in medians.items():
        print(f"{name:>4}: median {wall:.1f} s wall, {cpu:.1f} CPU-s, first batch {first:,.0f} ms, "
              f"later batches {later:,.0f} ms (each {each:,.0f})")
    (vw, vc, vf, vl, ve), (tw, tc, tf, tl, te) = medians["vs"], medians["this"]
    print(f"this / vs: wall x{tw / vw:.2f}, CPU x{tc / vc:.2f}, first batch x{tf / vf:.2f}, "
          f"later batches x{tl / vl:.2f} (each x{te / ve:.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

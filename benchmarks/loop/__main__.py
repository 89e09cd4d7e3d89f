"""Closed-loop benchmark: live groups following the rebalancer's recommendations vs Kafka's
assignors.

    .venv/bin/python -m benchmarks.loop [--quick] [--repeat N] [--workloads zipf,churn] [--out DIR]
    .venv/bin/python -m benchmarks.loop --render benchmarks/results/loop.json  # the report again,
                                                                               # from a run

On an embedded three-broker cluster with racks a, b, c (started here, with the Spark session, the
real streaming job and the trigger feed), each workload of :mod:`benchmarks.loop.workloads` runs
once per repeat with every strategy side by side (``range``, ``cooperative-sticky``, ``lag``,
``rebalancer``, ``oracle``; see :mod:`streaming.dev.workload.strategies` and
:mod:`benchmarks.loop.oracle`), each on its own topics and group with the same production. Writes
``loop[-quick].md`` and ``.json`` and one ``loop-<workload>.png`` per workload under the output
folder (default ``benchmarks/results``) and prints the table. The files are written again after
every run (``partial`` in their notes until the last), so an interrupted run keeps what it measured.
Each run in the JSON also holds our group's recommendations with the observation each was decided
at (``observed_s``) and what each gave each consumer (``given``: partitions, their records/s, the
capacity the decision used; :mod:`benchmarks.loop.given`), every load report its consumers sent
(``load_reports``: seconds, consumer, busy, records/s, what a record's cost says it could do, the
least records lag after its polls), each of its consumers' lag at each sample (``consumer_lag``:
seconds, consumer index -> records) and the job's micro-batch timings (``job_batches``).

Before the first measured run the job is warmed by an unmeasured :data:`WARM_S` run of ``zipf``
with our strategy alone (``--no-warm`` skips it): a job's first minute of batches is several times
slower than its later ones (the JIT, the first plans), and a job in production has been running for
days. Cold, the first workload's first recommendation reached the feed 20-26 s after the
observation it was decided at, against 3-6 s once the job was warm.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shlex
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.loop import report
from benchmarks.loop.run import TRIGGER, NotSettled, Suite, run_workload
from benchmarks.loop.workloads import Workload, quick_suite, suite
from streaming.dev.workload.strategies import EXTRA_STRATEGIES, STRATEGIES

SETTLE_ATTEMPTS = 3
WARM_S = 40.0
"""Seconds of the unmeasured ``zipf`` run that warms the job (one recommendation, applied)."""
RESULTS = Path(__file__).resolve().parent.parent / "results"


def _parser() -> argparse.ArgumentParser:
    """The command line's options."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.loop",
                                 description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="two short workloads (CI size, about 3 minutes)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="runs of each workload (median and spread)")
    ap.add_argument("--workloads", help="comma-separated subset of the suite")
    ap.add_argument("--strategies", default=",".join(STRATEGIES),
                    help=f"comma-separated, of {', '.join((*STRATEGIES, *EXTRA_STRATEGIES))}")
    ap.add_argument("--duration", type=float,
                    help="seconds per workload run (overrides the suite's)")
    ap.add_argument("--out", type=Path, default=RESULTS,
                    help="folder for the table, JSON and plots")
    ap.add_argument("--trigger", default=TRIGGER,
                    help=f"the job's trigger interval (default {TRIGGER!r}; '0 seconds': a "
                         "batch as soon as the last one ends and records wait)")
    ap.add_argument("--no-warm", action="store_true",
                    help=f"no unmeasured {WARM_S:.0f} s run to warm the job before the first one")
    ap.add_argument("--no-load-reports", action="store_true",
                    help="the rebalancer's consumers do not report their own load (lag alone)")
    ap.add_argument("--render", type=Path, metavar="JSON",
                    help="run nothing: write the table and plots again from a saved loop JSON "
                         "(into --out)")
    return ap


def _workloads(args: argparse.Namespace) -> dict[str, Workload]:
    """The workloads asked for: the (quick) suite, a subset of it, durations scaled."""
    workloads = quick_suite() if args.quick else suite()
    if args.workloads:
        full = suite()
        workloads = {n: workloads.get(n) or full[n] for n in args.workloads.split(",")}
    if args.duration:
        workloads = {n: w.scaled(args.duration) for n, w in workloads.items()}
    return workloads


def _run_all(workloads: dict[str, Workload], strategies: list[str], repeat: int, started: float,
             done: Callable[[dict[str, list[dict[str, Any]]], list[str]], None] = lambda *_: None,
             load_reports: bool = True, trigger: str = TRIGGER, warm: bool = True
             ) -> tuple[dict[str, list[dict[str, Any]]], list[str]]:
    """Each workload ``repeat`` times on one suite, a run retried with fresh groups when they do not
    settle, after a run that warms the job (``warm``, unmeasured); ``done`` after each run with
    what has been measured so far."""
    runs: dict[str, list[dict[str, Any]]] = {n: [] for n in workloads}
    unsettled: list[str] = []
    with (tempfile.TemporaryDirectory(prefix="rebalancer-loop-") as work,
          Suite(Path(work), trigger) as env):
        env.load_reports = load_reports
        print(f"cluster, Spark, job and feed up after {time.monotonic() - started:.0f}s",
              flush=True)
        if warm:
            _warm(env)
        for i in range(repeat):
            for name, w in workloads.items():
                print(f"run {i + 1}/{repeat}: {name} ({w.description})", flush=True)
                for attempt in range(1, SETTLE_ATTEMPTS + 1):
                    try:
                        runs[name].append(run_workload(env, w, strategies,
                                                       say=lambda s: print(s, flush=True)))
                        done({n: r for n, r in runs.items() if r}, unsettled)
                        break
                    except NotSettled as e:
                        # before any measurement: fresh groups, said in the report
                        unsettled.append(f"{name} run {i + 1}: {e}")
                        print(f"  {e}; attempt {attempt} of {SETTLE_ATTEMPTS}", flush=True)
                        if attempt == SETTLE_ATTEMPTS:
                            raise
    return runs, unsettled


def _warm(env: Any) -> None:
    """An unmeasured :data:`WARM_S` run of ``zipf`` with our strategy alone; a run that does not
    settle is not retried (the first measured run then starts cold, and says so)."""
    print(f"warming the job: zipf for {WARM_S:.0f}s, not measured", flush=True)
    try:
        run_workload(env, suite()["zipf"].scaled(WARM_S), ["rebalancer"], say=lambda _s: None)
    except NotSettled as e:
        print(f"  warm-up did not settle ({e}): the first run starts cold", flush=True)


def main(argv: list[str] | None = None) -> int:
    """Run the workloads with every strategy, then write and print the report."""
    ap = _parser()
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # coordinator moves and slow-loop notices, by the hundred
    logging.getLogger("kafka").setLevel(logging.CRITICAL)
    os.environ.setdefault("PYTHONWARNINGS", "ignore::FutureWarning")

    if args.render:
        return _render(args.render, args.out)
    workloads = _workloads(args)
    strategies = [s for s in args.strategies.split(",") if s]
    unknown = set(strategies) - set(STRATEGIES) - set(EXTRA_STRATEGIES)
    if unknown:
        ap.error(f"unknown strategies {sorted(unknown)}")
    stem = "loop-quick" if args.quick else "loop"
    command = "python -m benchmarks.loop " + shlex.join(argv if argv is not None else sys.argv[1:])
    started = time.monotonic()
    job_notes = {"the job": f"trigger every {args.trigger}; "
                 + ("none of its first batches measured (an unmeasured "
                    f"{WARM_S:.0f} s zipf run warmed it)" if not args.no_warm
                    else "cold at the first run (--no-warm)")}

    def partial(runs: dict[str, list[dict[str, Any]]], unsettled: list[str]) -> None:
        meta = report.notes(strategies, args.repeat, time.monotonic() - started, unsettled) \
            | job_notes
        report.write(args.out, stem, command, {n: workloads[n] for n in runs}, runs,
               {"partial": f"{sum(map(len, runs.values()))} of {args.repeat * len(workloads)} "
                           "runs so far"} | meta)

    runs, unsettled = _run_all(workloads, strategies, args.repeat, started, partial,
                               not args.no_load_reports, args.trigger, not args.no_warm)
    elapsed = time.monotonic() - started
    meta = report.notes(strategies, args.repeat, elapsed, unsettled) | job_notes
    text = report.write(args.out, stem, command, workloads, runs, meta)
    print(text)
    print(f"written: {args.out / (stem + '.md')}, {stem}.json, {len(runs)} plot(s); "
          f"{elapsed:.0f} s in all")
    return 0


def _render(saved: Path, out: Path) -> int:
    """The table, JSON and plots written again from a saved run (the report's current code, no new
    run)."""
    data = json.loads(saved.read_text())
    every = suite() | quick_suite()
    runs = data["runs"]
    stem = saved.stem
    text = report.write(out, stem, data["command"], {n: every[n] for n in runs}, runs, data["meta"])
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

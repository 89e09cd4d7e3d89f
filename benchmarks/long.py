"""``make test-long``: the long proofs one after another, each result kept with its commit.

    .venv/bin/python -m benchmarks.long [--only NAME[,NAME]] [--list]

The proofs too long for ``make test``, which holds a shorter form of each (named in :data:`STEPS`):
the tests marked ``long`` (``pytest --long``: the closed-loop benchmark's quick suite as a user runs
it, unlike consumers found by their lag alone, without load reports, and the chaos chain's kills
of side files rebuilt on a job with history), 20 random kills of the
job against a run without faults, the 2,000-batch soak, and the fuzz runs of 10,000 records. Each
step runs as its own process, alone; its whole output goes to
``benchmarks/results/long/<name>.txt`` under a header with the commit, the time, the machine's load
before and after and the exit status, and ``long.md`` there sums up each step's last run, read from
those headers (a run of ``--only`` some steps keeps the others' rows). The command fails if any
step does.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "long"


class Step(NamedTuple):
    name: str
    args: tuple[str, ...]
    shorter: str
    """what ``make test`` runs of the same path"""


STEPS = (
    Step("pytest-long", ("-m", "pytest", "tests", "--long", "-p", "no:cacheprovider",
                         "--durations=15"),
         "tests/integration/test_loop_benchmark.py's shared-cluster form; test_capacity_live's "
         "reported form; test_chaos's chain without the rebuilt side files"),
    Step("chaos-random", ("-m", "benchmarks.chaos", "--kills", "20", "--seed", "11"),
         "tests/integration/test_chaos.py (a kill at every fault point)"),
    Step("soak", ("-m", "benchmarks.soak", "--batches", "2000", "--every", "50", "--warmup", "300",
                  "--retain", "20", "--maintain-every", "240"),
         "tests/unit/benchmarks (the soak's verdicts), the integration tests of maintain and "
         "retention"),
    Step("fuzz", ("-m", "streaming.dev.fuzz", "--records", "10000"),
         "tests/integration/test_fuzz.py"),
    Step("fuzz-contract", ("-m", "streaming.dev.fuzz", "--records", "10000", "--contract"),
         "tests/integration/test_fuzz.py"),
)


def _commit() -> str:
    out = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=ROOT, capture_output=True,
                         text=True)
    return out.stdout.strip() or "unknown"


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def run_step(step: Step, commit: str) -> int:
    """One step alone, its output into its results file (its header says the seconds); the exit
    status."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    started, load = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), _load()
    t = time.monotonic()
    done = subprocess.run([sys.executable, *step.args], cwd=ROOT, capture_output=True, text=True)
    seconds = time.monotonic() - t
    header = (f"# python {' '.join(step.args)}\n"
              f"# commit {commit}, {started}, {seconds:.0f} s, exit {done.returncode}; "
              f"load before {load}, after {_load()}\n# in make test: {step.shorter}\n\n")
    (RESULTS / f"{step.name}.txt").write_text(header + done.stdout + done.stderr)
    return done.returncode


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.long",
                                 description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--only", help="comma-separated step names")
    ap.add_argument("--list", action="store_true", help="print the steps and exit")
    args = ap.parse_args(argv)
    chosen = [s for s in STEPS if not args.only or s.name in args.only.split(",")]
    if args.list or not chosen:
        for s in STEPS:
            print(f"{s.name}: python {' '.join(s.args)}  (in make test: {s.shorter})")
        return 0 if args.list else 2
    commit, failed = _commit(), 0
    for step in chosen:
        print(f"{step.name}: python {' '.join(step.args)} ...", flush=True)
        code = run_step(step, commit)
        failed += code != 0
        print(f"  {row(step.name, RESULTS)}", flush=True)
    (RESULTS / "long.md").write_text(summary(RESULTS))
    return 1 if failed else 0


_HEADER = re.compile(r"# commit (?P<commit>\S+), (?P<started>.+? UTC), (?P<seconds>\d+) s, "
                     r"exit (?P<code>-?\d+);")


def row(name: str, results: Path) -> str:
    """A step's row of ``long.md``, from the header of its results file (its last run)."""
    path = results / f"{name}.txt"
    lines = path.read_text(errors="replace").splitlines()[:2] if path.exists() else []
    found = _HEADER.match(lines[1]) if len(lines) > 1 else None
    if found is None:
        return f"| {name} | not run | | | |"
    code = int(found["code"])
    outcome = "passed" if code == 0 else f"FAILED (exit {code})"
    return (f"| {name} | {outcome} | {found['seconds']} s | {found['commit']}, {found['started']} "
            f"| [{name}.txt]({name}.txt) |")


def summary(results: Path) -> str:
    """``long.md``: every step's last run, whichever steps this run chose (``--only``)."""
    return "\n".join([
        "# make test-long: each step's last run, with the commit it ran on", "",
        "`python -m benchmarks.long` runs them all one after another (`--only NAME` some of them); "
        "each row is read from its step's output file.", "",
        "| step | outcome | time | commit, started | output |", "|---|---|---|---|---|",
        *(row(s.name, results) for s in STEPS), ""])


if __name__ == "__main__":
    sys.exit(main())

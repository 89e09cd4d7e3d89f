"""The job's stateful step with this checkout's balanced assignor beside a reference version,
alternating in one process: what the assignor's speed is worth per record where recommendations are
made.

    .venv/bin/python -m benchmarks.balanced.job_step --reference /tmp/ref/balanced_ref [--rounds 3]

Each round runs :mod:`benchmarks.job.dense_step`'s two cases as ``dense_step --repeat 1 --buckets
64`` does (its defaults: catch-up 1 group x 100 partitions x 200 polls; steady 1,000 groups x 100
partitions, 2 batches; every tenth group skewed, so the policy recommends) once with each side's
``solve`` behind ``assignors.balanced.assign``, the side that goes first alternating. Prints per
case and side: CPU us per dense record (median, samples), the recommendations made, the run's digest
(the same on both sides when the change keeps every result) and the load average before and after.
"""

from __future__ import annotations

import argparse
import os
import statistics

import assignors.balanced as balanced_package
from assignors.balanced.solve import solve
from benchmarks.job import dense_step

from .corpus import Solve
from .same import load_reference

T0 = 1_700_000_000_000
BUCKETS = 64


def one_run(case: str) -> tuple[float, int, str]:
    """CPU us per record, recommendations and digest of one run of ``case`` with the current
    ``solve``."""
    if case == "catchup":
        secs, records, run = dense_step.catchup(BUCKETS, False, 100, 200, (10, 5), T0)
    else:
        secs, records, run = dense_step.steady(BUCKETS, False, 1000, 100, 2, (10, 5), T0)
    return 1e6 * secs / records, run.recommendations, run.done()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="benchmarks.balanced.job_step",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--reference", required=True, help="directory of the reference package")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    sides: dict[str, Solve] = {"reference": load_reference(args.reference), "this": solve}
    names = list(sides)
    for case in ("catchup", "steady"):
        before = os.getloadavg()[0]
        results: dict[str, list[tuple[float, int, str]]] = {name: [] for name in names}
        for r in range(args.rounds):
            for name in names if r % 2 == 0 else names[::-1]:
                # what assign() calls
                balanced_package.solve = sides[name]  # type: ignore[assignment]
                results[name].append(one_run(case))
        balanced_package.solve = solve
        print(f"{case}: load average {before:.2f} -> {os.getloadavg()[0]:.2f}, "
              f"{args.rounds} rounds")
        for name, runs in results.items():
            us = [u for u, _, _ in runs]
            print(f"{case:8s} {name:9s} median {statistics.median(us):7,.0f} us/record (runs "
                  f"{', '.join(f'{u:,.0f}' for u in us)}), {runs[0][1]} recommendations, "
                  f"digest {'/'.join(sorted({d for _, _, d in runs}))}", flush=True)


if __name__ == "__main__":
    main()

"""CPU time of the balanced assignor's ``solve`` on fixed shapes, this checkout beside another
version, alternating.

    .venv/bin/python -m benchmarks.balanced.speed --reference /tmp/ref/balanced_ref [--rounds 7]

(the reference as :mod:`.same` makes it). Shapes: ``dense-100x4``, the job's proposal (100
partitions, 4 range members, 5 hot partitions: :func:`.corpus.dense_step_group`), 20 groups of it a
sample; ``wide-1000x20``, 1,000 partitions over 4 topics, 20 members on 3 racks owning a previous
assignment, skewed lags, one sample; ``corpus-300``, the first 300 groups of the seeded corpus, one
sample; and on demand (``--shapes``) ``balanced-10k`` and ``balanced-100k``,
:mod:`benchmarks.speed`'s cases (10 x 1,000 partitions, 100 members; 100 x 1,000, 1,000 members).
Each round times one sample of each side, the side that goes first alternating; printed per shape:
every sample's CPU ms per group, the medians and their ratio, with the load average before and after
(the machine is shared: medians of alternating rounds, not means).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

from assignors.balanced.solve import solve

from .corpus import Items, Solve, shapes
from .same import load_reference


def sample(fn: Solve, items: Items) -> float:
    """CPU ms per group of one pass of ``fn`` over ``items``."""
    start = time.process_time()
    for snapshot, opts in items:
        fn(snapshot, opts)
    return 1000 * (time.process_time() - start) / len(items)


def run(sides: dict[str, Solve], items: Items, rounds: int) -> dict[str, list[float]]:
    """``rounds`` alternating samples per side (after one untimed pass of each)."""
    names = list(sides)
    for name in names:
        sample(sides[name], items)
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            times[name].append(sample(sides[name], items))
    return times


def report(shape: str, times: dict[str, list[float]], say: Callable[[str], None] = print) -> None:
    medians = {name: statistics.median(ts) for name, ts in times.items()}
    for name, ts in times.items():
        samples = ', '.join(f'{t:.2f}' for t in ts)
        say(f"{shape:14s} {name:9s} median {medians[name]:8.2f} ms/group  (samples {samples})")
    if "reference" in medians and "this" in medians:
        say(f"{shape:14s} this / reference = {medians['this'] / medians['reference']:.3f}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="benchmarks.balanced.speed",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--reference",
                    help="directory of the reference package (else this checkout alone)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--shapes", default="dense-100x4,wide-1000x20,corpus-300")
    args = ap.parse_args(argv)
    sides: dict[str, Solve] = {"this": solve}
    if args.reference:
        sides = {"reference": load_reference(args.reference), "this": solve}
    for shape, items in shapes(args.shapes.split(",")).items():
        before = os.getloadavg()[0]
        times = run(sides, items, args.rounds)
        print(f"{shape}: load average {before:.2f} -> {os.getloadavg()[0]:.2f}, "
              f"{args.rounds} rounds", flush=True)
        report(shape, times)


if __name__ == "__main__":
    main()

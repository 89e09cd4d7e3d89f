"""Whether this checkout's balanced assignor gives the same assignment as another version, on every
group of the seeded corpus (:mod:`.corpus`): the check that a change meant to be faster changes no
result.

    git archive <rev> assignors/balanced | tar -x -C /tmp/ref \
        && mv /tmp/ref/assignors/balanced /tmp/ref/balanced_ref
    .venv/bin/python -m benchmarks.balanced.same --reference /tmp/ref/balanced_ref \
        [--count 3000] [--seed 1] [--shapes wide-1000x20,balanced-10k,balanced-100k] [--extreme 900]

The reference is imported as a package of its own (its parent directory goes on ``sys.path``),
beside this checkout's ``assignors.balanced``; nothing of it is kept in the project. ``--shapes``:
also the fixed groups of :func:`.corpus.shapes` (larger than the corpus's, past the sizes where the
search changes shape); ``--extreme N``: N groups of :func:`.corpus.extreme_group` (an exception
counts as that side's result). Prints the groups compared, the mismatches (the first few with their
shape), both digests and the CPU seconds each side took.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import random
import sys
import time
from pathlib import Path

from assignors.balanced import BalancedOptions
from assignors.balanced.solve import solve
from assignors.model import GroupSnapshot

from .corpus import Solve, corpus, encode, extreme_group, random_options, shapes


def load_reference(package_dir: str) -> Solve:
    """``solve`` of the package at ``package_dir`` (a copy of ``assignors/balanced`` under another
    name)."""
    path = Path(package_dir).resolve()
    sys.path.insert(0, str(path.parent))
    solve_ref: Solve = importlib.import_module(f"{path.name}.solve").solve
    return solve_ref


def _outcome(fn: Solve, snapshot: GroupSnapshot, opts: BalancedOptions) -> bytes:
    """The encoded assignment, or the exception's repr (extreme inputs make the assignor raise, as
    before)."""
    try:
        return encode(fn(snapshot, opts))
    except ArithmeticError as e:
        return repr(e).encode()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="benchmarks.balanced.same",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--reference", required=True, help="directory of the reference package")
    ap.add_argument("--count", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--shapes", default="",
                    help="comma-separated names of corpus.shapes to compare too")
    ap.add_argument("--extreme", type=int, default=0, help="extreme groups to compare too")
    args = ap.parse_args(argv)
    reference = load_reference(args.reference)
    spent = {"this": 0.0, "reference": 0.0}
    mismatches = 0
    hashes = {"this": hashlib.sha256(), "reference": hashlib.sha256()}
    items = list(corpus(args.count, args.seed))
    for group in shapes([n for n in args.shapes.split(",") if n]).values():
        items += group
    rng = random.Random(args.seed)
    items += [(extreme_group(rng), random_options(rng)) for _ in range(args.extreme)]
    for i, (snapshot, opts) in enumerate(items):
        outs = {}
        for name, fn in (("reference", reference), ("this", solve)):
            start = time.process_time()
            outs[name] = _outcome(fn, snapshot, opts)
            spent[name] += time.process_time() - start
            hashes[name].update(outs[name])
        if outs["this"] != outs["reference"]:
            mismatches += 1
            if mismatches <= 5:
                print(f"MISMATCH item {i}: topics {dict(snapshot.topics)}, {len(snapshot.members)} "
                      f"members, {opts}")
    print(f"{len(items)} groups ({args.count} of corpus seed {args.seed}, shapes "
          f"{args.shapes or 'none'}, {args.extreme} extreme): {mismatches} mismatches; CPU s: this "
          f"{spent['this']:.2f}, reference {spent['reference']:.2f}")
    print(f"sha256 this {hashes['this'].hexdigest()}, reference {hashes['reference'].hexdigest()}")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())

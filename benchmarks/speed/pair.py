"""Two trees' sticky family on the many-topic shape in ONE process, calls alternated: a paired A/B.

    .venv/bin/python benchmarks/speed/pair.py --base DIR [--root DIR] [--assignor sticky]
                                              [--calls 15]

On a shared machine the load moves between two processes run one after the other (``cpu.py``); here
both trees' ``assignors`` packages are imported side by side (the modules of the first are set aside
before the second is imported) and their calls alternate, the first of each pair swapped every
round, so that both see the same load and the same heap. Prints one line per tree (CPU seconds,
``time.process_time``: the first call, the median and minimum of the others, the largest
generation-0 collection timed right after a call, the median minor page faults of a call) and the
median over rounds of the ratio root / base. Fails if the two trees' first results differ (member
order and list order included); only their digests are kept, so that no result outlives its round (a
full collection would walk it in every later call).
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import importlib
import os
import resource
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def load(root: str, assignor: str) -> Callable[[Any], Any]:
    """The assign function of ``root``'s tree, its modules imported afresh (and then set aside)."""
    for name in [n for n in sys.modules if n == "assignors" or n.startswith("assignors.")]:
        del sys.modules[name]
    sys.path.insert(0, root)
    try:
        registry = importlib.import_module("assignors.registry")
        return registry.get(assignor)  # type: ignore[no-any-return]
    finally:
        sys.path.remove(root)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--base", required=True, help="the tree to compare against, e.g. main unpacked")
    ap.add_argument("--root", default=str(Path(__file__).resolve().parents[2]))
    ap.add_argument("--assignor", default="sticky")
    ap.add_argument("--calls", type=int, default=15)
    args = ap.parse_args()
    roots = (args.base, args.root)
    fns = [load(root, args.assignor) for root in roots]
    sys.path.insert(0, args.root)
    from benchmarks.speed.cases import cases
    from benchmarks.speed.child import _snapshot

    case = next(c for c in cases(False) if c.name == "many-topics-r1")
    snap = _snapshot({"assignor": args.assignor, "topics": case.topics,
                      "partitions": case.partitions, "consumers": case.consumers,
                      "subscription": case.subscription})
    seconds: list[list[float]] = [[], []]
    gen0: list[list[float]] = [[], []]
    faults: list[list[int]] = [[], []]
    first: list[Any] = [None, None]
    for i in range(args.calls):
        for k in ((0, 1) if i % 2 == 0 else (1, 0)):
            flt = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            started = time.process_time()
            result = fns[k](snap)
            seconds[k].append(time.process_time() - started)
            started = time.process_time()
            gc.collect(0)
            gen0[k].append(time.process_time() - started)
            faults[k].append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - flt)
            if i == 0:
                first[k] = hashlib.sha256(repr(list(result.items())).encode()).hexdigest()
            del result
    if first[0] != first[1]:
        raise SystemExit("the two trees assign differently")
    for k, root in enumerate(roots):
        warm = seconds[k][1:]
        print(f"{args.assignor:18s} {root} | first {seconds[k][0] * 1e3:.0f} ms | others median "
              f"{statistics.median(warm) * 1e3:.1f} min {min(warm) * 1e3:.1f} ms | gen0 after "
              f"{max(gen0[k]) * 1e3:.1f} ms | faults/call {int(statistics.median(faults[k][1:]))}")
    ratios = [b / a for a, b in zip(seconds[0][1:], seconds[1][1:], strict=True)]
    print(f"ratio root/base, median over {len(ratios)} rounds: {statistics.median(ratios):.3f}; "
          f"load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()

"""Two trees' sticky family on the many-topic shape, each in its own process, calls alternated in
lockstep.

    .venv/bin/python benchmarks/speed/lockstep.py --base DIR [--root DIR] [--assignor sticky]
                                                  [--calls 18] [--then 0]

``pair.py`` puts both trees in one process, so each tree's calls run on a heap the other shaped and
trigger the other's full collections; here each tree has its own process, as in use, and the parent
hands them one call at a time, the first of each pair swapped every round, so that both still see
the same load. Per call: CPU seconds of the call (``time.process_time``), of the whole round (the
call, ``--then N`` small lists made with the result held as a caller's next allocations, the drop of
the result), and of the full collections in the call and after it. Prints per tree the medians over
the calls after the first three and the median over rounds of the ratios root / base. Not a check of
sameness: see ``digest.py`` and ``pair.py``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()


def child(root: str, assignor: str, then: int) -> None:
    """One tree: a call per line read, one JSON line back: [call, whole round, full in call, full
    after]."""
    sys.path.insert(0, root)
    from assignors import registry
    from benchmarks.speed.cases import cases
    from benchmarks.speed.child import _snapshot

    case = next(c for c in cases(False) if c.name == "many-topics-r1")
    snap = _snapshot({"assignor": assignor, "topics": case.topics, "partitions": case.partitions,
                      "consumers": case.consumers, "subscription": case.subscription})
    fn = registry.get(assignor)
    full = {"started": 0.0, "seconds": 0.0}

    def on_collection(phase: str, info: dict[str, Any]) -> None:
        if info["generation"] == 2:
            if phase == "start":
                full["started"] = time.process_time()
            else:
                full["seconds"] += time.process_time() - full["started"]

    gc.callbacks.append(on_collection)
    print("ready", flush=True)
    for _ in sys.stdin:
        full["seconds"] = 0.0
        started = time.process_time()
        result = fn(snap)
        called = time.process_time()
        in_call = full["seconds"]
        held = [[j] for j in range(then)]
        del held, result
        ended = time.process_time()
        print(json.dumps([called - started, ended - started, in_call, full["seconds"] - in_call]),
              flush=True)


def run(roots: tuple[str, str], assignor: str, calls: int, then: int) -> list[list[list[float]]]:
    """Each tree's per-call figures, the calls alternated between the two processes."""
    procs = [subprocess.Popen(["nice", "-n", "5", sys.executable, str(HERE), "--child", root,
                               "--assignor", assignor, "--then", str(then)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
             for root in roots]
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    figures: list[list[list[float]]] = [[], []]
    for i in range(calls):
        for k in ((0, 1) if i % 2 == 0 else (1, 0)):
            stdin, stdout = procs[k].stdin, procs[k].stdout
            assert stdin is not None and stdout is not None
            stdin.write("go\n")
            stdin.flush()
            figures[k].append(json.loads(stdout.readline()))
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait()
    return figures


def report(roots: tuple[str, str], assignor: str, then: int,
           figures: list[list[list[float]]]) -> None:
    warm = [f[3:] for f in figures]
    for root, calls in zip(roots, warm, strict=True):
        print(f"{assignor:18s} {root} | call median "
              f"{statistics.median(c[0] for c in calls) * 1e3:.1f} ms | whole round (then {then}) "
              f"{statistics.median(c[1] for c in calls) * 1e3:.1f} ms | full collections in calls "
              f"{sum(c[2] for c in calls) * 1e3:.0f} ms, after "
              f"{sum(c[3] for c in calls) * 1e3:.0f} ms over {len(calls)} rounds")
    call = statistics.median(b[0] / a[0] for a, b in zip(*warm, strict=True))
    whole = statistics.median(b[1] / a[1] for a, b in zip(*warm, strict=True))
    print(f"root/base, median over {len(warm[0])} rounds: call {call:.3f}, whole round "
          f"{whole:.3f}; load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--base", help="the tree to compare against, e.g. main unpacked")
    ap.add_argument("--root", default=str(HERE.parents[2]))
    ap.add_argument("--assignor", default="sticky")
    ap.add_argument("--calls", type=int, default=18)
    ap.add_argument("--then", type=int, default=0,
                    help="small lists a caller makes after each call")
    ap.add_argument("--child", metavar="ROOT", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.assignor, args.then)
        return
    if not args.base:
        ap.error("--base is required")
    roots = (args.base, args.root)
    report(roots, args.assignor, args.then, run(roots, args.assignor, args.calls, args.then))


if __name__ == "__main__":
    main()

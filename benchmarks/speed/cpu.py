"""CPU time of our sticky family on the many-topic shape, in this process: for A/B runs of two
trees.

    .venv/bin/python benchmarks/speed/cpu.py [--root DIR] [--assignor sticky] [--calls 9]
                                             [--gen0-after]

``--root`` is the tree whose ``assignors`` package is timed (default: this one), e.g. an older
commit unpacked with ``git archive <commit> assignors benchmarks | tar -x -C DIR``; run it
alternately on two trees. Prints one JSON line: CPU seconds (``time.process_time``) of each round-1
call in order (call 1 is cold), of one round 2 (every member but the first owning its round-1
result), the RSS before the first call, after the calls (what stays held) and at its peak, the minor
page faults of each round-1 call (a warm call that reuses memory the allocator kept has few) and the
load average. ``--gen0-after`` also times a generation-0 collection right after each round-1 call,
while its result is still held (``gen0_after_s``): the collector work a call leaves to its caller,
who pays it on its next allocations (a call that suspends the collector looks cheaper without it).
``--then N`` times whole rounds too (``whole_s``, every call but the last): from the call's start to
the drop of its result, after a caller made ``N`` small lists with the result held; so the
collections a call moves onto its caller (a full one included) and the freeing of its result are
counted.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import sys
import time
from pathlib import Path


def _parser() -> argparse.ArgumentParser:
    """The command line's options."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--root", default=str(Path(__file__).resolve().parents[2]))
    ap.add_argument("--assignor", default="sticky")
    ap.add_argument("--calls", type=int, default=9)
    ap.add_argument("--gen0-after", action="store_true",
                    help="time a generation-0 collection after each call")
    ap.add_argument("--then", type=int, default=None,
                    help="time whole rounds: the call, N small lists, the drop")
    return ap


def main() -> None:
    args = _parser().parse_args()
    sys.path.insert(0, args.root)
    import assignors
    from assignors import registry
    from benchmarks.speed.cases import cases
    from benchmarks.speed.child import _rss, _snapshot

    case = next(c for c in cases(False) if c.name == "many-topics-r1")
    spec = {"assignor": args.assignor, "topics": case.topics, "partitions": case.partitions,
            "consumers": case.consumers, "subscription": case.subscription}
    fn = registry.get(args.assignor)
    snap = _snapshot(spec)
    base = _rss()
    rounds_1, faults, gen0_after, whole = [], [], [], []
    for _ in range(args.calls):
        flt = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        called = time.process_time()
        result = fn(snap)
        rounds_1.append(time.process_time() - called)
        # before anything allocates a container (getrusage does) and collects on its own
        if args.gen0_after:
            started = time.process_time()
            gc.collect(0)
            gen0_after.append(time.process_time() - started)
        faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - flt)
        if len(rounds_1) == args.calls:
            break  # the last result is kept for round 2
        if args.then is not None:
            held = [[j] for j in range(args.then)]  # a caller's next allocations, the result held
            del held
        result = {}  # dropped, not while the next call is timed (as benchmarks.speed.child)
        whole.append(time.process_time() - called)
    owned = {m.member_id: result[m.member_id] for m in snap.members[1:]}
    second = _snapshot(spec, owned)
    del result, owned
    started = time.process_time()
    fn(second)
    round_2 = time.process_time() - started
    del second
    gc.collect()
    print(json.dumps({
        "root": str(Path(assignors.__file__).resolve().parents[1]), "assignor": args.assignor,
        "round1_s": [round(x, 4) for x in rounds_1], "round2_s": round(round_2, 4),
        "round1_faults": faults,
        **({"gen0_after_s": [round(x, 4) for x in gen0_after]} if args.gen0_after else {}),
        **({"then": args.then, "whole_s": [round(x, 4) for x in whole]} if args.then is not None
           else {}),
        "rss_base_mib": base >> 20, "rss_held_mib": _rss() >> 20,
        "rss_peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10,
        "load": [round(x, 2) for x in os.getloadavg()],
    }))


if __name__ == "__main__":
    main()

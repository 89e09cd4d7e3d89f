"""A loop run's decisions again, offline: the events the collector published for our group (kept in
the run's JSON with ``LOOP_KEEP_EVENTS=1``) through the job's stateful step
(:func:`streaming.policy.recommend.process`), cut into micro-batches of every size asked, and
whether the recommendations agree (they must: the same events, the same recommendations, whatever
the batching).

    LOOP_KEEP_EVENTS=1 python -m benchmarks.loop --workloads recover --out /tmp/run
    python -m benchmarks.loop.replay /tmp/run/loop.json recover --cuts 1,2,5,20

Each cut is tried on the events in the order they were published, in the job's own order within
a ``ts`` (metadata before lag, :mod:`streaming.state.ingest`) and with each poll's lag before its
metadata (as a micro-batch that read the lag topic further than the metadata topic sees them: the
lag's ``metadata_events`` make the poll wait, :mod:`streaming.state.waiting`; events kept before
the count existed cannot, and may differ there). Prints one line per cut: the
recommendations (seconds from the first event, triggers) and whether they match the first cut's.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from streaming.config import load
from streaming.dev.demo.loop import loop_config
from streaming.policy.recommend import process
from streaming.state.group_state import GroupState

META_FIRST = {"members": 0, "partitions": 1}


def decisions(events: Sequence[dict[str, Any]], cut: int, min_total_lag: int
              ) -> list[tuple[float, list[str]]]:
    """The recommendations of ``events`` cut into batches of ``cut``: (seconds from the first
    event, triggers)."""
    policy = loop_config(load(), "unused", "unused", min_total_lag=min_total_lag).policy
    state, out = GroupState(events[0]["group"]), []
    t0 = events[0]["ts"]
    for i in range(0, len(events), cut):
        out += [(round((r.event_ts - t0) / 1000, 1), sorted(r.triggers))
                for r in process(state, list(events[i:i + cut]), policy)]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", help="a loop run's JSON, written with LOOP_KEEP_EVENTS=1")
    ap.add_argument("workload")
    ap.add_argument("--cuts", default="1,2,5,20", help="micro-batch sizes, comma-separated")
    ap.add_argument("--min-total-lag", type=int, default=200, help="as the loop's job (200)")
    args = ap.parse_args(argv)
    runs = json.loads(Path(args.run).read_text())["runs"][args.workload]
    agree = True
    for k, run in enumerate(runs):
        events = run.get("events_published")
        if not events:
            print(f"run {k + 1}: no events kept (run the loop with LOOP_KEEP_EVENTS=1)")
            continue
        live = [(r.get("observed_s"), r["triggers"]) for r in run["recommendations"]]
        print(f"run {k + 1}: live {live}")
        orders = {"published": events,
                  "meta first": sorted(events, key=lambda e: (e["ts"],
                                                              META_FIRST.get(e["type"], 2))),
                  "lag first": sorted(events, key=lambda e: (e["ts"], e["type"] in META_FIRST))}
        first = None
        for name, ordered in orders.items():
            for cut in (int(c) for c in args.cuts.split(",")):
                got = decisions(ordered, cut, args.min_total_lag)
                first = got if first is None else first
                agree &= got == first
                print(f"  {name:10} cut {cut:3}: {got}{'' if got == first else '  DIFFERS'}")
    print("the cuts agree" if agree else "the cuts DIFFER: the decisions depend on the batching")
    return 0 if agree else 1


if __name__ == "__main__":
    raise SystemExit(main())

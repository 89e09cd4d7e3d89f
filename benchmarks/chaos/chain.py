"""The chain: every fault point killed once, in turn, on one checkpoint, so that each kill but the
first few lands on a job with history (state, both tables and the feed not empty). It is the CI
form of the sweep: one job start per point, not a fresh checkpoint and its reference per point.

The order follows what a checkpoint's life reaches:

1. its first starts: the side files written only while a checkpoint has none (the layout, the
   version floors, the app id), each before and after its rename, in the order a start writes them;
   each run gets one file further than the last;
2. ``batch:start@3``: batches 0-2 committed, killed as batch 3 begins: history from here on;
3. the points every start reaches (the lease, the tables, the query's start), now on that history;
4. batch 3's points in the order the batch reaches them, each kill on a replay of it that the kills
   before left part done: its state step, the driver's Delta commit, the feed, the row retention,
   the end before Spark's commit log (so the feed is published again: a counted duplicate);
5. Spark's Delta writer in batch 4, a batch no run has written yet, before and after its commit.

Worked example (the reference drains 6 batches): 22 kills, 23 runs; the runs of steps 1 and 3 stop
before any batch, those of step 4 all in batch 3, the last one drains batches 4 (again) and 5."""

from __future__ import annotations

from collections import Counter

from .bench import Bench
from .compare import same
from .runs import RETAIN_ALL, SPARK_WRITER, ChaosRun, drain_with_faults
from .sweep import outcome_line

HISTORY = 3
"""Batches committed before the kills of a job with history."""
ONCE = ("state_layout.json", "version_floors.json", "delta_app_id")
"""Side files a start writes only when its checkpoint has none, in the order it writes them."""
ONCE_POINTS = tuple(f"{name}:{when}-rename" for name in ONCE for when in ("before", "after"))
EVERY_START = ("rebalancer.lease:before-rename", "rebalancer.lease:after-rename",
               "tables:before-create", "tables:after-create", "query:before-start")
BATCH_ORDER = ("stateful", "delta-rs:before-commit", "delta-rs:after-commit", "feed:before",
               "feed:after", "retention:before", "retention:after", "batch:end")
"""Batch points after ``batch:start`` in the order a batch reaches them (delta-rs writer)."""

CHAIN: list[tuple[str, dict[str, str]]] = [
    *((point, {}) for point in ONCE_POINTS),
    (f"batch:start@{HISTORY}", {}),
    *((point, {}) for point in EVERY_START),
    *((point if point == "stateful" else f"{point}@{HISTORY}",
       RETAIN_ALL if point.startswith("retention:") else {}) for point in BATCH_ORDER),
    (f"spark-delta:before-commit@{HISTORY + 1}", SPARK_WRITER),
    (f"spark-delta:after-commit@{HISTORY + 1}", SPARK_WRITER),
]
"""(fault spec, the run's extra settings) in turn; every point of
:data:`streaming.operations.faults.POINTS` once."""


def points() -> list[str]:
    """The chain's points, without their batch."""
    return [spec.split("@")[0] for spec, _ in CHAIN]


def chain_once(bench: Bench, name: str = "chain") -> tuple[ChaosRun, dict]:
    """Drain the bench's events on a new checkpoint through the chain's kills; the run and the
    outputs compared with the reference."""
    steps = [(spec, bench.args(name, extra)[0]) for spec, extra in CHAIN]
    drain, checkpoint = bench.args(name)
    run = drain_with_faults(steps, drain, checkpoint, bench.work / f"{name}.log")
    return run, bench.outputs(name)


def run_chain(bench: Bench) -> bool:
    """The chain, one printed line; True when every point was reached and the outputs are the
    same."""
    run, outputs = chain_once(bench)
    print(outcome_line("chain", run, outputs), flush=True)
    print("runs: " + ", ".join(run.log), flush=True)
    return run.kills == dict(Counter(points())) and same(outputs)

"""The chain: every fault point killed in turn on one checkpoint, each on a job with history
(state, both tables and the feed not empty) but the side files of a new checkpoint. It is the CI
form of the sweep: one job start per kill, not a fresh checkpoint and its reference per point.

:data:`CHAIN` (``make test``) follows what a checkpoint's life reaches, each point once:

1. its first starts: the side files written only while a checkpoint has none (the layout, the
   version floors, the app id), each before and after its rename, in the order a start writes them;
   each run gets one file further than the last;
2. ``batch:start@3``: batches 0-2 committed, killed as batch 3 begins: history from here on;
3. the points every start reaches (the lease, the tables, the query's start);
4. batch 3's points in the order the batch reaches them, each kill on a replay of it that the kills
   before left part done: its state step, the driver's Delta commit, the feed, the row retention,
   the end before Spark's commit log (so the feed is published again: a counted duplicate);
5. Spark's Delta writer in batch 4, a batch no run has written yet, before and after its commit.

:data:`REBUILT` (``make test-long``) kills the same side files again on a job with history, each
found empty at a start and killed while it is rebuilt (the floors from the table's history, the app
id from the tables' logs, the layout from the state): the only way a job with history writes them.
Their points are :data:`CHAIN`'s, in another state; ``make test`` rebuilds each damaged file without
a kill (``tests/integration/test_side_files.py``), and a kill there cost the suite six job starts.

Worked example (the reference drains 6 batches): :data:`CHAIN` is 22 kills in 23 runs; the runs of
steps 1 and 3 stop before any batch, those of step 4 all in batch 3, the last one drains batches 4
(again) and 5. :data:`REBUILT` is 7 kills in 8 runs, all but its first before any batch."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import NamedTuple

from .bench import Bench
from .compare import same
from .runs import RETAIN_ALL, SPARK_WRITER, ChaosRun, Step, drain_with_faults
from .sweep import outcome_line

HISTORY = 3
"""Batches committed before the kills of a job with history."""
ONCE = ("state_layout.json", "version_floors.json", "delta_app_id")
"""Side files a start writes only when its checkpoint has none or finds one damaged, in the order
it writes them."""
EVERY_START = ("rebalancer.lease:before-rename", "rebalancer.lease:after-rename",
               "tables:before-create", "tables:after-create", "query:before-start")
BATCH_ORDER = ("stateful", "delta-rs:before-commit", "delta-rs:after-commit", "feed:before",
               "feed:after", "retention:before", "retention:after", "batch:end")
"""Batch points after ``batch:start`` in the order a batch reaches them (delta-rs writer)."""


class Kill(NamedTuple):
    """One kill of the chain: its fault spec (``point[@batch]``)."""

    spec: str
    extra: dict[str, str]
    """the run's extra settings"""
    damage: str | None = None
    """a side file left empty before the run (a start rebuilds it)"""


def _once(on_history: bool) -> list[Kill]:
    """Each of :data:`ONCE` before and after its rename: written at a new checkpoint's first
    starts, or (``on_history``) rebuilt after it was found empty."""
    return [Kill(f"{name}:{when}-rename", {}, name if on_history and when == "before" else None)
            for name in ONCE for when in ("before", "after")]


MAKES_HISTORY = Kill(f"batch:start@{HISTORY}", {})
"""Batches 0 to HISTORY - 1 committed, killed as the next begins."""
CHAIN: list[Kill] = [
    *_once(on_history=False),
    MAKES_HISTORY,
    *(Kill(point, {}) for point in EVERY_START),
    *(Kill(point if point == "stateful" else f"{point}@{HISTORY}",
           RETAIN_ALL if point.startswith("retention:") else {}) for point in BATCH_ORDER),
    Kill(f"spark-delta:before-commit@{HISTORY + 1}", SPARK_WRITER),
    Kill(f"spark-delta:after-commit@{HISTORY + 1}", SPARK_WRITER),
]
"""The kills in turn: every point of :data:`streaming.operations.faults.POINTS` once, on a job with
history but the side files of :data:`ONCE`, at a first start."""
REBUILT: list[Kill] = [MAKES_HISTORY, *_once(on_history=True)]
"""The side files of :data:`ONCE` on a job with history, each emptied and killed as it is rebuilt
(before its rename) or once rebuilt (after it)."""


def points(kills: list[Kill] = CHAIN) -> list[str]:
    """The kills' points, without their batch."""
    return [kill.spec.split("@")[0] for kill in kills]


def republishes(kills: list[Kill]) -> bool:
    """Whether a kill replays a batch after its feed was written (the feed's duplicates)."""
    return any(point in ("feed:after", "batch:end") for point in points(kills))


def chain_once(bench: Bench, name: str = "chain",
               kills: list[Kill] = CHAIN) -> tuple[ChaosRun, dict]:
    """Drain the bench's events on a new checkpoint through ``kills`` in turn; the run and the
    outputs compared with the reference."""
    drain, checkpoint = bench.args(name)

    def emptied(side_file: str) -> Callable[[], None]:
        return lambda: (checkpoint / side_file).write_text("")

    steps = [Step(kill.spec, bench.args(name, kill.extra)[0],
                  emptied(kill.damage) if kill.damage else None) for kill in kills]
    run = drain_with_faults(steps, drain, checkpoint, bench.work / f"{name}.log")
    return run, bench.outputs(name)


def run_chain(bench: Bench) -> bool:
    """:data:`CHAIN`, then :data:`REBUILT` on a checkpoint of its own, a printed line each; True
    when every point was reached and the outputs are the same."""
    ok = True
    for name, kills in (("chain", CHAIN), ("rebuilt", REBUILT)):
        run, outputs = chain_once(bench, name, kills)
        print(outcome_line(name, run, outputs), flush=True)
        print("runs: " + ", ".join(run.log), flush=True)
        ok = ok and run.kills == dict(Counter(points(kills))) and same(outputs)
    return ok

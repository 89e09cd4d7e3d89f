"""The sweep: a kill at every fault point in turn, each on a fresh checkpoint, one line per
point."""

from __future__ import annotations

import re

from streaming.operations import faults

from . import compare
from .bench import Bench
from .runs import RETAIN_ALL, SPARK_WRITER, ChaosRun, Step, drain_with_faults

BATCH = -1
"""Stands for the first batch with recommendations in a :data:`SWEEP` entry."""
SWEEP: list[tuple[str, int | None, dict[str, str]]] = [
    *((f"{name}:{when}-rename", None, {})
      for name in faults.SIDE_FILES for when in ("before", "after")),
    ("tables:before-create", None, {}), ("tables:after-create", None, {}),
    ("query:before-start", None, {}),
    ("batch:start", 0, {}), ("stateful", None, {}),
    ("batch:start", BATCH, {}),
    ("delta-rs:before-commit", BATCH, {}), ("delta-rs:after-commit", BATCH, {}),
    ("spark-delta:before-commit", BATCH, SPARK_WRITER),
    ("spark-delta:after-commit", BATCH, SPARK_WRITER),
    ("feed:before", BATCH, {}), ("feed:after", BATCH, {}),
    ("retention:before", BATCH, RETAIN_ALL), ("retention:after", BATCH, RETAIN_ALL),
    ("batch:end", BATCH, {}),
]
"""(point, batch or hit, extra configuration) of the sweep: every point of
streaming.operations.faults.POINTS."""


def sweep_one(bench: Bench, point: str, n: int | None,
              extra: dict[str, str]) -> tuple[ChaosRun, dict]:
    """Kill at ``point`` (in batch or at hit ``n``) on a fresh checkpoint, drain, compare."""
    name = "sweep-" + re.sub(r"[^a-z0-9]+", "-", f"{point}-{n}".lower()).strip("-")
    args, checkpoint = bench.args(name, extra)
    spec = point if n is None else f"{point}@{n}"
    run = drain_with_faults([Step(spec, args)], args, checkpoint, bench.work / f"{name}.log")
    return run, bench.outputs(name)


def outcome_line(label: str, run: ChaosRun, outputs: dict) -> str:
    same = compare.same(outputs)
    parts = ", ".join(f"{k} {o['chaos']}/{o['reference']} ({o['differences']} diff)"
                      for k, o in outputs.items())
    parts += f"; {compare.feed_words(outputs['feed'])}"
    killed = "killed" if run.total else "NOT REACHED"
    verdict = "same" if same and run.total else "DIFFERENT" if not same else "point not reached"
    return f"{label:<36} {killed}, {run.runs} runs, {run.seconds:4.0f}s: {parts}: {verdict}"


def sweep(bench: Bench, points: list[str] | None, parallel: int = 1) -> bool:
    """The sweep, one printed line per point (as each ends); True when every point was reached and
    gave the same outputs. ``parallel`` points run at once (each its own checkpoint, tables and feed
    topic)."""
    from concurrent.futures import ThreadPoolExecutor

    first = bench.first_batch_with_recommendations()
    print(f"{bench.events} events, {bench.batches} batches "
          f"(reference run {bench.reference_s:.0f}s); "
          f"batch points in batch {first}, the first with recommendations", flush=True)
    todo: list[tuple[str, int | None, dict[str, str]]] = []
    # batch:start@0 and @first are one point when the first batch has recommendations
    for p, n, extra in SWEEP:
        entry = (p, first if n == BATCH else n, extra)
        if (not points or p in points) and entry not in todo:
            todo.append(entry)

    def one(entry: tuple[str, int | None, dict[str, str]]) -> str:
        point, n, extra = entry
        label = f"{point}@{n}" if n is not None else point
        try:
            line = outcome_line(label, *sweep_one(bench, point, n, extra))
        except Exception as e:  # a restart that failed: the point's line says so, the others go on
            line = f"{label:<36} FAILED: {str(e)[:300]}"
        print(line, flush=True)
        return line

    with ThreadPoolExecutor(max(1, parallel)) as pool:
        lines = list(pool.map(one, todo))
    return all(line.endswith(": same") for line in lines)

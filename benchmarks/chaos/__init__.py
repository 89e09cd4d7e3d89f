"""Chaos, measured: seeded events processed once without faults and again through SIGKILLs of the
job.

    .venv/bin/python -m benchmarks.chaos [--kills 20] [--seed 11] [--groups 10] [--polls 120]
                                         [--per-trigger 120]
    .venv/bin/python -m benchmarks.chaos --sweep [--points p1,p2] [--groups 4] [--polls 40]
                                         [--per-trigger 100]
    .venv/bin/python -m benchmarks.chaos --chain [--polls 30 --per-trigger 150]

On an embedded one-broker cluster, seeded events (groups whose hot partitions wander, so each gets
lag-skew recommendations, membership changes, malformed records) are written once. Then
``rebalancer run --available-now`` (a child process) drains them: once uninterrupted (the
reference), then on other checkpoints, tables and trigger topics, killed with SIGKILL of its whole
process group (driver, JVM, Python workers) and restarted until it drains:

- ``--kills N`` (random mode): N seeded kills on one checkpoint, the first in the first seconds of
  the new checkpoint (its start-up: lease, layout, tables, app id, floors), then, drawn in turn, at
  a random moment of a run's start-up, at a random moment after its first new committed batch, or at
  a batch fault point of :mod:`streaming.operations.faults` (``REBALANCER_FAULT``) in one of the
  next batches;
- ``--sweep``: every fault point in turn (:data:`SWEEP`), each on a fresh checkpoint: the run is
  killed at the point (start-up points at their first hit, batch points in the first batch with
  recommendations), then restarted until drained; one line per point;
- ``--chain``: every fault point in turn on one checkpoint, most on a job with history
  (:data:`.chain.CHAIN`; ``tests/integration/test_chaos.py`` runs it in ``make test``), then the
  side files rebuilt on a job with history on another (:data:`.chain.REBUILT`, its long form).

Each outcome is compared with the reference column by column: every row of ``recommendations`` and
``rejected_events`` (``batch_id`` included: with the same ``maxOffsetsPerTrigger`` a replayed batch
covers the offsets of the first attempt), and the trigger feed (at-least-once) by
``recommendation_id``: its distinct messages, its duplicates counted, and the latest record per
group its reader keeps (:mod:`.compare`). Progress is read from the checkpoint's ``commits`` folder,
the outcome from the tables (delta-rs: no Spark JVM beside the job's) and the topic, never from a
child's output.

The package: :mod:`.events` (the seeded events), :mod:`.runs` (child runs, their kills and
restarts), :mod:`.compare` (outputs compared), :mod:`.bench` (the reference and the random mode),
:mod:`.sweep` (every fault point in turn), :mod:`.chain` (every fault point on one checkpoint:
the CI form, ``tests/integration/test_chaos.py``), :mod:`.cli` (``python -m benchmarks.chaos``).
"""

from __future__ import annotations

from .bench import Bench, prepare, report, run_chaos
from .chain import CHAIN, HISTORY
from .cli import main
from .compare import compare, feed_words, read_feed, same, table_rows
from .events import STEP, T0, seeded_events
from .runs import (
    RANDOM_POINTS,
    RETAIN_ALL,
    SPARK_WRITER,
    ChaosRun,
    committed,
    drain_with_faults,
    drain_with_kills,
    job_args,
    job_conf,
)
from .sweep import BATCH, SWEEP, outcome_line, sweep, sweep_one

__all__ = ["BATCH", "CHAIN", "HISTORY", "RANDOM_POINTS", "RETAIN_ALL", "SPARK_WRITER", "STEP",
           "SWEEP", "T0", "Bench", "ChaosRun", "committed",
           "compare", "drain_with_faults", "drain_with_kills", "feed_words", "job_args", "job_conf",
           "main", "outcome_line", "prepare", "read_feed", "report", "run_chaos", "same",
           "seeded_events", "sweep", "sweep_one", "table_rows"]

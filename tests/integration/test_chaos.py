"""Chaos, short (the CI part of ``python -m benchmarks.chaos --sweep``): seeded events drained once without
faults, then on another checkpoint through SIGKILLs of the job's process group at named fault points, one
run each, restarted until drained; every column of both tables and the deduplicated trigger feed must come
out the same.

One reference run, in the suite's Spark session, and one chaos checkpoint for all points (each point costs
one job start, not two), chosen to cover start-up and batch I/O in turn: a side file of a new checkpoint
before its rename, the stateful step inside a Python worker, between the Delta commit (delta-rs) and the
feed write, and after ``foreachBatch`` returned but before Spark's commit log (the batch is replayed).
Every point: ``benchmarks.chaos --sweep``."""

from __future__ import annotations

from benchmarks import chaos

GROUPS = 4


def test_killed_at_fault_points_and_restarted_the_job_ends_with_the_same_outputs(cfg, spark, tmp_path):
    bench = chaos.prepare(cfg, tmp_path, seed=11, groups=GROUPS, polls=30, per_trigger=150, spark=spark)  # ~5 batches
    batch = bench.first_batch_with_recommendations()
    specs = ["version_floors.json:before-rename", "stateful", f"delta-rs:after-commit@{batch}", "batch:end@+0"]
    args, checkpoint = bench.args("chaos")
    run = chaos.drain_with_faults(args, checkpoint, tmp_path / "chaos.log", specs)
    outputs = bench.outputs("chaos")
    assert run.kills == {"version_floors.json:before-rename": 1, "stateful": 1, "delta-rs:after-commit": 1,
                         "batch:end": 1}, run.log  # every point reached: the kills hit what they name
    assert run.runs == len(specs) + 1, run.log
    assert outputs["recommendations"]["reference"] >= GROUPS, outputs  # one per group at least: real work killed
    assert outputs["rejected_events"]["reference"] >= GROUPS, outputs
    assert outputs["feed"]["reference"] == outputs["recommendations"]["reference"], outputs
    for name, o in outputs.items():
        assert o["differences"] == 0 and o["chaos"] == o["reference"], (name, o, run.log)

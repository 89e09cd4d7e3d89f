"""Chaos, short (the CI part of ``python -m benchmarks.chaos --sweep``): seeded events drained once
without faults, then on another checkpoint through SIGKILLs of the job's process group at named
fault points, one run each, restarted until drained; every column of both tables and the trigger
feed's distinct messages must come out the same, its duplicates counted and read by the feed's
reader as the same latest record per group.

One reference run, in the suite's Spark session, and one chaos checkpoint for all points (each point
costs one job start, not two), chosen to cover start-up and batch I/O in turn: a side file of a new
checkpoint before its rename, the stateful step inside a Python worker, between the Delta commit
(delta-rs) and the feed write, and after ``foreachBatch`` returned but before Spark's commit log
(the batch is replayed). Every point: ``benchmarks.chaos --sweep``."""

from __future__ import annotations

from benchmarks import chaos

GROUPS = 4


def test_killed_at_fault_points_and_restarted_the_job_ends_with_the_same_outputs(
        cfg, spark, tmp_path):
    # ~5 batches
    bench = chaos.prepare(cfg, tmp_path, seed=11, groups=GROUPS, polls=30, per_trigger=150,
                          spark=spark)
    batch = bench.first_batch_with_recommendations()
    specs = ["version_floors.json:before-rename", "stateful", f"delta-rs:after-commit@{batch}",
             "batch:end@+0"]
    args, checkpoint = bench.args("chaos")
    run = chaos.drain_with_faults(args, checkpoint, tmp_path / "chaos.log", specs)
    outputs = bench.outputs("chaos")
    # every point reached: the kills hit what they name
    assert run.kills == {"version_floors.json:before-rename": 1, "stateful": 1,
                         "delta-rs:after-commit": 1, "batch:end": 1}, run.log
    assert run.runs == len(specs) + 1, run.log
    # one per group at least: real work killed
    assert outputs["recommendations"]["reference"] >= GROUPS, outputs
    assert outputs["rejected_events"]["reference"] >= GROUPS, outputs
    assert outputs["feed"]["reference"] == outputs["recommendations"]["reference"], outputs
    for name, o in outputs.items():
        assert o["differences"] == 0 and o["chaos"] == o["reference"], (name, o, run.log)
    # the feed is at-least-once: duplicates are counted, not removed. Only a batch replayed after
    # its feed write publishes again (batch:end here), each duplicate is that same message
    # (compare.distinct raises otherwise), and the feed's reader keeps the same latest record per
    # group as without faults
    feed = outputs["feed"]
    assert feed["duplicates"]["reference"] == 0 \
        and feed["duplicates"]["chaos"] <= feed["reference"], feed
    assert feed["consumed_differences"] == 0 \
        and feed["consumed_groups"] == {"reference": GROUPS, "chaos": GROUPS}, feed
    print(f"feed: {chaos.feed_words(feed)}")

"""Chaos, short: seeded events drained once without faults and once through SIGKILLs of the job process
(at random moments and inside foreachBatch between the Delta commit and the feed write), restarted until
drained; every column of both tables and the deduplicated trigger feed must come out the same.

The long run (20 kills) is ``python -m benchmarks.chaos``; this one shares its code with fewer kills."""

from __future__ import annotations

from benchmarks import chaos

KILLS = 3  # seed 11 draws delta, timer, delta: both kinds


def test_sigkilled_job_restarted_until_drained_ends_with_the_same_outputs(spark, cfg, tmp_path):
    result = chaos.run_chaos(lambda: spark, cfg, tmp_path, kills=KILLS, seed=11, groups=6, polls=40,
                             per_trigger=100)
    run = result["run"]
    assert run.kills == KILLS, (run.log, result)
    assert run.delta_kills >= 1 and run.timer_kills >= 1, run.log
    outputs = result["outputs"]
    assert outputs["recommendations"]["reference"] >= 6, outputs  # one per group at least: the kills hit real work
    assert outputs["rejected_events"]["reference"] >= 6, outputs
    assert outputs["feed"]["reference"] == outputs["recommendations"]["reference"], outputs
    for name, o in outputs.items():
        assert o["differences"] == 0 and o["chaos"] == o["reference"], (name, o, run.log)

"""Chaos in CI: a kill at every fault point of :mod:`streaming.operations.faults`, on a job with
history. Seeded events are drained once without faults (the reference, in the suite's Spark
session), then on another checkpoint through SIGKILLs of the job's process group, one at each point
in turn (:data:`benchmarks.chaos.chain.CHAIN`: the side files of a new checkpoint at its first
starts, then, with three batches committed, the lease, the tables, the query's start, every step of
a batch, Spark's Delta writer), each followed by a restart, until it drains. Every column of both
tables and the trigger feed's distinct messages must come out the same; the feed's duplicates are
counted, each the same message, and its reader keeps the same latest record per group. In
``make test-long``, the same of the side files rebuilt on a job with history
(:data:`benchmarks.chaos.chain.REBUILT`).

Each point on a fresh checkpoint of its own: ``python -m benchmarks.chaos --sweep``."""

from __future__ import annotations

from collections import Counter

import pytest

from benchmarks import chaos
from benchmarks.chaos import chain

GROUPS = 4


# 23 job starts, about 6 minutes in the suite here: a machine half as fast must not meet the suite's
# 15-minute limit per test (drain_with_faults bounds the runs at 30)
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("kills", [
    pytest.param(chain.CHAIN, id="every-point"),
    pytest.param(chain.REBUILT, id="rebuilt-side-files", marks=pytest.mark.long)])
def test_killed_at_every_fault_point_and_restarted_the_job_ends_with_the_same_outputs(
        cfg, spark, tmp_path, kills):
    bench = chaos.prepare(cfg, tmp_path, seed=11, groups=GROUPS, polls=30, per_trigger=150,
                          spark=spark)
    # the reference: batches past the chain's last (HISTORY + 1), with recommendations in both
    assert bench.batches >= chain.HISTORY + 2, bench.batches
    run, outputs = chain.chain_once(bench, kills=kills)
    print("runs: " + ", ".join(run.log))  # each run's seconds, in the report with -rP
    # every kill hit what it names
    assert run.kills == dict(Counter(chain.points(kills))), run.log
    assert run.runs == len(kills) + 1, run.log
    # one per group at least: real work killed
    assert outputs["recommendations"]["reference"] >= GROUPS, outputs
    assert outputs["rejected_events"]["reference"] >= GROUPS, outputs
    assert outputs["feed"]["reference"] == outputs["recommendations"]["reference"], outputs
    for name, o in outputs.items():
        assert o["differences"] == 0 and o["chaos"] == o["reference"], (name, o, run.log)
    # the feed is at-least-once: duplicates are counted, not removed. Only a batch replayed after
    # its feed write publishes again (after feed:after and batch:end: none in REBUILT), each
    # duplicate is that same message (compare.distinct raises otherwise), and the feed's reader
    # keeps the same latest record per group as without faults
    feed = outputs["feed"]
    assert feed["duplicates"]["reference"] == 0, feed
    assert feed["duplicates"]["chaos"] <= feed["reference"], feed
    assert (feed["duplicates"]["chaos"] > 0) == chain.republishes(kills), feed
    assert feed["consumed_differences"] == 0 \
        and feed["consumed_groups"] == {"reference": GROUPS, "chaos": GROUPS}, feed
    print(f"feed: {chaos.feed_words(feed)}")

"""The closed-loop benchmark end to end, in two sizes:

- ``make test``: the benchmark's own run (:func:`benchmarks.loop.run.run_workload`, every strategy
  side by side, the oracle, the report, the JSON and the plots) on the suite's shared cluster and
  Spark session, with the job and the feed started as the benchmark starts them
  (:class:`benchmarks.loop.run.JobAndFeed`) on topics of this test's own, and the quick workloads
  cut short;
- ``make test-long``: ``python -m benchmarks.loop --quick`` as a user runs it: its own three-broker
  cluster, Spark, the job and the feed, the quick workloads at their length.

Checked: every figure is there for every strategy and workload (no timing or lag value is asserted:
those are what the benchmark measures)."""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from benchmarks.loop import report
from benchmarks.loop.metrics import FIGURES
from benchmarks.loop.run import JobAndFeed, run_workload
from benchmarks.loop.workloads import QUICK, quick_suite
from streaming.dev.workload.strategies import STRATEGIES

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SHORT_S = {"zipf": 30.0, "balanced": 12.0}
"""The quick workloads' seconds in the suite's form (QUICK has their length in ``--quick``)."""


def test_the_loop_benchmark_on_the_shared_cluster_writes_every_figure(cfg, spark, kafka_cluster,
                                                                      tmp_path):
    assert set(SHORT_S) == set(QUICK)
    tag = uuid.uuid4().hex[:6]
    own = dataclasses.replace(cfg, kafka=dataclasses.replace(
        cfg.kafka, lag_topic=f"bench-lag.{tag}", metadata_topic=f"bench-meta.{tag}",
        trigger_topic=f"bench-triggers.{tag}"))
    workloads = {name: w.scaled(SHORT_S[name]) for name, w in quick_suite().items()}
    job = JobAndFeed(spark, own, tmp_path, [n.node_id for n in kafka_cluster.nodes])
    started = time.monotonic()
    try:
        env = job.open()
        runs = {name: [run_workload(env, w, STRATEGIES, tag=f"{tag}{i}")] for i, (name, w) in
                enumerate(workloads.items())}
        assert env.query.exception() is None
    finally:
        job.close()
    meta = report.notes(list(STRATEGIES), 1, time.monotonic() - started, [])
    report.write(tmp_path, "loop-quick", "test", workloads, runs, meta)
    _assert_every_figure(tmp_path)


@pytest.mark.long
def test_quick_loop_benchmark_writes_every_figure(tmp_path):
    done = subprocess.run([sys.executable, "-m", "benchmarks.loop", "--quick",
                           "--out", str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    _assert_every_figure(tmp_path)


def _assert_every_figure(out: Path) -> None:
    result = json.loads((out / "loop-quick.json").read_text())
    table = (out / "loop-quick.md").read_text()
    assert set(result["aggregate"]) == set(QUICK)
    for name in QUICK:
        agg = result["aggregate"][name]
        assert set(agg["strategies"]) == set(STRATEGIES)
        for strategy, figures in agg["strategies"].items():
            missing = [f for f in FIGURES if f not in figures]
            assert not missing, (name, strategy, missing)
            for f in ("lag_p50", "lag_p95", "lag_max", "rebalances", "moved", "cross_rack_ps"):
                assert figures[f] is not None and not math.isnan(figures[f]) and figures[f] >= 0, \
                    (name, strategy, f)
            # a drain time is a number of seconds, or None for a backlog that never drained
            assert figures["drain_s"] is None or figures["drain_s"] >= 0
            run = result["runs"][name][0]
            assert run["strategies"][strategy]["samples"] > 0, (name, strategy)
            assert run["curves"][strategy], (name, strategy)
        # our group's lag per consumer: every sample names each consumer by its index, and its
        # largest is the curve's max lag at that sample
        ours = result["runs"][name][0]
        by_t = dict(ours["curves"]["rebalancer"])
        assert any(lags for _, lags in ours["consumer_lag"]), ours["consumer_lag"][:3]
        assert all(all(k.isdigit() for k in lags) and max(lags.values(), default=0) == by_t[t]
                   for t, lags in ours["consumer_lag"]), ours["consumer_lag"][:3]
        # what each recommendation gave each consumer, by index, beside the capacity it used
        for rec in ours["recommendations"]:
            assert rec["given"] and all(
                k.isdigit() and g["partitions"] >= 0 and g["rate"] >= 0
                and (g["capacity"] is None or g["capacity"] > 0)
                for k, g in rec["given"].items()), rec
        assert set(agg["ratios"]) >= {"lag_p95", "cross_rack_ps"}, agg["ratios"]
        assert (out / f"loop-quick-{name}.png").stat().st_size > 0
        assert f"## {name}:" in table
        for strategy in STRATEGIES:
            assert f"| {strategy} |" in table
    assert "| rebalancer / best Kafka |" in table and "| rebalancer / oracle |" in table
    for name in QUICK:
        assert set(result["aggregate"][name]["oracle_ratios"]) >= {"lag_p95"}
        # proven optimal at these sizes
        assert result["runs"][name][0]["oracle"][0]["method"] == "milp"

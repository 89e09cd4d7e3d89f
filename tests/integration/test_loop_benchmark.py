"""``python -m benchmarks.loop --quick`` end to end: it starts its own three-broker cluster, Spark, the job
and the feed, runs the quick workloads with every strategy side by side, and writes the table, the JSON
and one plot per workload. Checked: every figure is there for every strategy and workload (no timing or
lag value is asserted: those are what the benchmark measures)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.loop.metrics import FIGURES
from benchmarks.loop.workloads import QUICK
from streaming.dev.workload.strategies import STRATEGIES

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def test_quick_loop_benchmark_writes_every_figure(tmp_path):
    done = subprocess.run([sys.executable, "-m", "benchmarks.loop", "--quick", "--out", str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    result = json.loads((tmp_path / "loop-quick.json").read_text())
    table = (tmp_path / "loop-quick.md").read_text()
    assert set(result["aggregate"]) == set(QUICK)
    for name in QUICK:
        agg = result["aggregate"][name]
        assert set(agg["strategies"]) == set(STRATEGIES)
        for strategy, figures in agg["strategies"].items():
            missing = [f for f in FIGURES if f not in figures]
            assert not missing, (name, strategy, missing)
            for f in ("lag_p50", "lag_p95", "lag_max", "rebalances", "moved", "cross_rack_ps"):
                assert figures[f] is not None and not math.isnan(figures[f]) and figures[f] >= 0, (name, strategy, f)
            # a drain time is a number of seconds, or None for a backlog that never drained
            assert figures["drain_s"] is None or figures["drain_s"] >= 0
            run = result["runs"][name][0]
            assert run["strategies"][strategy]["samples"] > 0, (name, strategy)
            assert run["curves"][strategy], (name, strategy)
        assert set(agg["ratios"]) >= {"lag_p95", "cross_rack_ps"}, agg["ratios"]
        assert (tmp_path / f"loop-quick-{name}.png").stat().st_size > 0
        assert f"## {name}:" in table
        for strategy in STRATEGIES:
            assert f"| {strategy} |" in table
    assert "| rebalancer / best Kafka |" in table and "| rebalancer / oracle |" in table
    for name in QUICK:
        assert set(result["aggregate"][name]["oracle_ratios"]) >= {"lag_p95"}
        assert result["runs"][name][0]["oracle"][0]["method"] == "milp"  # proven optimal at these sizes

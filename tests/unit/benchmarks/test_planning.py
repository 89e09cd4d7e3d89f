"""benchmarks.planning reads Spark's RuleExecutor dump: rule, time, and whether it changed the
plan, in the dump's order."""

from __future__ import annotations

from benchmarks import planning

DUMP = """=== Metrics of Analyzer/Optimizer Rules ===
Total number of runs: 2226
Total time: 1.617320211 seconds

Rule                                                      Effective Time / Total Time  Runs

org.apache.spark.sql.catalyst.optimizer.CollapseProject   102843311 / 233967932           7 / 35
org.apache.spark.sql.delta.stats.PrepareDeltaScan         0 / 88332012                    0 / 7
org.apache.spark.sql.catalyst.optimizer.ConstantFolding   22134882 / 61486911             7 / 42
"""


def test_top_rules_name_time_and_effect_in_order():
    assert planning.top_rules(DUMP, 2) == ["CollapseProject 234 ms (changed the plan)",
                                           "PrepareDeltaScan 88 ms (no effect)"]
    assert len(planning.top_rules(DUMP, 10)) == 3

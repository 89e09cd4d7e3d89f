"""What a micro-batch pays before it reads a record: Spark plans the query again for every batch
(analysis, optimisation, physical planning over the whole plan), and validation's plan is most of
the job's. This plans :func:`streaming.job.validate.parse` over a small static source as a batch
would, ``--rounds`` times, and prints the median optimisation and physical planning ms of the
rounds after the first ``--warm``, the plan's expression nodes (a count: the same on any machine)
and the optimiser rules that took the most time.

    python -m benchmarks.planning [--rounds 12] [--warm 3] [--rules 8]

The session is the job's own (its extensions add optimiser rules: Delta's), on local[1]. Compare
two trees by alternating their runs, each from its own folder (``cd <tree> &&
PYTHONPATH=<tree> python -m benchmarks.planning``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import time
from typing import Any

from benchmarks.validation import LAG_TOPIC, NOW, RAW_SCHEMA, messages
from streaming import config, jvm
from streaming.job import validate
from streaming.spark_session import get_spark


def expression_nodes(plan: Any) -> int:
    """The expression nodes of every operator of a (py4j) logical plan."""
    total, stack = 0, [plan]
    while stack:
        node = stack.pop()
        exprs = node.expressions()
        total += sum(exprs.apply(i).treeString().count("\n") for i in range(exprs.size()))
        children = node.children()
        stack.extend(children.apply(i) for i in range(children.size()))
    return total


def measure(spark: Any, rounds: int, warm: int) -> dict[str, Any]:
    """Per round, a new QueryExecution of validation's analysed plan: its optimisation and physical
    planning ms; the rules' time summed over the rounds after ``warm``."""
    stamp = dt.datetime.fromtimestamp(NOW / 1000, tz=dt.UTC)
    rows = [(k, v, LAG_TOPIC, 0, i, stamp, 0) for i, (k, v) in enumerate(messages("lag", 10))]
    df = validate.parse(spark.createDataFrame(rows, RAW_SCHEMA), 4 << 20, 600_000, LAG_TOPIC)
    execution = df._jdf.queryExecution()
    plan, mode = execution.analyzed(), execution.mode()
    rules = spark.sparkContext._jvm.org.apache.spark.sql.catalyst.rules.RuleExecutor
    optimise, physical = [], []
    for r in range(rounds):
        if r == warm:
            rules.resetMetrics()
        qe = spark._jsparkSession.sessionState().executePlan(plan, mode)
        qe.analyzed()
        t0 = time.perf_counter()
        qe.optimizedPlan()
        t1 = time.perf_counter()
        qe.executedPlan()
        optimise.append(1000 * (t1 - t0))
        physical.append(1000 * (time.perf_counter() - t1))
    return {"optimise": optimise[warm:], "physical": physical[warm:],
            "analysed_nodes": expression_nodes(plan),
            "optimised_nodes": expression_nodes(execution.optimizedPlan()),
            "rules": rules.dumpTimeSpent()}


def top_rules(dump: str, n: int) -> list[str]:
    """The ``n`` rules that took the most time in RuleExecutor's dump (its rows are sorted)."""
    rows = [line.split() for line in dump.splitlines() if line.startswith("org.apache")]
    out = []
    for name, effective_ns, _, total_ns, *_ in rows[:n]:
        effect = "no effect" if effective_ns == "0" else "changed the plan"
        out.append(f"{name.rsplit('.', 1)[-1]} {int(total_ns) / 1e6:,.0f} ms ({effect})")
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="benchmarks.planning", description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--warm", type=int, default=3)
    ap.add_argument("--rules", type=int, default=8)
    a = ap.parse_args(argv)
    jvm.resolve()
    spark = get_spark(config.load(overrides={"spark.master": "local[1]",
                                             "spark.ui.enabled": "false"}))
    m = measure(spark, max(a.rounds, a.warm + 1), a.warm)
    spark.stop()
    print(f"validation's plan: {m['analysed_nodes']:,} expression nodes analysed, "
          f"{m['optimised_nodes']:,} optimised; per batch, median of {len(m['optimise'])} rounds: "
          f"optimise {statistics.median(m['optimise']):.0f} ms, physical planning "
          f"{statistics.median(m['physical']):.0f} ms")
    print(f"rules' time over those rounds: {'; '.join(top_rules(m['rules'], a.rules))}")


if __name__ == "__main__":
    main()

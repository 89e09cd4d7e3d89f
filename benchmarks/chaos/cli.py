"""The command line of ``python -m benchmarks.chaos``: options, the embedded cluster, the chosen
mode."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import benchmarks.chaos as package

from .bench import prepare, report, run_chaos
from .chain import run_chain
from .compare import same
from .sweep import sweep


def main(argv: list[str] | None = None) -> int:
    """Parse the options, start a one-broker cluster, run the reference, then the sweep or the
    random kills."""
    description = (package.__doc__ or "").split("\n\n")[0]  # the first paragraph, over two lines
    ap = argparse.ArgumentParser(prog="benchmarks.chaos", description=description)
    ap.add_argument("--sweep", action="store_true", help="kill at every fault point in turn")
    ap.add_argument("--chain", action="store_true",
                    help="kill at every fault point in turn on one checkpoint (the CI form)")
    ap.add_argument("--points", help="with --sweep: only these points (comma-separated)")
    ap.add_argument("--parallel", type=int, default=1, help="with --sweep: points run at once")
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--groups", type=int, default=None, help="default 10 (4 with --sweep)")
    ap.add_argument("--polls", type=int, default=None, help="default 120 (40 with --sweep)")
    ap.add_argument("--per-trigger", type=int, default=None,
                    help="maxOffsetsPerTrigger (many small batches); "
                         "default 120 (100 with --sweep)")
    a = ap.parse_args(argv)
    few = a.sweep or a.chain
    groups, polls, per_trigger = (a.groups or (4 if few else 10), a.polls or (40 if few else 120),
                                  a.per_trigger or (100 if few else 120))

    from streaming import config, jvm
    from streaming.embedded.cluster import KafkaCluster

    jvm.resolve()
    work = Path(tempfile.mkdtemp(prefix="rebalancer-chaos-"))
    with KafkaCluster(brokers=1, base_dir=work / "kafka") as cluster:
        cfg = config.load(overrides={"kafka.bootstrap_servers": cluster.bootstrap_servers,
                                     "spark.master": "local[1]", "spark.ui.enabled": "false"})
        bench = prepare(cfg, work, a.seed, groups, polls, per_trigger)
        if a.sweep:
            ok = sweep(bench, a.points.split(",") if a.points else None, a.parallel)
        elif a.chain:
            ok = run_chain(bench)
        else:
            result = run_chaos(bench, a.kills, a.seed)
            print(report(bench, result), flush=True)
            ok = same(result["outputs"]) and result["run"].total >= a.kills
    print(f"(work folder {work})", flush=True)
    return 0 if ok else 1

"""The bench: seeded events on their own topics, the reference run, the random-kill mode and its
report."""

from __future__ import annotations

import dataclasses
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import SparkSession

from streaming.config import Config
from streaming.contracts.tables import RECOMMENDATIONS
from streaming.dev.produce import produce

from .compare import compare, feed_words
from .events import seeded_events
from .runs import ChaosRun, _env, _run_child, committed, drain_with_kills, job_args, job_conf


@dataclass
class Bench:
    """The seeded events on their topics and the reference run's outputs; chaos runs beside it."""

    cfg: Config
    work: Path
    tag: str
    per_trigger: int
    events: int = 0
    reference_s: float = 0.0

    def args(self, name: str, extra: dict[str, str] | None = None) -> tuple[list[str], Path]:
        checkpoint = self.work / f"{name}-ck"
        return job_args(self.cfg, str(self.work / name), str(checkpoint), f"{self.tag}.{name}",
                        self.per_trigger, extra), checkpoint

    def outputs(self, name: str) -> dict:
        return compare(self.cfg, str(self.work / "ref"), f"{self.tag}.ref", str(self.work / name),
                       f"{self.tag}.{name}")

    @property
    def batches(self) -> int:
        return committed(self.work / "ref-ck")

    def first_batch_with_recommendations(self) -> int:
        from deltalake import DeltaTable

        table = DeltaTable(str(self.work / "ref" / RECOMMENDATIONS))
        ids = table.to_pyarrow_table(columns=["batch_id"])
        return min(ids.column("batch_id").to_pylist())


def prepare(cfg: Config, work: Path, seed: int, groups: int, polls: int, per_trigger: int,
            spark: SparkSession | None = None) -> Bench:
    """Produce the seeded events to topics of their own and run the reference: as a child process
    like the chaos runs, or with ``spark`` in that session (a test suite's own: one JVM start less;
    the job is deterministic, so the same settings give the same outputs wherever it runs)."""
    tag = f"chaos{seed}-{uuid.uuid4().hex[:6]}"
    cfg = dataclasses.replace(cfg, kafka=dataclasses.replace(
        cfg.kafka, lag_topic=f"{tag}.lag", metadata_topic=f"{tag}.meta",
        trigger_topic=f"{tag}.ref"))
    events, bad = seeded_events(seed, groups, polls)
    produce(cfg, events, bad)
    bench = Bench(cfg, work, tag, per_trigger, len(events) + len(bad))
    t = time.monotonic()
    args, checkpoint = bench.args("ref")
    if spark is not None:
        _reference_in(spark, bench, checkpoint)
    elif _run_child(args, work / "reference.log", _env(None), None, checkpoint, 1800) != 0:
        raise RuntimeError(f"reference run failed; see {work / 'reference.log'}")
    bench.reference_s = time.monotonic() - t
    return bench


def _reference_in(spark: SparkSession, bench: Bench, checkpoint: Path) -> None:
    """The reference as ``rebalancer run --available-now`` runs it
    (:func:`streaming.job.query.run`), with the same settings but Spark's, which are the
    session's."""
    from streaming import config
    from streaming.job import query

    conf = job_conf(bench.cfg, str(bench.work / "ref"), f"{bench.tag}.ref", bench.per_trigger)
    cfg = config.load(overrides={k: v for k, v in conf.items() if not k.startswith("spark.")})
    query.run(spark, cfg, available_now=True, checkpoint=str(checkpoint))


def run_chaos(bench: Bench, kills: int, seed: int) -> dict:
    """Random mode: ``kills`` seeded kills on one checkpoint, then the comparison."""
    args, checkpoint = bench.args("chaos")
    run = drain_with_kills(args, checkpoint, bench.work / "chaos.log", kills, seed,
                           batches=bench.batches)
    return {"run": run, "outputs": bench.outputs("chaos")}


def report(bench: Bench, r: dict) -> str:
    run: ChaosRun = r["run"]
    kinds = ", ".join(f"{n} {k}" for k, n in sorted(run.kills.items()))
    lines = [f"{bench.events} events, {bench.batches} batches (reference run "
             f"{bench.reference_s:.0f}s)",
             f"chaos: {run.total} SIGKILLs ({kinds}), {run.runs} runs, {run.runs - 1} restarts, "
             f"{run.seconds:.0f}s",
             f"runs: {' '.join(run.log)}"]
    for name, o in r["outputs"].items():
        lines.append(f"{name}: {o['reference']} rows (reference) vs {o['chaos']} (chaos), "
                     f"{o['differences']} differences")
    lines.append(f"feed: {feed_words(r['outputs']['feed'])}")
    return "\n".join(lines)

"""Chaos, measured: the same seeded events processed once without faults and once with SIGKILLs of the job.

    .venv/bin/python -m benchmarks.chaos [--kills 20] [--seed 11] [--groups 10] [--polls 120] [--per-trigger 120]

On an embedded one-broker cluster, seeded events (groups whose hot partitions wander, so each gets lag-skew
recommendations, membership changes, malformed records) are written once. Then ``rebalancer run
--available-now`` (a child process) drains them:

1. reference: one uninterrupted run into its own tables, checkpoint and trigger topic;
2. chaos: runs on another checkpoint, each killed with SIGKILL (the whole process group: driver, JVM,
   Python workers) until ``--kills`` kills happened, then one last run to the end. Kills alternate, seeded:
   at a random moment after the run's first new committed batch, or inside ``foreachBatch`` after the Delta
   commit and before the trigger feed write (``REBALANCER_FAULT_KILL_AFTER_DELTA``).

Then every column of ``recommendations`` and ``rejected_events`` and the trigger feed (deduplicated by
``recommendation_id``: at-least-once) of the two are compared. ``batch_id`` is compared too: with the same
``maxOffsetsPerTrigger`` a replayed batch covers the offsets of the first attempt, so batch boundaries and
ids do not move. Progress is read from the checkpoint's ``commits`` folder and the outcome from the tables
and the topic, never from a child's output.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streaming.config import Config
from streaming.contracts import events as ev
from streaming.contracts.tables import RECOMMENDATIONS, REJECTED
from streaming.dev.produce import produce
from streaming.job.sinks import FAULT_KILL_AFTER_DELTA

T0 = 1_763_700_000_000
STEP = 10_000


def seeded_events(seed: int, groups: int, polls: int) -> tuple[list[dict], list[tuple[bytes, bytes]]]:
    """Lag polls with wandering hot partitions, a member joining midway, and malformed records."""
    rng = random.Random(seed)
    out: list[dict] = []
    for g in range(groups):
        name = f"app-{g}"
        members = [ev.member_entry(f"C{i}", ["t0"], [("t0", p) for p in parts], client_id=f"client-C{i}",
                                   host="/127.0.0.1") for i, parts in enumerate(([0, 1, 2], [3, 4, 5]))]
        out.append(ev.members_event(T0, name, 1, "range", members))
        join_at = rng.randrange(polls // 4, 3 * polls // 4)
        hot = {rng.randrange(6), rng.randrange(6)}
        for i in range(polls):
            ts = T0 + i * STEP
            if i % 10 == 0:
                hot = {rng.randrange(6), rng.randrange(6)}
            if i == join_at:
                joined = [*members, ev.member_entry("C2", ["t0"], [], client_id="client-C2", host="/127.0.0.1")]
                out.append(ev.members_event(ts, name, 2, "range", joined))
            for p in range(6):
                lag = rng.randint(6000, 9000) if p in hot else rng.randint(100, 300)
                committed = 1_000_000 + ts // 100
                out.append(ev.lag_event(ts, name, "t0", p, committed, committed + lag))
    bad = [(b"bad", f"not json {seed}-{i}".encode()) for i in range(max(3, groups))]
    return out, bad


def job_args(cfg: Config, tables: str, checkpoint: str, trigger_topic: str, per_trigger: int) -> list[str]:
    conf = {
        "kafka.bootstrap_servers": cfg.kafka.bootstrap_servers, "kafka.lag_topic": cfg.kafka.lag_topic,
        "kafka.metadata_topic": cfg.kafka.metadata_topic, "kafka.trigger_topic": trigger_topic,
        "paths.tables": tables, "job.max_offsets_per_trigger": str(per_trigger), "job.query_name": "chaos",
        "job.watermark_delay": "2 minutes", "policy.cooldown_s": "60",
        "policy.mode": "auto",  # the feed is compared with the table: every recommendation must be published
        "spark.master": "local[2]", "spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false",
    }
    args = [sys.executable, "-m", "streaming.cli", "run", "--available-now", "--checkpoint", checkpoint]
    for k, v in conf.items():
        args += ["--conf", f"{k}={v}"]
    return args


def committed(checkpoint: Path) -> int:
    """Id of the next batch to commit: one more than the highest in the checkpoint's commits folder (old
    entries are purged, so the files are not counted)."""
    folder = checkpoint / "commits"
    ids = [int(f.name) for f in folder.iterdir() if f.name.isdigit()] if folder.exists() else []
    return max(ids) + 1 if ids else 0


@dataclass
class ChaosRun:
    timer_kills: int = 0
    delta_kills: int = 0
    runs: int = 0
    log: list[str] = field(default_factory=list)

    @property
    def kills(self) -> int:
        return self.timer_kills + self.delta_kills


def _run_child(args: list[str], log_file: Path, env: dict[str, str], kill_after_s: float | None,
               checkpoint: Path, timeout_s: float) -> int:
    """Run one job process; with ``kill_after_s``, SIGKILL its group that long after its first new batch."""
    with open(log_file, "ab") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + timeout_s
        if kill_after_s is not None:
            start = committed(checkpoint)
            while proc.poll() is None and committed(checkpoint) <= start and time.monotonic() < deadline:
                time.sleep(0.1)
            if proc.poll() is None:
                time.sleep(kill_after_s)
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(max(1.0, deadline - time.monotonic()))
    finally:
        # whatever is left of the group (the JVM after the driver killed itself) goes too
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.wait(30)
    return proc.returncode


def drain_with_kills(args: list[str], checkpoint: Path, log_file: Path, kills: int, seed: int,
                     timeout_s: float = 3600) -> ChaosRun:
    """Runs of ``args`` on ``checkpoint`` killed ``kills`` times (seeded), then one run to the end."""
    rng = random.Random(seed)
    run = ChaosRun()
    deadline = time.monotonic() + timeout_s
    while True:
        assert time.monotonic() < deadline, f"chaos did not drain in {timeout_s:.0f}s ({run.log})"
        env = dict(os.environ)
        env.pop(FAULT_KILL_AFTER_DELTA, None)
        kill_after = None
        kind = "clean"
        if run.kills < kills:
            if rng.random() < 0.5:
                kind = "delta"
                # the batch after the last committed one is replayed first; kill in it or one of the next two
                env[FAULT_KILL_AFTER_DELTA] = str(committed(checkpoint) + rng.randrange(3))
            else:
                kind = "timer"
                kill_after = rng.uniform(0.0, 3.0)
        run.runs += 1
        rc = _run_child(args, log_file, env, kill_after, checkpoint, deadline - time.monotonic())
        run.log.append(f"{kind}:{rc}")
        if rc == -signal.SIGKILL:
            if kind == "delta":
                run.delta_kills += 1
            else:
                run.timer_kills += 1
            continue
        if rc != 0:
            raise RuntimeError(f"job run failed with exit status {rc}; see {log_file}")
        # exit 0: the run drained the topics (if kills are still due, it drained before they came and
        # nothing is left to kill in: the report shows the kills that happened)
        return run


def read_feed(cfg: Config, topic: str) -> dict[str, str]:
    """The trigger feed, deduplicated by recommendation_id (id -> canonical JSON); raises on two different
    messages under one id."""
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(topic, bootstrap_servers=cfg.kafka.bootstrap_servers, auto_offset_reset="earliest",
                             consumer_timeout_ms=5000, group_id=None)
    out: dict[str, str] = {}
    try:
        for m in consumer:
            value = json.loads(m.value)
            canonical = json.dumps(value, sort_keys=True)
            if out.setdefault(value["recommendation_id"], canonical) != canonical:
                raise AssertionError(f"two different feed messages for {value['recommendation_id']}")
    finally:
        consumer.close()
    return out


def table_rows(spark, path: str) -> list[str]:
    """Every row of the Delta table, every column, as sorted canonical JSON."""
    return sorted(json.dumps(r.asDict(recursive=True), sort_keys=True, default=str)
                  for r in spark.read.format("delta").load(path).collect())


def compare(spark, cfg: Config, ref_tables: str, ref_topic: str, chaos_tables: str, chaos_topic: str) -> dict:
    """Rows compared and differences (rows in one run and not in the other), per output."""
    out = {}
    for name in (RECOMMENDATIONS, REJECTED):
        a, b = table_rows(spark, f"{ref_tables}/{name}"), table_rows(spark, f"{chaos_tables}/{name}")
        out[name] = {"reference": len(a), "chaos": len(b), "differences": _diff(a, b)}
    fa, fb = read_feed(cfg, ref_topic), read_feed(cfg, chaos_topic)
    out["feed"] = {"reference": len(fa), "chaos": len(fb),
                   "differences": _diff(sorted(fa.values()), sorted(fb.values()))}
    return out


def _diff(a: list[str], b: list[str]) -> int:
    from collections import Counter

    ca, cb = Counter(a), Counter(b)
    return sum(((ca - cb) + (cb - ca)).values())


def run_chaos(session: Callable[[], Any], cfg: Config, work: Path, kills: int, seed: int, groups: int,
              polls: int, per_trigger: int) -> dict:
    """Everything but the cluster: events, reference run, chaos runs, then the comparison on ``session()``
    (a SparkSession, asked for only when the job's runs are over)."""
    tag = f"chaos{seed}-{uuid.uuid4().hex[:6]}"
    cfg = dataclasses.replace(cfg, kafka=dataclasses.replace(
        cfg.kafka, lag_topic=f"{tag}.lag", metadata_topic=f"{tag}.meta", trigger_topic=f"{tag}.ref"))
    events, bad = seeded_events(seed, groups, polls)
    produce(cfg, events, bad)
    ref_tables, chaos_tables = str(work / "ref"), str(work / "chaos")
    t = time.monotonic()
    rc = _run_child(job_args(cfg, ref_tables, str(work / "ref-ck"), f"{tag}.ref", per_trigger),
                    work / "reference.log", dict(os.environ), None, work / "ref-ck", 1800)
    if rc != 0:
        raise RuntimeError(f"reference run failed ({rc}); see {work / 'reference.log'}")
    reference_s = time.monotonic() - t
    t = time.monotonic()
    run = drain_with_kills(job_args(cfg, chaos_tables, str(work / "chaos-ck"), f"{tag}.chaos", per_trigger),
                           work / "chaos-ck", work / "chaos.log", kills, seed)
    chaos_s = time.monotonic() - t
    result = compare(session(), cfg, ref_tables, f"{tag}.ref", chaos_tables, f"{tag}.chaos")
    return {"events": len(events) + len(bad), "batches": committed(work / "ref-ck"), "reference_s": reference_s,
            "chaos_s": chaos_s, "run": run, "outputs": result}


def report(r: dict) -> str:
    run: ChaosRun = r["run"]
    lines = [f"{r['events']} events, {r['batches']} batches (reference run {r['reference_s']:.0f}s)",
             f"chaos: {run.kills} SIGKILLs ({run.timer_kills} at random moments, {run.delta_kills} after the Delta "
             f"commit before the feed), {run.runs} runs, {run.runs - 1} restarts, {r['chaos_s']:.0f}s"]
    for name, o in r["outputs"].items():
        lines.append(f"{name}: {o['reference']} rows (reference) vs {o['chaos']} (chaos), "
                     f"{o['differences']} differences")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="benchmarks.chaos", description=__doc__.split("\n")[0])
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--groups", type=int, default=10)
    ap.add_argument("--polls", type=int, default=120)
    ap.add_argument("--per-trigger", type=int, default=120, help="maxOffsetsPerTrigger (many small batches)")
    a = ap.parse_args(argv)

    from streaming import config, jvm
    from streaming.embedded.cluster import KafkaCluster
    from streaming.spark_session import get_spark

    jvm.resolve()
    work = Path(tempfile.mkdtemp(prefix="rebalancer-chaos-"))
    with KafkaCluster(brokers=1, base_dir=work / "kafka") as cluster:
        cfg = config.load(overrides={"kafka.bootstrap_servers": cluster.bootstrap_servers,
                                     "spark.master": "local[1]", "spark.ui.enabled": "false"})
        sessions: list = []

        def session():  # started once the job's runs are over: one Spark JVM at a time
            sessions.append(sessions[0] if sessions else get_spark(cfg))
            return sessions[0]

        try:
            result = run_chaos(session, cfg, work, a.kills, a.seed, a.groups, a.polls, a.per_trigger)
        finally:
            if sessions:
                sessions[0].stop()
    print(report(result), flush=True)
    print(f"(work folder {work})", flush=True)
    diffs = sum(o["differences"] for o in result["outputs"].values())
    return 0 if diffs == 0 and result["run"].kills >= a.kills else 1


if __name__ == "__main__":
    sys.exit(main())

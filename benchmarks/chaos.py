"""Chaos, measured: seeded events processed once without faults and again through SIGKILLs of the job.

    .venv/bin/python -m benchmarks.chaos [--kills 20] [--seed 11] [--groups 10] [--polls 120] [--per-trigger 120]
    .venv/bin/python -m benchmarks.chaos --sweep [--points p1,p2] [--groups 4] [--polls 40] [--per-trigger 100]

On an embedded one-broker cluster, seeded events (groups whose hot partitions wander, so each gets lag-skew
recommendations, membership changes, malformed records) are written once. Then ``rebalancer run
--available-now`` (a child process) drains them: once uninterrupted (the reference), then on other
checkpoints, tables and trigger topics, killed with SIGKILL of its whole process group (driver, JVM, Python
workers) and restarted until it drains:

- ``--kills N`` (random mode): N seeded kills on one checkpoint, the first in the first seconds of the new
  checkpoint (its start-up: lease, layout, tables, app id, floors), then, drawn in turn, at a random moment
  of a run's start-up, at a random moment after its first new committed batch, or at a batch fault point of
  :mod:`streaming.job.faults` (``REBALANCER_FAULT``) in one of the next batches;
- ``--sweep``: every fault point in turn (:data:`SWEEP`), each on a fresh checkpoint: the run is killed at
  the point (start-up points at their first hit, batch points in the first batch with recommendations),
  then restarted until drained; one line per point.

Each outcome is compared with the reference column by column: every row of ``recommendations`` and
``rejected_events`` (``batch_id`` included: with the same ``maxOffsetsPerTrigger`` a replayed batch covers
the offsets of the first attempt) and the trigger feed deduplicated by ``recommendation_id`` (at-least-once).
Progress is read from the checkpoint's ``commits`` folder, the outcome from the tables (delta-rs: no Spark
JVM beside the job's) and the topic, never from a child's output.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from streaming.config import Config
from streaming.contracts import events as ev
from streaming.contracts.tables import RECOMMENDATIONS, REJECTED
from streaming.dev.produce import produce
from streaming.job import faults

T0 = 1_763_700_000_000
STEP = 10_000
BATCH = -1
"""Stands for the first batch with recommendations in a :data:`SWEEP` entry."""
SWEEP: list[tuple[str, int | None, dict[str, str]]] = [
    *((f"{name}:{when}-rename", None, {}) for name in faults.SIDE_FILES for when in ("before", "after")),
    ("tables:before-create", None, {}), ("tables:after-create", None, {}), ("query:before-start", None, {}),
    ("batch:start", 0, {}), ("stateful", None, {}),
    ("batch:start", BATCH, {}),
    ("delta-rs:before-commit", BATCH, {}), ("delta-rs:after-commit", BATCH, {}),
    ("spark-delta:before-commit", BATCH, {"job.delta_writer": "spark"}),
    ("spark-delta:after-commit", BATCH, {"job.delta_writer": "spark"}),
    ("feed:before", BATCH, {}), ("feed:after", BATCH, {}), ("batch:end", BATCH, {}),
]
"""(point, batch or hit, extra configuration) of the sweep: every point of streaming.job.faults.POINTS."""
RANDOM_POINTS = ("batch:start", "stateful", "delta-rs:before-commit", "delta-rs:after-commit", "feed:before",
                 "feed:after", "batch:end")
"""Batch points the random mode draws from (those the default configuration reaches)."""


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


def job_args(cfg: Config, tables: str, checkpoint: str, trigger_topic: str, per_trigger: int,
             extra: dict[str, str] | None = None) -> list[str]:
    conf = {
        "kafka.bootstrap_servers": cfg.kafka.bootstrap_servers, "kafka.lag_topic": cfg.kafka.lag_topic,
        "kafka.metadata_topic": cfg.kafka.metadata_topic, "kafka.trigger_topic": trigger_topic,
        "paths.tables": tables, "job.max_offsets_per_trigger": str(per_trigger), "job.query_name": "chaos",
        "job.watermark_delay": "2 minutes", "policy.cooldown_s": "60",
        "policy.mode": "auto",  # the feed is compared with the table: every recommendation must be published
        "spark.master": "local[2]", "spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false",
    } | (extra or {})
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
    kills: dict[str, int] = field(default_factory=dict)
    """kind of kill (a fault point, ``startup`` or ``timer``) -> kills of that kind"""
    runs: int = 0
    log: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def total(self) -> int:
        return sum(self.kills.values())


def _run_child(args: list[str], log_file: Path, env: dict[str, str], kill_after_s: float | None,
               checkpoint: Path, timeout_s: float, from_launch: bool = False) -> int:
    """Run one job process; with ``kill_after_s``, SIGKILL its group that long after its first new committed
    batch (``from_launch``: after it was started)."""
    with open(log_file, "ab") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + timeout_s
        if kill_after_s is not None:
            start = committed(checkpoint)
            while (not from_launch and proc.poll() is None and committed(checkpoint) <= start
                   and time.monotonic() < deadline):
                time.sleep(0.1)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(kill_after_s)
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(max(1.0, deadline - time.monotonic()))
    finally:
        # whatever is left of the group goes too (nothing, when a fault point killed the group itself)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.wait(30)
    return proc.returncode


def _env(fault: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != faults.ENV}
    return env | ({faults.ENV: fault} if fault else {})


def _draw(rng: random.Random, run: ChaosRun, checkpoint: Path) -> tuple[str, str | None, float | None, bool]:
    """The next kill: (kind, fault spec, seconds, from launch). The first is in a new checkpoint's start-up."""
    kind = "startup" if not run.kills else rng.choice(("startup", "timer", "point"))
    if kind == "startup":  # the JVM takes seconds to start: this spans the lease to the first batches
        return kind, None, rng.uniform(1.0, 25.0), True
    if kind == "timer":
        return kind, None, rng.uniform(0.0, 3.0), False
    point = rng.choice(RANDOM_POINTS)
    # the batch after the last committed one is replayed first; kill in it or one of the next two
    return point, point if point == "stateful" else f"{point}@{committed(checkpoint) + rng.randrange(3)}", None, False


def drain_with_kills(args: list[str], checkpoint: Path, log_file: Path, kills: int, seed: int,
                     timeout_s: float = 3600) -> ChaosRun:
    """Runs of ``args`` on ``checkpoint`` killed ``kills`` times (seeded), then one run to the end."""
    rng = random.Random(seed)
    run = ChaosRun()
    t0 = time.monotonic()
    deadline = t0 + timeout_s
    while True:
        assert time.monotonic() < deadline, f"chaos did not drain in {timeout_s:.0f}s ({run.log})"
        kind, spec, after, from_launch = _draw(rng, run, checkpoint) if run.total < kills else ("clean", None,
                                                                                                None, False)
        run.runs += 1
        rc = _run_child(args, log_file, _env(spec), after, checkpoint, deadline - time.monotonic(), from_launch)
        run.log.append(f"{spec or kind}:{rc}")
        if rc == -signal.SIGKILL:
            run.kills[kind] = run.kills.get(kind, 0) + 1
            continue
        if rc != 0:
            raise RuntimeError(f"job run failed with exit status {rc}; see {log_file}")
        # exit 0: drained (if kills are still due, it drained before they came: the report shows those done)
        run.seconds = time.monotonic() - t0
        return run


def drain_with_faults(args: list[str], checkpoint: Path, log_file: Path, specs: list[str],
                      timeout_s: float = 1800) -> ChaosRun:
    """One run killed at each fault point of ``specs`` in turn (``point@+k``: k batches after the last
    committed one), then runs to the end. A point a run does not reach ends the list (the run drained)."""
    run = ChaosRun()
    t0 = time.monotonic()
    deadline = t0 + timeout_s
    todo = list(specs)
    while True:
        spec = todo.pop(0) if todo else None
        if spec and (m := re.fullmatch(r"(.*)@\+(\d+)", spec)):
            spec = f"{m.group(1)}@{committed(checkpoint) + int(m.group(2))}"
        run.runs += 1
        rc = _run_child(args, log_file, _env(spec), None, checkpoint, deadline - time.monotonic())
        run.log.append(f"{spec or 'clean'}:{rc}")
        if rc == -signal.SIGKILL and spec:
            point = spec.split("@")[0]
            run.kills[point] = run.kills.get(point, 0) + 1
            continue
        if rc != 0:
            raise RuntimeError(f"job run ({spec or 'clean'}) failed with exit status {rc}; see {log_file}")
        run.seconds = time.monotonic() - t0
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


def table_rows(path: str) -> list[str]:
    """Every row of the Delta table, every column, as sorted canonical JSON (read with delta-rs)."""
    from deltalake import DeltaTable

    return sorted(json.dumps(r, sort_keys=True, default=str) for r in DeltaTable(path).to_pyarrow_table().to_pylist())


def compare(cfg: Config, ref_tables: str, ref_topic: str, chaos_tables: str, chaos_topic: str) -> dict:
    """Rows compared and differences (rows in one run and not in the other), per output."""
    out = {}
    for name in (RECOMMENDATIONS, REJECTED):
        a, b = table_rows(f"{ref_tables}/{name}"), table_rows(f"{chaos_tables}/{name}")
        out[name] = {"reference": len(a), "chaos": len(b), "differences": _diff(a, b)}
    fa, fb = read_feed(cfg, ref_topic), read_feed(cfg, chaos_topic)
    out["feed"] = {"reference": len(fa), "chaos": len(fb),
                   "differences": _diff(sorted(fa.values()), sorted(fb.values()))}
    return out


def _diff(a: list[str], b: list[str]) -> int:
    from collections import Counter

    ca, cb = Counter(a), Counter(b)
    return sum(((ca - cb) + (cb - ca)).values())


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
        return job_args(self.cfg, str(self.work / name), str(checkpoint), f"{self.tag}.{name}", self.per_trigger,
                        extra), checkpoint

    def outputs(self, name: str) -> dict:
        return compare(self.cfg, str(self.work / "ref"), f"{self.tag}.ref", str(self.work / name),
                       f"{self.tag}.{name}")

    @property
    def batches(self) -> int:
        return committed(self.work / "ref-ck")

    def first_batch_with_recommendations(self) -> int:
        from deltalake import DeltaTable

        ids = DeltaTable(str(self.work / "ref" / RECOMMENDATIONS)).to_pyarrow_table(columns=["batch_id"])
        return min(ids.column("batch_id").to_pylist())


def prepare(cfg: Config, work: Path, seed: int, groups: int, polls: int, per_trigger: int) -> Bench:
    """Produce the seeded events to topics of their own and run the reference."""
    tag = f"chaos{seed}-{uuid.uuid4().hex[:6]}"
    cfg = dataclasses.replace(cfg, kafka=dataclasses.replace(
        cfg.kafka, lag_topic=f"{tag}.lag", metadata_topic=f"{tag}.meta", trigger_topic=f"{tag}.ref"))
    events, bad = seeded_events(seed, groups, polls)
    produce(cfg, events, bad)
    bench = Bench(cfg, work, tag, per_trigger, len(events) + len(bad))
    t = time.monotonic()
    args, checkpoint = bench.args("ref")
    if _run_child(args, work / "reference.log", _env(None), None, checkpoint, 1800) != 0:
        raise RuntimeError(f"reference run failed; see {work / 'reference.log'}")
    bench.reference_s = time.monotonic() - t
    return bench


def run_chaos(bench: Bench, kills: int, seed: int) -> dict:
    """Random mode: ``kills`` seeded kills on one checkpoint, then the comparison."""
    args, checkpoint = bench.args("chaos")
    run = drain_with_kills(args, checkpoint, bench.work / "chaos.log", kills, seed)
    return {"run": run, "outputs": bench.outputs("chaos")}


def sweep_one(bench: Bench, point: str, n: int | None, extra: dict[str, str]) -> tuple[ChaosRun, dict]:
    """Kill at ``point`` (in batch or at hit ``n``) on a fresh checkpoint, drain, compare."""
    name = "sweep-" + re.sub(r"[^a-z0-9]+", "-", f"{point}-{n}".lower()).strip("-")
    args, checkpoint = bench.args(name, extra)
    spec = point if n is None else f"{point}@{n}"
    run = drain_with_faults(args, checkpoint, bench.work / f"{name}.log", [spec])
    return run, bench.outputs(name)


def outcome_line(label: str, run: ChaosRun, outputs: dict) -> str:
    same = all(o["differences"] == 0 and o["chaos"] == o["reference"] for o in outputs.values())
    parts = ", ".join(f"{k} {o['chaos']}/{o['reference']} ({o['differences']} diff)" for k, o in outputs.items())
    killed = "killed" if run.total else "NOT REACHED"
    return (f"{label:<36} {killed}, {run.runs} runs, {run.seconds:4.0f}s: {parts}: "
            f"{'same' if same and run.total else 'DIFFERENT' if not same else 'point not reached'}")


def report(bench: Bench, r: dict) -> str:
    run: ChaosRun = r["run"]
    kinds = ", ".join(f"{n} {k}" for k, n in sorted(run.kills.items()))
    lines = [f"{bench.events} events, {bench.batches} batches (reference run {bench.reference_s:.0f}s)",
             f"chaos: {run.total} SIGKILLs ({kinds}), {run.runs} runs, {run.runs - 1} restarts, {run.seconds:.0f}s",
             f"runs: {' '.join(run.log)}"]
    for name, o in r["outputs"].items():
        lines.append(f"{name}: {o['reference']} rows (reference) vs {o['chaos']} (chaos), "
                     f"{o['differences']} differences")
    return "\n".join(lines)


def sweep(bench: Bench, points: list[str] | None, parallel: int = 1) -> bool:
    """The sweep, one printed line per point (as each ends); True when every point was reached and gave the
    same outputs. ``parallel`` points run at once (each its own checkpoint, tables and feed topic)."""
    from concurrent.futures import ThreadPoolExecutor

    first = bench.first_batch_with_recommendations()
    print(f"{bench.events} events, {bench.batches} batches (reference run {bench.reference_s:.0f}s); batch "
          f"points in batch {first}, the first with recommendations", flush=True)
    todo: list[tuple[str, int | None, dict[str, str]]] = []
    for p, n, extra in SWEEP:  # batch:start@0 and @first are one point when the first batch has recommendations
        entry = (p, first if n == BATCH else n, extra)
        if (not points or p in points) and entry not in todo:
            todo.append(entry)

    def one(entry: tuple[str, int | None, dict[str, str]]) -> str:
        point, n, extra = entry
        label = f"{point}@{n}" if n is not None else point
        try:
            line = outcome_line(label, *sweep_one(bench, point, n, extra))
        except Exception as e:  # a restart that failed: the point's line says so, the others go on
            line = f"{label:<36} FAILED: {str(e)[:300]}"
        print(line, flush=True)
        return line

    with ThreadPoolExecutor(max(1, parallel)) as pool:
        lines = list(pool.map(one, todo))
    return all(line.endswith(": same") for line in lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="benchmarks.chaos", description=__doc__.split("\n")[0])
    ap.add_argument("--sweep", action="store_true", help="kill at every fault point in turn")
    ap.add_argument("--points", help="with --sweep: only these points (comma-separated)")
    ap.add_argument("--parallel", type=int, default=1, help="with --sweep: points run at once")
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--groups", type=int, default=None, help="default 10 (4 with --sweep)")
    ap.add_argument("--polls", type=int, default=None, help="default 120 (40 with --sweep)")
    ap.add_argument("--per-trigger", type=int, default=None,
                    help="maxOffsetsPerTrigger (many small batches); default 120 (100 with --sweep)")
    a = ap.parse_args(argv)
    groups, polls, per_trigger = (a.groups or (4 if a.sweep else 10), a.polls or (40 if a.sweep else 120),
                                  a.per_trigger or (100 if a.sweep else 120))

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
        else:
            result = run_chaos(bench, a.kills, a.seed)
            print(report(bench, result), flush=True)
            ok = (sum(o["differences"] for o in result["outputs"].values()) == 0
                  and result["run"].total >= a.kills)
    print(f"(work folder {work})", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

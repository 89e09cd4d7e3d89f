"""Child runs of the job and their kills: the job's command line, progress from the checkpoint,
SIGKILLs (seeded or at fault points) and restarts until it drains."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from streaming.config import Config
from streaming.operations import faults

RANDOM_POINTS = ("batch:start", "stateful", "delta-rs:before-commit", "delta-rs:after-commit",
                 "feed:before", "feed:after", "batch:end")
"""Batch points the random mode draws from (those the default configuration reaches)."""

RETAIN_ALL = {
    "maintenance.expire_every_s": "0.001",
    "maintenance.recommendations_retention_days": "36500",
    "maintenance.rejected_retention_days": "36500",
}
"""A run's extra settings that reach the retention points: a round after every batch (its first
comes ``expire_every_s`` after the start) whose DELETE and MERGE run but keep every row (the events
are from T0, 2025), as the reference run, which has no round, keeps them."""
SPARK_WRITER = {"job.delta_writer": "spark"}
"""A run's extra settings that reach the ``spark-delta`` points: Spark's Delta writer."""


def job_conf(cfg: Config, tables: str, trigger_topic: str, per_trigger: int,
             extra: dict[str, str] | None = None) -> dict[str, str]:
    """The job's settings (``--conf`` of ``rebalancer run``) for a run on ``tables`` and
    ``trigger_topic``."""
    return {
        "kafka.bootstrap_servers": cfg.kafka.bootstrap_servers,
        "kafka.lag_topic": cfg.kafka.lag_topic,
        "kafka.metadata_topic": cfg.kafka.metadata_topic,
        "kafka.trigger_topic": trigger_topic,
        "paths.tables": tables,
        "job.max_offsets_per_trigger": str(per_trigger),
        "job.query_name": "chaos",
        "job.watermark_delay": "2 minutes",
        "policy.cooldown_s": "60",
        # the feed is compared with the table: every recommendation must be published
        "policy.mode": "auto",
        "spark.master": "local[2]",
        "spark.sql.shuffle.partitions": "2",
        "spark.ui.enabled": "false",
    } | (extra or {})


def job_args(cfg: Config, tables: str, checkpoint: str, trigger_topic: str, per_trigger: int,
             extra: dict[str, str] | None = None) -> list[str]:
    """``rebalancer run --available-now`` on ``checkpoint`` with :func:`job_conf`'s settings."""
    args = [sys.executable, "-m", "streaming.cli", "run", "--available-now",
            "--checkpoint", checkpoint]
    for k, v in job_conf(cfg, tables, trigger_topic, per_trigger, extra).items():
        args += ["--conf", f"{k}={v}"]
    return args


def committed(checkpoint: Path) -> int:
    """Id of the next batch to commit: one more than the highest in the checkpoint's commits folder
    (old entries are purged, so the files are not counted)."""
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
    """Run one job process; with ``kill_after_s``, SIGKILL its group that long after its first new
    committed batch (``from_launch``: after it was started)."""
    with open(log_file, "ab") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)
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
        # whatever is left of the group goes too
        # (nothing, when a fault point killed the group itself)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.wait(30)
    return proc.returncode


def _env(fault: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != faults.ENV}
    return env | ({faults.ENV: fault} if fault else {})


def _draw(rng: random.Random, run: ChaosRun, checkpoint: Path,
          batches: int | None = None) -> tuple[str, str | None, float | None, bool]:
    """The next kill: (kind, fault spec, seconds, from launch). The first is in a new checkpoint's
    start-up. Within three batches of the end (``batches``: the reference run's count) a timer or a
    batch point may come too late, and the run would drain before it: the kills still due land early
    in start-up, every one."""
    if batches is not None and committed(checkpoint) + 3 > batches:
        return "startup", None, rng.uniform(1.0, 8.0), True  # before the JVM is up: always in time
    kind = "startup" if not run.kills else rng.choice(("startup", "timer", "point"))
    if kind == "startup":
        # the JVM takes seconds to start: this spans the lease to the first batches
        return kind, None, rng.uniform(1.0, 25.0), True
    if kind == "timer":
        return kind, None, rng.uniform(0.0, 3.0), False
    point = rng.choice(RANDOM_POINTS)
    # the batch after the last committed one is replayed first; kill in it or one of the next two
    spec = point if point == "stateful" else f"{point}@{committed(checkpoint) + rng.randrange(3)}"
    return point, spec, None, False


def drain_with_kills(args: list[str], checkpoint: Path, log_file: Path, kills: int, seed: int,
                     timeout_s: float = 3600, batches: int | None = None) -> ChaosRun:
    """Runs of ``args`` on ``checkpoint`` killed ``kills`` times (seeded), then one run to the end;
    ``batches``: the reference run's batch count (see :func:`_draw`)."""
    rng = random.Random(seed)
    run = ChaosRun()
    t0 = time.monotonic()
    deadline = t0 + timeout_s
    while True:
        assert time.monotonic() < deadline, f"chaos did not drain in {timeout_s:.0f}s ({run.log})"
        kind, spec, after, from_launch = (_draw(rng, run, checkpoint, batches) if run.total < kills
                                          else ("clean", None, None, False))
        run.runs += 1
        rc = _run_child(args, log_file, _env(spec), after, checkpoint,
                        deadline - time.monotonic(), from_launch)
        run.log.append(f"{spec or kind}:{rc}")
        # exit 0: drained (if kills are still due, it drained before they came: the report
        # shows those done)
        if _ended(run, rc, kind, spec or kind, log_file, t0):
            return run


class Step(NamedTuple):
    """One run of :func:`drain_with_faults`: the fault spec it is killed at, the job's arguments,
    and what to do to the checkpoint before it starts (None: nothing)."""

    spec: str
    args: list[str]
    before: Callable[[], None] | None = None


def drain_with_faults(steps: list[Step], drain_args: list[str], checkpoint: Path,
                      log_file: Path, timeout_s: float = 1800) -> ChaosRun:
    """One run killed at each step's fault point in turn, then runs of ``drain_args`` to the end. A
    point a run does not reach ends the list (the run drained)."""
    run = ChaosRun()
    t0 = time.monotonic()
    deadline = t0 + timeout_s
    todo = list(steps)
    while True:
        step = todo.pop(0) if todo else None
        spec, args = (step.spec, step.args) if step else (None, drain_args)
        if step and step.before:
            step.before()
        run.runs += 1
        began = time.monotonic()
        rc = _run_child(args, log_file, _env(spec), None, checkpoint, deadline - time.monotonic())
        run.log.append(f"{spec or 'clean'}:{rc} in {time.monotonic() - began:.1f}s")
        if _ended(run, rc, spec.split("@")[0] if spec else None, spec or "clean", log_file, t0):
            return run


def _ended(run: ChaosRun, rc: int, killed: str | None, what: str, log_file: Path,
           t0: float) -> bool:
    """A run's exit: a SIGKILL counted under ``killed`` (False: run again), or exit 0, the drain's
    time taken (True); any other exit raises."""
    if rc == -signal.SIGKILL and killed:
        run.kills[killed] = run.kills.get(killed, 0) + 1
        return False
    if rc != 0:
        raise RuntimeError(f"job run ({what}) failed with exit status {rc}; see {log_file}")
    run.seconds = time.monotonic() - t0
    return True

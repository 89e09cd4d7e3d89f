"""The command line of ``python -m benchmarks.soak``: options, the run in named steps, its figure
lines."""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import benchmarks.soak as package

from .figures import folders, interval_s, memory, window_commits
from .job import Job, job_conf, maintainer, stop_job
from .load import Load
from .verdicts import parse, summary

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results" / "soak.txt"


def args_of(argv: list[str] | None) -> argparse.Namespace:
    """The options."""
    ap = argparse.ArgumentParser(prog="benchmarks.soak",
                                 description=(package.__doc__ or "").split("\n\n")[0])
    ap.add_argument("--batches", type=int, default=2000)
    ap.add_argument("--minutes", type=float, default=None,
                    help="stop after this long even if --batches were not reached "
                         "(the lines say so)")
    ap.add_argument("--retain", type=int, default=100,
                    help="spark.sql.streaming.minBatchesToRetain (Spark's default 100; lower shows "
                         "the plateau of the checkpoint and state store in a shorter run)")
    ap.add_argument("--every", type=int, default=100,
                    help="a line of figures every this many batches")
    ap.add_argument("--warmup", type=int, default=500, help="batches left out of the slopes")
    ap.add_argument("--groups", type=int, default=40)
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--poll-every", type=float, default=1.0,
                    help="seconds between two polls of the load")
    ap.add_argument("--trigger", default="250 milliseconds")
    ap.add_argument("--maintain-every", type=float, default=600.0,
                    help="seconds between `rebalancer maintain`")
    ap.add_argument("--log-retention", default="interval 5 minutes")
    ap.add_argument("--file-retention", default="interval 2 minutes")
    ap.add_argument("--work", default=None,
                    help="folder for the broker, checkpoint and tables (default: temp)")
    ap.add_argument("--save", action="store_true", help=f"write {RESULTS.relative_to(ROOT)}")
    ap.add_argument("--summarize", metavar="FILE", default=None,
                    help="no run: the slopes of the figure lines of a saved run, "
                         "after --warmup batches")
    return ap.parse_args(argv)


def sample(job: Job, checkpoint: Path, tables: Path, every: int,
           log_window_s: float) -> dict[str, float]:
    """The figures now: memory, folders, the commits of the log's retention window, and the mean
    time of the last ``every`` batches."""
    recent = job.durations[-every:]
    return {**memory(job.proc.pid), **folders(checkpoint, tables),
            "window_commits": window_commits(tables, log_window_s),
            "batch_ms": sum(recent) / max(1, len(recent))}


def fmt(batch: int, f: dict[str, float], elapsed_s: float) -> str:
    """One figure line (as :func:`~benchmarks.soak.verdicts.parse` reads it back)."""
    load1 = Path("/proc/loadavg").read_text().split()[0]
    return (f"batch {batch:5d} at {elapsed_s / 60:5.1f} min (load {load1}): JVM "
            f"{f['jvm_rss_mb']:.0f} MB, driver py {f['py_rss_mb']:.0f} MB, workers "
            f"{f['workers_rss_mb']:.0f} MB; state {f['state_files']:.0f} files {f['state_mb']:.2f} "
            f"MB in {f.get('state_versions', 0):.0f} versions; checkpoint {f['ckpt_files']:.0f} "
            f"files {f['ckpt_mb']:.2f} MB; Delta {f['delta_files']:.0f} files {f['delta_mb']:.2f} "
            f"MB, log {f['log_files']:.0f} files {f['log_kb']:.0f} KB, "
            f"{f.get('log_orphans', 0):.0f} orphan checksums, {f.get('window_commits', 0):.0f} "
            f"commits in the log window; batch {f['batch_ms']:.0f} ms")


def main(argv: list[str] | None = None) -> int:
    """Summarize a saved run, or soak the job on an embedded cluster; 0 when it ran."""
    a = args_of(argv)
    if a.summarize:
        summary(parse(Path(a.summarize).read_text()), a.warmup, print)
        return 0
    from streaming import jvm
    from streaming.embedded.cluster import KafkaCluster

    jvm.resolve()
    work = Path(a.work or tempfile.mkdtemp(prefix="soak-"))
    say = sayer(a.save)
    cluster = KafkaCluster(brokers=1, base_dir=work / "kafka")
    cluster.start()
    try:
        soak(a, work, cluster.bootstrap_servers, say)
    finally:
        cluster.stop()
    return 0


def sayer(save: bool) -> Callable[[str], None]:
    """Print a line, and with ``save`` write it to :data:`RESULTS` as it goes, above the runs saved
    before (a run cut short keeps its lines and theirs)."""
    earlier = RESULTS.read_text() if save and RESULTS.exists() else ""
    lines: list[str] = []

    def say(line: str) -> None:
        print(line, flush=True)
        if save:
            lines.append(line)
            RESULTS.write_text("\n".join(lines) + "\n"
                               + (f"\n## Earlier\n\n{earlier}" if earlier else ""))

    return say


def soak(a: argparse.Namespace, work: Path, bootstrap: str, say: Callable[[str], None]) -> None:
    """The run on a started cluster: topics, the header line, load, job and maintainer, the batches,
    the stop."""
    from streaming import config
    from streaming.kafka_clients import factories as kafka_clients

    conf = job_conf(bootstrap, work, a)
    cfg = config.load(overrides=conf)
    kafka_clients.ensure_rebalancer_topics(cfg)
    checkpoint, tables = work / "checkpoints" / "soak", work / "tables"
    say(header(a, work))
    load = Load(cfg, a.groups, a.partitions, a.poll_every)
    load.start()
    job = Job(conf, checkpoint, work / "job.err")
    t0 = time.monotonic()
    stopped = threading.Event()
    maint = maintainer(conf, a.maintain_every, stopped, say)
    rows = run_batches(job, a, checkpoint, tables, t0, say)
    say(f"load: {load.polls} polls, {load.events} events; job: {job.last_batch + 1} batches, "
        f"{job.recommendations} recommendations, {job.rejected} rejected")
    stopped.set()
    load.stopped.set()
    maint.join(600)
    stop_job(job, checkpoint, say)
    summary(rows, a.warmup, say)


def header(a: argparse.Namespace, work: Path) -> str:
    """The run's first line: when, cores, the load, trigger, maintenance and retentions."""
    return (f"benchmarks.soak {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, "
            f"{os.cpu_count()} cores; {a.groups} groups x {a.partitions} partitions every "
            f"{a.poll_every:g}s, trigger {a.trigger}, maintain every {a.maintain_every:g}s; "
            f"minBatchesToRetain {a.retain}; retentions: log {a.log_retention}, deleted files "
            f"{a.file_retention}, rejected rows ~3 min, recommendations ~6 min, the job expiring "
            f"rows every 120 s; work {work}")


def run_batches(job: Job, a: argparse.Namespace, checkpoint: Path, tables: Path, t0: float,
                say) -> list[tuple[int, dict[str, float]]]:
    """Wait for every ``--every``-th batch, print its figure line; stop at the time budget or the
    job's end."""
    rows: list[tuple[int, dict[str, float]]] = []
    for batch in range(a.every, a.batches + 1, a.every):
        if a.minutes and time.monotonic() - t0 > a.minutes * 60:
            say(f"time budget of {a.minutes:g} min spent at batch {job.last_batch}: stopping short "
                f"of {a.batches}")
            break
        if not job.wait_batch(batch):
            say(f"the job ended at batch {job.last_batch}: exit {job.proc.poll()}; see "
                f"{job.log.name}")
            break
        figures = sample(job, checkpoint, tables, a.every, interval_s(a.log_retention))
        rows.append((batch, figures))
        say(fmt(batch, figures, time.monotonic() - t0))
    return rows

"""A long run of the real job: does anything grow without bound?

    .venv/bin/python -m benchmarks.soak                          # 2,000 micro-batches, figures every 100
    .venv/bin/python -m benchmarks.soak --batches 300 --every 50 # a short look
    .venv/bin/python -m benchmarks.soak --save                   # also write benchmarks/results/soak.txt

Set-up: an embedded one-broker cluster; ``rebalancer run`` as a child process (short triggers); a producer
thread shaped like the collector (every ``--poll-every`` seconds one lag event per partition of every group,
each group's lag skewed by a slowly wandering factor on a wandering hot partition, a membership change now
and then, a malformed record now and then) so the job keeps making recommendations and rejecting rows; and
``rebalancer maintain`` every ``--maintain-every`` seconds. The tables' retentions are scaled down
(``--log-retention``, ``--file-retention``, rejected rows) so that the run reaches the steady state that the
defaults (30 days, 7 days) reach after weeks.

Every ``--every`` batches one line: the driver's JVM and Python RSS, the Python workers' summed RSS, the
state store and the whole checkpoint (files, bytes), the Delta tables' data files and ``_delta_log``, and the
mean batch time. At the end each figure's least-squares slope per 1,000 batches after ``--warmup`` batches
and a verdict: ``flat`` (the fitted change over the run is under 10% of its mean), ``levelling`` (it grew,
but the second half's slope is under a quarter of the first's) or ``GROWS``. Then the job is stopped by
SIGTERM and its stop line printed.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "soak.txt"
BATCH_LINE = re.compile(r"^batch (\d+): (\d+) input rows, .* (\d+) recommendations, (\d+) rejected, .* (\d+) ms$")
FIGURES = ("jvm_rss_mb", "py_rss_mb", "workers_rss_mb", "state_files", "state_mb", "ckpt_files", "ckpt_mb",
           "delta_files", "delta_mb", "log_files", "log_kb", "batch_ms")


def args_of(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="benchmarks.soak", description=__doc__.split("\n\n")[0])
    ap.add_argument("--batches", type=int, default=2000)
    ap.add_argument("--minutes", type=float, default=None,
                    help="stop after this long even if --batches were not reached (the lines say so)")
    ap.add_argument("--retain", type=int, default=100,
                    help="spark.sql.streaming.minBatchesToRetain (Spark's default 100; lower shows the plateau "
                         "of the checkpoint and state store in a shorter run)")
    ap.add_argument("--every", type=int, default=100, help="a line of figures every this many batches")
    ap.add_argument("--warmup", type=int, default=500, help="batches left out of the slopes")
    ap.add_argument("--groups", type=int, default=40)
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--poll-every", type=float, default=1.0, help="seconds between two polls of the load")
    ap.add_argument("--trigger", default="250 milliseconds")
    ap.add_argument("--maintain-every", type=float, default=600.0, help="seconds between `rebalancer maintain`")
    ap.add_argument("--log-retention", default="interval 5 minutes")
    ap.add_argument("--file-retention", default="interval 2 minutes")
    ap.add_argument("--work", default=None, help="folder for the broker, checkpoint and tables (default: temp)")
    ap.add_argument("--save", action="store_true", help=f"write {RESULTS.relative_to(ROOT)}")
    ap.add_argument("--summarize", metavar="FILE", default=None,
                    help="no run: the slopes of the figure lines of a saved run, after --warmup batches")
    return ap.parse_args(argv)


class Load(threading.Thread):
    """Collector-shaped events: lag of every group's partitions each poll, skew wandering, members changing."""

    def __init__(self, cfg, groups: int, partitions: int, every_s: float, seed: int = 26) -> None:
        super().__init__(name="soak-load", daemon=True)
        self.cfg, self.every_s, self.rnd = cfg, every_s, random.Random(seed)
        self.groups = [f"soak-{g:03d}" for g in range(groups)]
        self.partitions = partitions
        self.skew = {g: 1.0 for g in self.groups}  # the hot partition's lag over the others'
        self.hot = {g: 0 for g in self.groups}
        self.size = {g: 2 for g in self.groups}  # members
        self.generation = {g: 1 for g in self.groups}
        self.stopped = threading.Event()
        self.polls = self.events = 0

    def members(self, now_ms: int, g: str) -> dict:
        from streaming.contracts import events as ev

        n = self.size[g]
        parts = [[p for p in range(self.partitions) if p % n == m] for m in range(n)]
        members = [ev.member_entry(f"{g}-m{m}", ["t0"], [("t0", p) for p in parts[m]], client_id=f"c{m}",
                                   host="/127.0.0.1", rack="abc"[m % 3]) for m in range(n)]
        return ev.members_event(now_ms, g, self.generation[g], "range", members)

    def poll(self, now_ms: int) -> list[dict]:
        from streaming.contracts import events as ev

        out = []
        for g in self.groups:
            if self.polls == 0 or self.rnd.random() < 0.01:  # a member joins or leaves now and then
                if self.polls:
                    self.size[g] = 5 - self.size[g]  # 2 <-> 3
                    self.generation[g] += 1
                out.append(self.members(now_ms, g))
            self.skew[g] = min(8.0, max(1.0, self.skew[g] + self.rnd.gauss(0, 0.3)))
            if self.rnd.random() < 0.02:
                self.hot[g] = self.rnd.randrange(self.partitions)
            committed = 1_000_000 + now_ms // 10
            for p in range(self.partitions):
                lag = int(500 * (self.skew[g] if p == self.hot[g] else 1.0) * self.rnd.uniform(0.8, 1.2))
                out.append(ev.lag_event(now_ms, g, "t0", p, committed, committed + lag))
        return out

    def run(self) -> None:
        from streaming.contracts import events as ev
        from streaming.kafka import clients as kafka_clients

        prod = kafka_clients.producer(self.cfg, linger_ms=20, acks=1)
        try:
            while not self.stopped.wait(self.every_s):
                for e in self.poll(int(time.time() * 1000)):
                    key, value = ev.encode(e)
                    prod.send(ev.topic_for(e, self.cfg.kafka.lag_topic, self.cfg.kafka.metadata_topic), key=key,
                              value=value)
                    self.events += 1
                if self.rnd.random() < 0.05:  # a malformed record: rejected_events keeps getting rows
                    prod.send(self.cfg.kafka.lag_topic, key=b"bad", value=b"not json")
                self.polls += 1
            prod.flush(30)
        finally:
            prod.close()


# -- what the job's processes and folders hold ------------------------------------------------------------

def _tree(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stat = Path(f"/proc/{d}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(d))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += children.get(pid, [])
    return out


def _rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def memory(root: int) -> dict[str, float]:
    """RSS of the job's Python driver, its JVM and its Python workers (daemon and forks; shared pages of the
    forks are counted once each)."""
    out = {"jvm_rss_mb": 0.0, "py_rss_mb": _rss_mb(root), "workers_rss_mb": 0.0}
    for pid in _tree(root)[1:]:
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "pyspark.daemon" in cmd or "pyspark/daemon" in cmd or "pyspark.worker" in cmd:
            out["workers_rss_mb"] += _rss_mb(pid)
        elif "java" in cmd.split(" ", 1)[0]:
            out["jvm_rss_mb"] += _rss_mb(pid)
    return out


def du(folder: Path, pick=lambda p: True) -> tuple[int, int]:
    """Files and bytes under ``folder`` whose path ``pick`` accepts."""
    files = size = 0
    for dirpath, _dirs, names in os.walk(folder):
        for n in names:
            p = Path(dirpath, n)
            if pick(p):
                try:
                    size += p.stat().st_size
                    files += 1
                except OSError:  # removed meanwhile (cleanup, VACUUM)
                    pass
    return files, size


def folders(checkpoint: Path, tables: Path) -> dict[str, float]:
    state = du(checkpoint / "state")
    ckpt = du(checkpoint)
    data = du(tables, lambda p: p.suffix == ".parquet" and "_delta_log" not in p.parts)
    log = du(tables, lambda p: "_delta_log" in p.parts)
    return {"state_files": state[0], "state_mb": state[1] / 2**20, "ckpt_files": ckpt[0], "ckpt_mb": ckpt[1] / 2**20,
            "delta_files": data[0], "delta_mb": data[1] / 2**20, "log_files": log[0], "log_kb": log[1] / 1024}


# -- the run ------------------------------------------------------------------------------------------------

def job_conf(bootstrap: str, work: Path, a: argparse.Namespace) -> dict[str, str]:
    return {
        "kafka.bootstrap_servers": bootstrap, "kafka.lag_topic": "soak.lag", "kafka.metadata_topic": "soak.meta",
        "kafka.trigger_topic": "soak.triggers", "paths.tables": str(work / "tables"),
        "paths.checkpoints": str(work / "checkpoints"), "job.trigger_interval": a.trigger,
        "job.watermark_delay": "2 minutes", "job.group_timeout_s": "600", "job.state_buckets": "8",
        "policy.mode": "auto", "policy.cooldown_s": "60", "policy.skew_threshold": "1.5",
        "policy.skew_observations": "3", "policy.min_total_lag": "1000", "policy.min_improvement": "0.2",
        "maintenance.log_retention": a.log_retention, "maintenance.deleted_file_retention": a.file_retention,
        "maintenance.rejected_retention_days": "0.002",  # ~3 minutes
        "spark.sql.streaming.minBatchesToRetain": str(a.retain),
        "spark.master": "local[2]", "spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false",
    }


def cli(command: str, conf: dict[str, str], *extra: str) -> list[str]:
    args = [sys.executable, "-m", "streaming.cli", command, *extra]
    for k, v in conf.items():
        args += ["--conf", f"{k}={v}"]
    return args


class Job:
    """``rebalancer run`` as a child; its batch lines read as they come."""

    def __init__(self, conf: dict[str, str], checkpoint: Path, log: Path) -> None:
        self.log = log.open("w")
        self.proc = subprocess.Popen(cli("run", conf, "--checkpoint", str(checkpoint)), stdout=subprocess.PIPE,
                                     stderr=self.log, text=True, start_new_session=True)
        self.durations: list[int] = []  # ms per batch, index = order of arrival
        self.last_batch = -1
        self.recommendations = self.rejected = 0
        self.other: list[str] = []  # lines that are not batch lines (the stop line among them)
        self.changed = threading.Condition()
        self.reader = threading.Thread(target=self._read, name="soak-job-out", daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            m = BATCH_LINE.match(line.strip())
            with self.changed:
                if m:
                    self.last_batch = int(m.group(1))
                    self.recommendations += int(m.group(3))
                    self.rejected += int(m.group(4))
                    self.durations.append(int(m.group(5)))
                else:
                    self.other.append(line.rstrip())
                self.changed.notify_all()
        with self.changed:
            self.changed.notify_all()

    def wait_batch(self, batch: int) -> bool:
        """Until batch ``batch`` completed (True) or the job ended (False)."""
        with self.changed:
            while self.last_batch < batch:
                if self.proc.poll() is not None:
                    return False
                self.changed.wait(5)
        return True


def maintainer(conf: dict[str, str], every_s: float, stopped: threading.Event, say) -> threading.Thread:
    """``rebalancer maintain`` every ``every_s`` seconds while the job runs."""

    def loop() -> None:
        n = 0
        while not stopped.wait(every_s):
            n += 1
            t0 = time.monotonic()
            done = subprocess.run(cli("maintain", conf), capture_output=True, text=True)
            lines = [ln for ln in done.stdout.splitlines() if ln.strip()]
            say(f"  maintain #{n}: exit {done.returncode} in {time.monotonic() - t0:.0f}s: " + "; ".join(lines))

    t = threading.Thread(target=loop, name="soak-maintain", daemon=True)
    t.start()
    return t


def slope(points: list[tuple[float, float]]) -> float:
    """Least squares slope of y over x (0 for fewer than two points)."""
    n = len(points)
    if n < 2:
        return 0.0
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else 0.0


def verdict(points: list[tuple[float, float]]) -> tuple[float, str]:
    """(slope per 1,000 batches, flat / levelling / GROWS) of (batch, value) points after the warm-up."""
    s = slope(points)
    if len(points) < 4:
        return s * 1000, "too few points"
    span = points[-1][0] - points[0][0]
    mean = sum(y for _, y in points) / len(points)
    if abs(s * span) <= 0.1 * max(abs(mean), 1e-9):
        return s * 1000, "flat"
    half = len(points) // 2
    first, second = slope(points[: half + 1]), slope(points[half:])
    if s > 0 and second < 0.25 * first:
        return s * 1000, "levelling"
    return s * 1000, "GROWS" if s > 0 else "falls"


def sample(job: Job, checkpoint: Path, tables: Path, every: int) -> dict[str, float]:
    recent = job.durations[-every:]
    return {**memory(job.proc.pid), **folders(checkpoint, tables),
            "batch_ms": sum(recent) / max(1, len(recent))}


def fmt(batch: int, f: dict[str, float], elapsed_s: float) -> str:
    load1 = Path("/proc/loadavg").read_text().split()[0]
    return (f"batch {batch:5d} at {elapsed_s / 60:5.1f} min (load {load1}): JVM {f['jvm_rss_mb']:.0f} MB, "
            f"driver py {f['py_rss_mb']:.0f} MB, workers {f['workers_rss_mb']:.0f} MB; state {f['state_files']:.0f} "
            f"files {f['state_mb']:.2f} MB; checkpoint {f['ckpt_files']:.0f} files {f['ckpt_mb']:.2f} MB; Delta "
            f"{f['delta_files']:.0f} files {f['delta_mb']:.2f} MB, log {f['log_files']:.0f} files "
            f"{f['log_kb']:.0f} KB; "
            f"batch {f['batch_ms']:.0f} ms")


def summary(rows: list[tuple[int, dict[str, float]]], warmup: int, say) -> None:
    say(f"slopes per 1,000 batches over batches >= {warmup} (least squares), first -> last after warm-up:")
    for name in FIGURES:
        points = [(float(b), f[name]) for b, f in rows if b >= warmup]
        if not points:
            continue
        per_k, word = verdict(points)
        say(f"  {name:15s} {points[0][1]:10.2f} -> {points[-1][1]:10.2f}   slope {per_k:+10.3f}/1k batches   {word}")


def stop_job(job: Job, checkpoint: Path, say) -> None:
    t0 = time.monotonic()
    job.proc.send_signal(signal.SIGTERM)
    code = job.proc.wait(timeout=300)
    job.reader.join(30)  # the last lines, read once the pipe closed
    stops = [ln for ln in job.other if ln.startswith("rebalancer run: stopped")]
    say(f"SIGTERM: exit {code} after {time.monotonic() - t0:.1f}s; lease file left: "
        f"{(checkpoint / 'rebalancer.lease').exists()}; stop line(s): {stops}")


FIGURE_LINE = re.compile(
    r"^batch +(\d+) at .*: JVM (\S+) MB, driver py (\S+) MB, workers (\S+) MB; state (\S+) files (\S+) MB; "
    r"checkpoint (\S+) files (\S+) MB; Delta (\S+) files (\S+) MB, log (\S+) files (\S+) KB; batch (\S+) ms$")


def parse(text: str) -> list[tuple[int, dict[str, float]]]:
    """The figure lines of a saved run (as :func:`fmt` writes them)."""
    rows = []
    for line in text.splitlines():
        m = FIGURE_LINE.match(line)
        if m:
            rows.append((int(m.group(1)), dict(zip(FIGURES, map(float, m.groups()[1:]), strict=True))))
    return rows


def main(argv: list[str] | None = None) -> int:
    a = args_of(argv)
    if a.summarize:
        summary(parse(Path(a.summarize).read_text()), a.warmup, print)
        return 0
    from streaming import config, jvm
    from streaming.embedded.cluster import KafkaCluster
    from streaming.kafka import clients as kafka_clients

    jvm.resolve()
    work = Path(a.work or tempfile.mkdtemp(prefix="soak-"))

    if a.save:
        RESULTS.write_text("")

    def say(line: str) -> None:  # saved as it goes: a run cut short keeps its lines
        print(line, flush=True)
        if a.save:
            with RESULTS.open("a") as f:
                f.write(line + "\n")

    cluster = KafkaCluster(brokers=1, base_dir=work / "kafka")
    cluster.start()
    try:
        conf = job_conf(cluster.bootstrap_servers, work, a)
        cfg = config.load(overrides=conf)
        kafka_clients.ensure_rebalancer_topics(cfg)
        checkpoint, tables = work / "checkpoints" / "soak", work / "tables"
        say(f"benchmarks.soak {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, {os.cpu_count()} cores; "
            f"{a.groups} groups x {a.partitions} partitions every {a.poll_every:g}s, trigger {a.trigger}, maintain "
            f"every {a.maintain_every:g}s; minBatchesToRetain {a.retain}; retentions: log {a.log_retention}, "
            f"deleted files {a.file_retention}, "
            f"rejected rows ~3 min; work {work}")
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
    finally:
        cluster.stop()
    return 0


def run_batches(job: Job, a: argparse.Namespace, checkpoint: Path, tables: Path, t0: float,
                say) -> list[tuple[int, dict[str, float]]]:
    rows: list[tuple[int, dict[str, float]]] = []
    for batch in range(a.every, a.batches + 1, a.every):
        if a.minutes and time.monotonic() - t0 > a.minutes * 60:
            say(f"time budget of {a.minutes:g} min spent at batch {job.last_batch}: stopping short of {a.batches}")
            break
        if not job.wait_batch(batch):
            say(f"the job ended at batch {job.last_batch}: exit {job.proc.poll()}; see {job.log.name}")
            break
        figures = sample(job, checkpoint, tables, a.every)
        rows.append((batch, figures))
        say(fmt(batch, figures, time.monotonic() - t0))
    return rows


if __name__ == "__main__":
    sys.exit(main())

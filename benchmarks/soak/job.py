"""The job under soak: ``rebalancer run`` as a child read line by line, ``rebalancer maintain`` on a
timer, the stop by SIGTERM."""

from __future__ import annotations

import argparse
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

BATCH_LINE = re.compile(r"^batch (\d+): (\d+) input rows, .* (\d+) recommendations, "
                        r"(\d+) rejected\b.* (\d+) ms$")


def job_conf(bootstrap: str, work: Path, a: argparse.Namespace) -> dict[str, str]:
    return {
        "kafka.bootstrap_servers": bootstrap, "kafka.lag_topic": "soak.lag",
        "kafka.metadata_topic": "soak.meta", "kafka.trigger_topic": "soak.triggers",
        "paths.tables": str(work / "tables"), "paths.checkpoints": str(work / "checkpoints"),
        "job.trigger_interval": a.trigger, "job.watermark_delay": "2 minutes",
        "job.group_timeout_s": "600", "job.state_buckets": "8", "policy.mode": "auto",
        "policy.cooldown_s": "60", "policy.skew_threshold": "1.5", "policy.skew_observations": "3",
        "policy.min_total_lag": "1000", "policy.min_improvement": "0.2",
        "maintenance.log_retention": a.log_retention,
        "maintenance.deleted_file_retention": a.file_retention,
        "maintenance.rejected_retention_days": "0.002",  # ~3 minutes
        "maintenance.recommendations_retention_days": "0.004",  # ~6 minutes
        # the job's own rounds, scaled down with the retentions
        "maintenance.expire_every_s": "120",
        "spark.sql.streaming.minBatchesToRetain": str(a.retain),
        "spark.master": "local[2]", "spark.sql.shuffle.partitions": "2",
        "spark.ui.enabled": "false",
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
        self.proc = subprocess.Popen(cli("run", conf, "--checkpoint", str(checkpoint)),
                                     stdout=subprocess.PIPE, stderr=self.log, text=True,
                                     start_new_session=True)
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


def maintainer(conf: dict[str, str], every_s: float, stopped: threading.Event,
               say) -> threading.Thread:
    """``rebalancer maintain`` every ``every_s`` seconds while the job runs."""

    def loop() -> None:
        n = 0
        while not stopped.wait(every_s):
            n += 1
            t0 = time.monotonic()
            done = subprocess.run(cli("maintain", conf), capture_output=True, text=True)
            lines = [ln for ln in done.stdout.splitlines() if ln.strip()]
            if done.returncode:  # the error's last lines, not only what it printed before
                lines += [f"stderr: {ln.strip()}" for ln in done.stderr.splitlines()[-5:]
                          if ln.strip()]
            say(f"  maintain #{n}: exit {done.returncode} in {time.monotonic() - t0:.0f}s: "
                + "; ".join(lines))

    t = threading.Thread(target=loop, name="soak-maintain", daemon=True)
    t.start()
    return t


def stop_job(job: Job, checkpoint: Path, say) -> None:
    t0 = time.monotonic()
    job.proc.send_signal(signal.SIGTERM)
    code = job.proc.wait(timeout=300)
    job.reader.join(30)  # the last lines, read once the pipe closed
    stops = [ln for ln in job.other if ln.startswith("rebalancer run: stopped")]
    say(f"SIGTERM: exit {code} after {time.monotonic() - t0:.1f}s; lease file left: "
        f"{(checkpoint / 'rebalancer.lease').exists()}; stop line(s): {stops}")

"""A stop that says so: ``rebalancer run`` stopped by SIGTERM (Kubernetes, systemd) or by Ctrl-C at
a terminal (SIGINT to the whole foreground process group) ends at a batch boundary with exit status
0, one line saying why and what was committed, no traceback, and its lease given back; a restart
continues without duplicates.

One checkpoint, three runs in turn (one job start each): SIGTERM once the first recommendations are
in; a restart whose first batch holds in its stateful step, stopped at once by a second SIGTERM; and
a restart that replays that batch, stopped by Ctrl-C once its recommendations are in. Every stop
line is checked against what the tables gained in that run, and each run's batches against the one
before.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import uuid
from pathlib import Path

import pytest

from streaming.config import Config
from streaming.operations.lease import LEASE_FILE

from .jobrun import cli_args, count, membership_phase, table, wait_until
from .test_job import job_config, produce

GROUPS = ["s0", "s1", "s2"]
STOP_LINE = re.compile(r"^rebalancer run: stopped by (SIG\w+)(, then at once on a second signal)? "
                       r"after (?:batch (\d+)|no batch) \((\d+) batches? this run, (\d+) "
                       r"recommendations? and (\d+) rejected committed\); lease released(; a batch "
                       r"still running was interrupted, the next run replays it)?$")


def _start(jc: Config, checkpoint: str, tmp_path: Path, name: str, grace_s: int,
           env: dict[str, str] | None = None
           ) -> tuple[subprocess.Popen, Path, Path]:
    """``rebalancer run`` (streaming, a batch every 500 ms) on ``checkpoint``, its output in files
    ``name.*``."""
    args = cli_args(jc, available_now=False, checkpoint=checkpoint,
                    extra={"job.trigger_interval": "500 milliseconds",
                           "job.stop_grace_s": str(grace_s)})
    out, err = tmp_path / f"{name}.out", tmp_path / f"{name}.err"
    # its own session, so a signal to its process group is what a terminal's Ctrl-C sends to a
    # foreground job
    proc = subprocess.Popen(args, stdout=out.open("w"), stderr=err.open("w"),
                            start_new_session=True, env={**os.environ, **(env or {})})
    return proc, out, err


def _stop_line(code: int, out: Path, err: Path) -> re.Match:
    """Exit 0, no Python traceback, and exactly one stop line: that line, matched by
    :data:`STOP_LINE`."""
    stdout, stderr = out.read_text(), err.read_text()
    assert code == 0, (code, stdout[-3000:], stderr[-3000:])
    assert "Traceback" not in stderr and "Traceback" not in stdout, stderr[-5000:]
    stops = [m for m in map(STOP_LINE.match, (stdout + stderr).splitlines()) if m]
    assert len(stops) == 1, (stdout[-3000:], stderr[-3000:])
    return stops[0]


def _stopped_by(spark, jc: Config, checkpoint: str, tmp_path: Path, signame: str) -> re.Match:
    """A run on ``checkpoint`` (its new phase produced), stopped by ``signame`` once that phase's
    recommendations, one per group, are in the table: one signal, a batch boundary within the grace,
    the tables hold exactly what its line says this run committed. Its stop line."""
    recs_before = count(spark, jc, "recommendations")
    rejected_before = count(spark, jc, "rejected_events")
    proc, out, err = _start(jc, checkpoint, tmp_path, signame, grace_s=60)
    try:
        # generous: a busy 2-core machine
        wait_until(lambda: count(spark, jc, "recommendations") >= recs_before + len(GROUPS)
                   or proc.poll() is not None, 900, "the run's recommendations")
        assert proc.poll() is None, err.read_text()
        if signame == "SIGTERM":  # Kubernetes and systemd signal the process
            proc.send_signal(signal.SIGTERM)
        else:
            # Ctrl-C: the terminal signals the foreground process group (the JVM and Python
            # workers too)
            os.killpg(proc.pid, signal.SIGINT)
        code = proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    stop = _stop_line(code, out, err)
    sig, twice, _, _, recs, rejected, interrupted = stop.groups()
    assert sig == signame and not twice and not interrupted, stop.group(0)
    assert not (Path(checkpoint) / LEASE_FILE).exists()
    assert count(spark, jc, "recommendations") - recs_before == int(recs) == len(GROUPS)
    assert count(spark, jc, "rejected_events") - rejected_before == int(rejected)
    return stop


def _stopped_twice(spark, jc: Config, checkpoint: str, tmp_path: Path) -> None:
    """A run whose first batch holds in the stateful step for 10 minutes
    (``REBALANCER_FAULT=stateful~600``): the first SIGTERM waits for a boundary that the grace (10
    minutes too) would not reach soon; a second one stops the query at once, the line says so and
    that the batch was interrupted, and the batch wrote nothing."""
    recs_before = count(spark, jc, "recommendations")
    proc, out, err = _start(jc, checkpoint, tmp_path, "twice", grace_s=600,
                            env={"REBALANCER_FAULT": "stateful~600"})
    try:
        wait_until(lambda: "REBALANCER_FAULT: holding at stateful" in err.read_text()
                   or proc.poll() is not None, 900, "the stateful step to hold")
        assert proc.poll() is None, err.read_text()[-3000:]
        proc.send_signal(signal.SIGTERM)
        # the first waits for the boundary: not within 5 s
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=5)
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=300)  # at once: far within the hold's 600 s
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # no traceback either: the interrupted batch's errors are not the operator's
    stop = _stop_line(code, out, err)
    sig, twice, last, n, recs, _, interrupted = stop.groups()
    assert (sig, bool(twice), last, n, bool(interrupted)) == ("SIGTERM", True, None, "0",
                                                              True), stop.group(0)
    assert not (Path(checkpoint) / LEASE_FILE).exists()
    # the held batch wrote nothing
    assert int(recs) == 0 and count(spark, jc, "recommendations") == recs_before


def test_signals_stop_the_job_at_a_batch_boundary_with_one_line_and_each_restart_continues(
        spark, cfg, tmp_path):
    jc = job_config(cfg, f"stop{uuid.uuid4().hex[:4]}")
    checkpoint = jc.checkpoint_path("stop")

    produce(jc, [e for phase in (0, 1) for e in membership_phase(GROUPS, phase)])
    first = _stopped_by(spark, jc, checkpoint, tmp_path, "SIGTERM")
    # a fresh checkpoint: batches 0..last
    assert int(first.group(4)) == int(first.group(3)) + 1, first.group(0)

    produce(jc, membership_phase(GROUPS, 2))
    _stopped_twice(spark, jc, checkpoint, tmp_path)

    # the next run replays the interrupted batch and goes on from the first run's last: each
    # recommendation once
    third = _stopped_by(spark, jc, checkpoint, tmp_path, "SIGINT")
    assert int(third.group(4)) == int(third.group(3)) - int(first.group(3)), \
        (first.group(0), third.group(0))
    rows = table(spark, jc, "recommendations")
    assert len(rows) == 2 * len(GROUPS) \
        and len({r["recommendation_id"] for r in rows}) == len(rows), rows

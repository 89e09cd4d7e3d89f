"""Faults and state lifetime of the streaming job.

- killed mid-run (SIGKILL to the driver process group, no graceful stop) and restarted from its
  checkpoint, the job ends with the same recommendations table as an uninterrupted run;
- a group silent past the timeout leaves the state.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import time
import uuid

from streaming import events as ev
from streaming.job import query, sinks

from .test_job import STEP, T0, job_config, lag_poll, member, produce

COLUMNS = ["group", "version", "recommendation_id", "event_time", "triggers", "assignor", "before_max_lag",
           "after_max_lag", "before_cross_rack", "after_cross_rack", "partitions_moved", "lag_moved"]


def workload_events(groups: int = 6, polls: int = 40) -> list[dict]:
    """Groups whose hot partitions wander, so each gets several lag-skew recommendations."""
    out = []
    for g in range(groups):
        name = f"app-{g}"
        out.append(ev.members_event(T0, name, 1, "range", [
            member("C0", [("t0", 0), ("t0", 1), ("t0", 2)]), member("C1", [("t0", 3), ("t0", 4), ("t0", 5)])]))
        for i in range(polls):
            hot = {(g + i // 10) % 6, (g + i // 10 + 1) % 6}
            out += lag_poll(T0 + i * STEP, name, {p: 8000 if p in hot else 200 for p in range(6)})
    return out


def job_args(jc, tables: str, checkpoints: str) -> list[str]:
    conf = {
        "kafka.bootstrap_servers": jc.kafka.bootstrap_servers, "kafka.lag_topic": jc.kafka.lag_topic,
        "kafka.metadata_topic": jc.kafka.metadata_topic, "kafka.trigger_topic": jc.kafka.trigger_topic,
        "paths.tables": tables, "paths.checkpoints": checkpoints,
        "job.max_offsets_per_trigger": "150", "job.query_name": "recovery",
        "policy.cooldown_s": "60", "spark.master": "local[2]", "spark.sql.shuffle.partitions": "2",
    }
    args = [sys.executable, "-m", "streaming.cli", "run", "--available-now"]
    for k, v in conf.items():
        args += ["--conf", f"{k}={v}"]
    return args


def read_table(spark, path: str) -> list[tuple]:
    df = spark.read.format("delta").load(f"{path}/{sinks.RECOMMENDATIONS}").select(*COLUMNS)
    return sorted(tuple(r) for r in df.collect())


def test_killed_job_restarts_from_checkpoint_with_no_duplicate_and_none_missing(spark, cfg, tmp_path):
    jc = job_config(cfg, uuid.uuid4().hex[:6])
    produce(jc, workload_events())

    whole = subprocess.run(job_args(jc, str(tmp_path / "a"), str(tmp_path / "a-ck")), capture_output=True,
                           text=True, timeout=600)
    assert whole.returncode == 0, whole.stderr[-3000:]
    batches = [ln for ln in whole.stdout.splitlines() if ln.startswith("batch ")]
    assert len(batches) >= 6, whole.stdout  # rate-limited into many batches

    # the same job, killed hard after its third batch, then restarted on its checkpoint
    args = job_args(jc, str(tmp_path / "b"), str(tmp_path / "b-ck"))
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            start_new_session=True)
    seen = 0
    deadline = time.monotonic() + 400
    for line in proc.stdout:
        if line.startswith("batch "):
            seen += 1
            if seen == 3:
                break
        assert time.monotonic() < deadline, "the job made no progress"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(30)
    assert proc.returncode == -signal.SIGKILL

    again = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]

    a = read_table(spark, str(tmp_path / "a"))
    b = read_table(spark, str(tmp_path / "b"))
    assert len(a) >= 12, a  # each of the 6 groups recommended more than once
    keys = [(r[0], r[1]) for r in b]
    assert len(keys) == len(set(keys)), "duplicate recommendation after the restart"
    assert b == a


def test_group_silent_past_the_timeout_leaves_the_state(spark, cfg):
    jc = job_config(cfg, uuid.uuid4().hex[:6])
    jc = dataclasses.replace(jc, job=dataclasses.replace(jc.job, group_timeout_s=600, watermark_delay="1 minute"))
    events = [ev.members_event(T0, "silent", 1, "range", [member("C0", [("t0", 0)])]),
              *lag_poll(T0, "silent", {0: 10})]
    # another group keeps talking for 20 minutes of event time: the watermark passes silent's deadline
    events.append(ev.members_event(T0, "active", 1, "range", [member("C0", [("t0", 0)])]))
    for i in range(0, 20 * 60_000 // STEP, 6):
        events += lag_poll(T0 + i * STEP, "active", {0: 10})
    produce(jc, events)
    checkpoint = jc.checkpoint_path("timeout")
    query.run(spark, jc, available_now=True, checkpoint=checkpoint)

    groups = {r["key"]["group"] for r in spark.read.format("statestore").load(checkpoint).collect()}
    assert groups == {"active"}

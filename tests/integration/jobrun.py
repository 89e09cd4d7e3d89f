"""Helpers of the fault and chaos tests: events whose outcome does not depend on batch boundaries,
the job as a ``rebalancer run`` child process, and the job's outputs (tables and the trigger feed)
read back."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable

from streaming.config import Config
from streaming.contracts import events as ev
from streaming.job import sinks

from .test_job import STEP, T0, lag_poll, member

TEAM = [("C0", [0, 1]), ("C1", [2, 3]), ("C2", [4, 5])]


def membership_phase(groups: list[str], phase: int) -> list[dict]:
    """Per group at event time T0 + phase x 10 polls: a membership change (one member more or less
    than the phase before) and a few even lag polls. Phase 0 is the baseline; every later phase
    gives exactly one ``membership_change`` recommendation per group, whatever the batches."""
    out = []
    ts0 = T0 + phase * 10 * STEP
    size = 2 + phase % 2  # 2, 3, 2, 3 ... members
    for g in groups:
        members = [member(mid, [("t0", p) for p in parts]) for mid, parts in TEAM[:size]]
        if size == 2:  # the two members share all six partitions
            members = [member("C0", [("t0", p) for p in (0, 1, 2)]),
                       member("C1", [("t0", p) for p in (3, 4, 5)])]
        out.append(ev.members_event(ts0, g, phase + 1, "range", members))
        for i in range(3):
            out += lag_poll(ts0 + i * STEP, g, {p: 100 for p in range(6)})
    return out


def bad_records(phase: int, n: int) -> list[tuple[bytes, bytes]]:
    """``n`` malformed records (each ends in rejected_events once)."""
    return [(b"bad", f"not json {phase}-{i}".encode()) for i in range(n)]


def cli_args(cfg: Config, *, available_now: bool, checkpoint: str,
             extra: dict[str, str] | None = None) -> list[str]:
    conf = {
        "kafka.bootstrap_servers": cfg.kafka.bootstrap_servers,
        "kafka.lag_topic": cfg.kafka.lag_topic,
        "kafka.metadata_topic": cfg.kafka.metadata_topic,
        "kafka.trigger_topic": cfg.kafka.trigger_topic,
        "paths.tables": cfg.paths.tables, "paths.checkpoints": cfg.paths.checkpoints,
        "job.query_name": cfg.job.query_name, "job.watermark_delay": cfg.job.watermark_delay,
        "job.group_timeout_s": str(cfg.job.group_timeout_s),
        "policy.cooldown_s": str(cfg.policy.cooldown_s), "policy.mode": cfg.policy.mode,
        "spark.master": "local[2]", "spark.sql.shuffle.partitions": "2",
        "spark.ui.enabled": "false",
    } | (extra or {})
    args = [sys.executable, "-m", "streaming.cli", "run", "--checkpoint", checkpoint]
    if available_now:
        args.append("--available-now")
    for k, v in conf.items():
        args += ["--conf", f"{k}={v}"]
    return args


def table(spark, cfg: Config, name: str) -> list:
    return spark.read.format("delta").load(cfg.table_path(name)).collect()


def count(spark, cfg: Config, name: str) -> int:
    """Rows in the table, 0 while the job has not created it yet."""
    from pyspark.errors import AnalysisException

    try:
        return spark.read.format("delta").load(cfg.table_path(name)).count()
    except AnalysisException:
        return 0


def feed(cfg: Config) -> list[dict]:
    """Every message of the trigger feed topic (values as dicts)."""
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(cfg.kafka.trigger_topic, bootstrap_servers=cfg.kafka.bootstrap_servers,
                             auto_offset_reset="earliest", consumer_timeout_ms=5000, group_id=None)
    try:
        return [json.loads(m.value) for m in consumer]
    finally:
        consumer.close()


def wait_until(check: Callable[[], bool], timeout_s: float, what: str,
               every_s: float = 1.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"timed out after {timeout_s:.0f}s waiting for {what}"
        time.sleep(every_s)


def row_key(r) -> tuple:
    """A recommendations or rejected_events row as a comparable tuple of every column."""
    return tuple(_plain(v) for v in r)


def _plain(v):
    if hasattr(v, "asDict"):
        return tuple(sorted((k, _plain(x)) for k, x in v.asDict().items()))
    if isinstance(v, list):
        return tuple(_plain(x) for x in v)
    return v


__all__ = ["STEP", "T0", "bad_records", "cli_args", "count", "feed", "membership_phase", "row_key",
           "sinks", "table", "wait_until"]

"""Faults end in recovery or in a clear error, never in silent damage.

- Kafka unreachable at start: retried with backoff, then a one-line error and exit status 1;
- the only broker stopped mid-run and started again: the job restarts its query by itself and
  everything is processed exactly once;
- tables missing (with a checkpoint that wrote to them), not ours, or without the change feed:
  refused at start, never recreated; a table deleted while the job runs stops it, not recreated by
  an append;
- a new checkpoint on existing tables: versions continue, recommendation ids never repeat;
- a second job on the same checkpoint: refused, the first goes on.
"""

from __future__ import annotations

import dataclasses
import logging
import shutil
import subprocess
import sys
import threading
import uuid
from collections import Counter
from pathlib import Path

import pytest

from streaming.contracts.tables import RECOMMENDATIONS, RECOMMENDATIONS_DDL, REJECTED
from streaming.embedded.cluster import KafkaCluster, free_port
from streaming.errors import JobError
from streaming.job import query

from .jobrun import bad_records, cli_args, count, feed, membership_phase, table, wait_until
from .test_job import job_config, produce

GROUPS = ["g0", "g1", "g2"]


def test_kafka_unreachable_at_start_is_retried_then_a_clear_error():
    port = free_port()  # nothing listens there
    proc = subprocess.run(
        [sys.executable, "-m", "streaming.cli", "run", "--available-now",
         "--conf", f"kafka.bootstrap_servers=127.0.0.1:{port}", "--conf", "job.start_retries=3",
         "--conf", "job.retry_backoff_s=0.2", "--conf", "job.start_timeout_s=1"],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert f"Kafka at 127.0.0.1:{port} unreachable" in proc.stderr
    assert "retrying in 0.2s (attempt 1/3)" in proc.stderr and "(attempt 2/3)" in proc.stderr
    assert f"rebalancer run: error: Kafka at 127.0.0.1:{port} unreachable after 3 attempts" \
        in proc.stderr
    assert "Traceback" not in proc.stderr


class Failures(logging.Handler):
    """Counts the supervisor's restart warnings."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def run_in_thread(spark, cfg, checkpoint: str) -> tuple[threading.Thread, dict]:
    result: dict = {"stop": threading.Event()}

    def target() -> None:
        try:
            result["batches"] = query.run(spark, cfg, checkpoint=checkpoint, stop=result["stop"])
        except BaseException as e:  # reported to the test
            result["error"] = e

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, result


def stop_query(thread: threading.Thread, result: dict) -> None:
    result["stop"].set()  # the run stops its query and restarts nothing
    thread.join(120)
    assert not thread.is_alive()


def assert_exactly_once(spark, jc, phases: int, n_bad: int) -> None:
    recs = table(spark, jc, RECOMMENDATIONS)
    assert sorted((r["group"], r["version"]) for r in recs) == [(g, v) for g in GROUPS
                                                                for v in range(1, phases)]
    assert all(r["triggers"] == ["membership_change"] for r in recs)
    assert len({r["recommendation_id"] for r in recs}) == len(recs)
    rejected = table(spark, jc, REJECTED)
    assert len(rejected) == n_bad
    assert len({(r["source_partition"], r["source_offset"]) for r in rejected}) == n_bad
    assert {m["recommendation_id"] for m in feed(jc)} == {r["recommendation_id"] for r in recs}


def test_broker_outage_mid_run_the_job_restarts_itself_and_loses_nothing(spark, cfg, tmp_path):
    cluster = KafkaCluster(brokers=1, base_dir=tmp_path / "kafka")
    cluster.start()
    failures = Failures()
    logging.getLogger("streaming.operations.supervisor").addHandler(failures)
    tag = uuid.uuid4().hex[:6]
    base = job_config(cfg, tag)
    jc = dataclasses.replace(
        base,
        kafka=dataclasses.replace(base.kafka, bootstrap_servers=cluster.bootstrap_servers, options={
            # the source's offset lookups and the feed's producer give up in seconds, not minutes
            # (Kafka's admin client wants default.api.timeout.ms >= request.timeout.ms)
            "default.api.timeout.ms": "4000", "request.timeout.ms": "3000",
            "max.block.ms": "4000"}),
        job=dataclasses.replace(base.job, trigger_interval="1 second", start_retries=2,
                                retry_backoff_s=1, retry_backoff_max_s=3, max_restarts=100))
    checkpoint = jc.checkpoint_path("outage")
    thread = None
    try:
        produce(jc, membership_phase(GROUPS, 0) + membership_phase(GROUPS, 1), bad_records(1, 5))
        thread, result = run_in_thread(spark, jc, checkpoint)
        wait_until(lambda: count(spark, jc, REJECTED) == 5
                   and count(spark, jc, RECOMMENDATIONS) == len(GROUPS), 180, "the first phase")

        cluster.stop_broker(1)
        wait_until(lambda: any("restarting from the checkpoint" in ln for ln in failures.lines),
                   180, "the query to fail while the broker is down")
        assert thread.is_alive() and "error" not in result
        cluster.start_broker(1)

        produce(jc, membership_phase(GROUPS, 2), bad_records(2, 4))
        wait_until(lambda: count(spark, jc, REJECTED) >= 9
                   and count(spark, jc, RECOMMENDATIONS) >= 2 * len(GROUPS), 240,
                   "the second phase")
        stop_query(thread, result)
        assert "error" not in result, result.get("error")
        assert_exactly_once(spark, jc, phases=3, n_bad=9)
    finally:
        logging.getLogger("streaming.operations.supervisor").removeHandler(failures)
        if thread is not None and thread.is_alive():
            stop_query(thread, result)
        cluster.stop()


def available_now(spark, jc, checkpoint: str) -> None:
    query.run(spark, jc, available_now=True, checkpoint=checkpoint)


def test_missing_or_foreign_tables_are_refused_and_never_recreated(spark, cfg):
    jc = job_config(cfg, uuid.uuid4().hex[:6])
    produce(jc, membership_phase(GROUPS, 0) + membership_phase(GROUPS, 1), bad_records(1, 2))
    checkpoint = jc.checkpoint_path("tables")
    available_now(spark, jc, checkpoint)

    # the checkpoint has committed batches: a missing table is an error, and stays missing
    rejected = Path(jc.table_path(REJECTED))
    shutil.rmtree(rejected)
    with pytest.raises(JobError,
                       match=r"table rejected_events at .* is missing but checkpoint .* committed"):
        available_now(spark, jc, checkpoint)
    assert not rejected.exists()

    # a table of someone else's (other types, a column more), or ours without the change feed
    other = job_config(cfg, uuid.uuid4().hex[:6])
    spark.sql(f"CREATE TABLE delta.`{other.table_path(RECOMMENDATIONS)}` "
              "(`group` STRING, version INT, note STRING) USING DELTA")
    with pytest.raises(JobError, match="recommendations at .* does not have the job's schema: "
                                       "column batch_id missing.*column version is int, "
                                       "expected bigint.*unexpected column note"):
        available_now(spark, other, other.checkpoint_path("c"))
    plain = job_config(cfg, uuid.uuid4().hex[:6])
    spark.sql(f"CREATE TABLE delta.`{plain.table_path(RECOMMENDATIONS)}` ({RECOMMENDATIONS_DDL}) "
              "USING DELTA")
    with pytest.raises(JobError, match="recommendations at .* has the Change Data Feed off"):
        available_now(spark, plain, plain.checkpoint_path("c"))


def test_table_deleted_while_running_stops_the_job_without_recreating_it(spark, cfg):
    jc = job_config(cfg, uuid.uuid4().hex[:6])
    jc = dataclasses.replace(jc, job=dataclasses.replace(jc.job, trigger_interval="1 second",
                                                         max_restarts=5))
    produce(jc, membership_phase(GROUPS, 0) + membership_phase(GROUPS, 1))
    thread, result = run_in_thread(spark, jc, jc.checkpoint_path("deleted"))
    try:
        wait_until(lambda: count(spark, jc, RECOMMENDATIONS) == len(GROUPS), 180, "the first batch")
        recs = Path(jc.table_path(RECOMMENDATIONS))
        shutil.rmtree(recs)
        produce(jc, membership_phase(GROUPS, 2))
        thread.join(180)
        assert not thread.is_alive()
    finally:
        if thread.is_alive():
            stop_query(thread, result)
    error = result.get("error")
    assert isinstance(error, JobError), error
    assert "table recommendations at" in str(error) \
        and "was deleted while the job ran" in str(error)
    assert "Traceback" not in str(error)
    assert not recs.exists()


def test_new_checkpoint_continues_versions_and_never_repeats_an_id(spark, cfg):
    jc = job_config(cfg, uuid.uuid4().hex[:6])
    produce(jc, membership_phase(GROUPS, 0) + membership_phase(GROUPS, 1)
            + membership_phase(GROUPS, 2))
    available_now(spark, jc, jc.checkpoint_path("first"))
    first = table(spark, jc, RECOMMENDATIONS)
    assert sorted((r["group"], r["version"]) for r in first) == [(g, v) for g in GROUPS
                                                                 for v in (1, 2)]

    # the checkpoint is lost: a new one replays the topics (plus new events) into the same tables
    produce(jc, membership_phase(GROUPS, 3))
    available_now(spark, jc, jc.checkpoint_path("second"))
    both = table(spark, jc, RECOMMENDATIONS)
    assert len(both) == len(first) + 3 * len(GROUPS)
    assert sorted((r["group"], r["version"]) for r in both) == [(g, v) for g in GROUPS
                                                                for v in range(1, 6)]
    ids = Counter(r["recommendation_id"] for r in both)
    assert max(ids.values()) == 1
    assert Counter(m["recommendation_id"] for m in feed(jc)).keys() == ids.keys()


def test_second_job_on_the_same_checkpoint_is_refused_and_the_first_goes_on(spark, cfg):
    jc = job_config(cfg, uuid.uuid4().hex[:6])
    jc = dataclasses.replace(jc, job=dataclasses.replace(jc.job, trigger_interval="1 second"))
    checkpoint = jc.checkpoint_path("shared")
    produce(jc, membership_phase(GROUPS, 0) + membership_phase(GROUPS, 1))
    first, printer = query.start(spark, jc, checkpoint=checkpoint)
    try:
        wait_until(lambda: count(spark, jc, RECOMMENDATIONS) == len(GROUPS), 180, "the first job")
        second = subprocess.run(cli_args(jc, available_now=True, checkpoint=checkpoint),
                                capture_output=True, text=True, timeout=300)
        assert second.returncode == 1, second.stderr[-3000:]
        assert f"checkpoint {checkpoint} is in use by another job" in second.stderr
        assert "Traceback" not in second.stderr
        # the first job still runs and still writes
        assert first.isActive
        produce(jc, membership_phase(GROUPS, 2))
        wait_until(lambda: count(spark, jc, RECOMMENDATIONS) == 2 * len(GROUPS), 180,
                   "the first job to go on")
        assert first.isActive
    finally:
        first.stop()
        spark.streams.removeListener(printer)

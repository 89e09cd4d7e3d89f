"""Restart and give-up logic of the job (supervisor, start retries, lease staleness) without a
JVM."""

from __future__ import annotations

import pytest
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from streaming.errors import ConfigError, JobError, KafkaUnreachableError
from streaming.kafka_clients.retry import backoff_delay, retry_call
from streaming.operations.delta_tables import schema_differences
from streaming.operations.lease import holder_state
from streaming.operations.supervisor import Attempt, is_fatal, one_line, supervise


class Transient(Exception):
    pass


def scripted(outcomes: list) -> tuple:
    """An attempt function that returns (or raises) the scripted outcomes in turn, and the call
    log."""
    calls: list[int] = []

    def attempt() -> Attempt:
        calls.append(len(calls))
        out = outcomes[len(calls) - 1]
        if isinstance(out, BaseException):
            raise out
        return out

    return attempt, calls


def test_backoff_doubles_from_base_up_to_the_cap():
    assert [backoff_delay(k, 2.0, 30.0) for k in range(1, 7)] == [2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    assert backoff_delay(10_000, 1.0, 60.0) == 60.0  # no overflow on a long outage


def test_supervisor_restarts_after_transient_failures_and_stops_when_clean():
    attempt, calls = scripted([Attempt(Transient("broker gone"), False),
                               Attempt(Transient("again"), False), Attempt(None, True)])
    waits: list[float] = []
    assert supervise(attempt, max_restarts=3, base_s=1, max_s=10, sleep=waits.append) == 2
    assert len(calls) == 3 and waits == [1.0, 2.0]


def test_supervisor_gives_up_after_max_failures_without_progress():
    attempt, calls = scripted([Attempt(Transient("x"), False)] * 10)
    waits: list[float] = []
    with pytest.raises(JobError, match="3 times in a row without completing a batch.*Transient: x"):
        supervise(attempt, max_restarts=2, base_s=1, max_s=10, sleep=waits.append)
    assert len(calls) == 3 and waits == [1.0, 2.0]


def test_progress_resets_the_failure_count_so_a_long_healthy_job_is_not_killed_by_rare_faults():
    outcomes = [Attempt(Transient("x"), False),
                Attempt(Transient("x"), True)] * 5 + [Attempt(None, True)]
    attempt, _ = scripted(outcomes)
    waits: list[float] = []
    assert supervise(attempt, max_restarts=2, base_s=1, max_s=10, sleep=waits.append) == 10
    assert max(waits) == 2.0  # backoff restarts after progress


def test_zero_restarts_means_the_first_failure_ends_the_job():
    attempt, calls = scripted([Attempt(Transient("x"), False), Attempt(None, True)])
    with pytest.raises(JobError):
        supervise(attempt, max_restarts=0, base_s=1, max_s=1, sleep=lambda s: None)
    assert len(calls) == 1


def test_fatal_errors_end_at_once_with_their_own_message():
    attempt, calls = scripted([JobError("table recommendations at /t is missing")])
    with pytest.raises(JobError, match="recommendations at /t is missing"):
        supervise(attempt, max_restarts=5, base_s=1, max_s=1, sleep=lambda s: None)
    assert len(calls) == 1

    # our error raised in foreachBatch reaches the driver wrapped in Spark's exception text
    wrapped = Transient(
        "[STREAM_FAILED] Query [id = 1, runId = 2] terminated with exception: An exception was "
        "raised by the Python Proxy.\nTraceback ...\nstreaming.errors.JobError: "
        "table rejected_events at /t/rejected_events was deleted while the job "
        "ran; not recreating it")
    attempt, calls = scripted([Attempt(wrapped, True)])
    with pytest.raises(JobError,
                       match="^table rejected_events at /t/rejected_events was deleted") as info:
        supervise(attempt, max_restarts=5, base_s=1, max_s=1, sleep=lambda s: None)
    assert "Traceback" not in str(info.value)

    schema = Transient(
        "[DELTA_FAILED_TO_MERGE_FIELDS] Failed to merge fields 'version' and 'version'")
    attempt, calls = scripted([Attempt(schema, True)])
    with pytest.raises(JobError, match="restart cannot fix it.*DELTA_FAILED_TO_MERGE_FIELDS"):
        supervise(attempt, max_restarts=5, base_s=1, max_s=1, sleep=lambda s: None)
    assert len(calls) == 1


def test_kafka_unreachable_is_fatal_at_the_first_start_only():
    down = KafkaUnreachableError("Kafka at h:1 unreachable after 3 attempts")
    assert is_fatal(down, first_attempt=True) and not is_fatal(down, first_attempt=False)
    assert is_fatal(ConfigError("bad"), first_attempt=False)
    assert is_fatal(Transient("Failed to create new KafkaAdminClient\nCaused by: "
                              "org.apache.kafka.common.config.ConfigException: "
                              "default.api.timeout.ms below request.timeout.ms"),
                    first_attempt=False)
    assert not is_fatal(Transient("org.apache.kafka.common.errors.TimeoutException: Timed out"),
                        first_attempt=False)
    attempt, _ = scripted([Attempt(Transient("broker gone"), True), down, Attempt(None, True)])
    assert supervise(attempt, max_restarts=3, base_s=1, max_s=1, sleep=lambda s: None) == 2


def test_one_line_masks_secrets_and_drops_the_stack():
    e = Transient(
        "[STREAM_FAILED] Query [id = a-b, runId = c] terminated: login failed for password s3cr3t\n"
        "\tat org.apache.kafka.Foo(Foo.java:1)\n" + "x" * 1000)
    line = one_line(e, secrets=["s3cr3t"])
    assert "s3cr3t" not in line and "***" in line and "\n" not in line and "runId" not in line
    assert line.startswith("Transient: [STREAM_FAILED]")
    assert len(one_line(Transient("y" * 1000))) == 300
    py4j = Transient(
        "An error occurred while calling o70.sql.\n: java.io.FileNotFoundException: Jar x.jar not "
        "found\n\tat org.apache.spark.SparkContext.addJar(SparkContext.scala:1)")
    assert one_line(py4j) == ("Transient: An error occurred while calling o70.sql. "
                              ": java.io.FileNotFoundException: Jar x.jar not found")


def test_retry_call_retries_then_raises_the_clear_error_without_a_chained_traceback():
    failures = iter([OSError("refused"), OSError("refused")])
    warnings: list[str] = []

    def connect() -> str:
        err = next(failures, None)
        if err:
            raise err
        return "up"

    waits: list[float] = []
    kw = dict(base_s=1.0, max_s=3.0, retry_on=(OSError,),
              describe=lambda e, w, k, n: (
                  warnings.append(f"retrying in {w:.0f}s (attempt {k}/{n})") or ""),
              give_up=lambda e, n: KafkaUnreachableError(f"unreachable after {n} attempts"),
              sleep=waits.append)
    assert retry_call(connect, attempts=5, **kw) == "up"
    assert (waits == [1.0, 2.0]
            and warnings == ["retrying in 1s (attempt 1/5)", "retrying in 2s (attempt 2/5)"])

    def never() -> None:
        raise OSError("refused")

    with pytest.raises(KafkaUnreachableError, match="after 3 attempts") as info:
        retry_call(never, attempts=3, **kw)
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_lease_holder_states():
    me = {"host": "h1", "pid": 10}
    other = {"run_id": "r", "host": "h2", "pid": 20}
    now = 1_000_000
    assert holder_state(None, None, now, 60, "h1", 10) == "free"
    assert holder_state(me, now, now, 60, "h1", 10) == "ours"
    assert holder_state(other, now - 1_000, now, 60, "h1", 10) == "held"
    assert holder_state(other, now - 61_000, now, 60, "h1", 10) == "stale"
    # same host: a dead holder is stale at once, a live one is not
    local = {"run_id": "r", "host": "h1", "pid": 99}
    assert holder_state(local, now, now, 60, "h1", 10, pid_alive=lambda pid: False) == "stale"
    assert holder_state(local, now, now, 60, "h1", 10, pid_alive=lambda pid: True) == "held"


def test_schema_differences_name_each_column():
    ours = StructType([StructField("group", StringType()), StructField("version", LongType())])
    assert schema_differences(ours, ours) == []
    theirs = StructType([StructField("group", StringType(), False),
                         StructField("version", IntegerType()), StructField("extra", StringType())])
    assert (schema_differences(ours, theirs)
            == ["column version is int, expected bigint", "unexpected column extra"])
    assert (schema_differences(ours, StructType([StructField("group", StringType())]))
            == ["column version missing"])


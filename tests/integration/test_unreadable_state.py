"""State that cannot be read stops the job with one error naming the way out, on real Spark: the
stateful step's own code meets a bucket value it cannot read in a Python worker, the query fails,
and the supervisor turns Spark's wrapping of the worker's traceback into that one error (no restart,
no rejected records)."""

from __future__ import annotations

import pytest
from pyspark.sql.streaming.state import GroupStateTimeout

from streaming.config import PolicySettings
from streaming.errors import JobError
from streaming.job import buckets
from streaming.operations.supervisor import Attempt, fatal_cause, is_fatal, supervise
from streaming.state.errors import UNREADABLE, WAY_OUT

BUCKETS = 8


def bucket_step(key, chunks, state):
    """The job's bucket step, after a first call that leaves a value no version of it wrote."""
    if not state.exists:
        list(chunks)
        state.update((b"written by no version of the job",))
        return
    update = buckets.make_update(PolicySettings(), 600_000, BUCKETS)
    yield from update(key, chunks, state)


def test_a_bucket_that_cannot_be_read_ends_the_job_with_the_way_out(spark, tmp_path):
    rows = (spark.readStream.format("rate").option("rowsPerSecond", 5).option("numPartitions", 1)
            .load().selectExpr("CAST(3 AS INT) AS bucket", "value"))
    out = rows.groupBy("bucket").applyInPandasWithState(
        bucket_step, "kind STRING", "value BINARY", "append", GroupStateTimeout.NoTimeout)
    query = (out.writeStream.format("noop").option("checkpointLocation", str(tmp_path / "cp"))
             .trigger(processingTime="1 second").start())
    with pytest.raises(Exception) as failed:
        query.awaitTermination(180)
        raise AssertionError("the query did not fail")
    error = failed.value
    assert is_fatal(error, first_attempt=False), str(error)[:2000]
    assert fatal_cause(error).startswith(f"{UNREADABLE}: the state value is not a bucket of groups")
    assert fatal_cause(error).endswith(WAY_OUT)
    with pytest.raises(JobError) as stopped:
        supervise(lambda: Attempt(error, True), max_restarts=5, base_s=0, max_s=0,
                  sleep=lambda s: None)
    assert str(stopped.value) == fatal_cause(error)

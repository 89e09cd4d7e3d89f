"""``rebalancer recommendations`` reads the table the real job wrote with deltalake (no JVM) and
prints the same rows as Spark reads, for every filter; a table that is not there is a clear
error."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid

import pytest

from streaming.commands import recommendations
from streaming.contracts import events as ev
from streaming.contracts.tables import RECOMMENDATIONS, RECOMMENDATIONS_DDL
from streaming.job import query

from .test_job import STEP, T0, job_config, lag_poll, member, produce


@pytest.fixture(scope="module")
def written(spark, cfg):
    """Two groups, three recommendations (one group has two versions), written by the real job."""
    jc = job_config(cfg, uuid.uuid4().hex[:6])
    two = [member("C0", [("t0", 0), ("t0", 1)]), member("C1", [("t0", 2), ("t0", 3)])]
    events = [ev.members_event(T0, "skewed", 1, "range", two)]
    for i in range(5):
        events += lag_poll(T0 + i * STEP, "skewed", {0: 9000, 1: 8000, 2: 100, 3: 100})
    events.append(ev.members_event(T0 + 6 * STEP, "skewed", 2, "range", [*two, member("C2", [])]))
    events += lag_poll(T0 + 6 * STEP, "skewed", {0: 9000, 1: 8000, 2: 100, 3: 100})

    parts = lambda racks: [ev.partition_entry(p, 1, [1, 2], r)  # noqa: E731
                           for p, r in enumerate(racks)]
    events.append(ev.partitions_event(T0, "racks", "t0",
                                      parts([["a", "b"], ["b", "c"], ["c", "a"], ["a", "b"]])))
    events.append(ev.members_event(T0, "racks", 1, "range", [
        member("A", [("t0", 0), ("t0", 3)], rack="a"), member("B", [("t0", 1)], rack="b"),
        member("C", [("t0", 2)], rack="c")]))
    events += lag_poll(T0, "racks", {p: 500 for p in range(4)})
    events.append(ev.partitions_event(T0 + STEP, "racks", "t0",
                                      parts([["b", "c"], ["b", "c"], ["c", "a"], ["a", "b"]])))
    events += lag_poll(T0 + STEP, "racks", {p: 500 for p in range(4)})
    produce(jc, events)
    query.run(spark, jc, available_now=True)
    return jc


def cli(jc, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "streaming.cli", "recommendations",
         "--conf", f"paths.tables={jc.paths.tables}",
         *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(("args", "group", "latest", "limit"), [
    ((), None, False, 50),
    (("--latest",), None, True, 50),
    (("--group", "skewed"), "skewed", False, 50),
    (("--group", "racks", "--latest"), "racks", True, 50),
    (("--limit", "2"), None, False, 2),
])
def test_json_output_read_with_deltalake_equals_what_spark_reads(written, spark, args, group,
                                                                 latest, limit):
    out = cli(written, "--format", "json", *args)
    assert out.returncode == 0, out.stderr
    assert "Spark" not in out.stderr  # read with deltalake, no fallback
    got = json.loads(out.stdout)
    path = written.table_path(RECOMMENDATIONS)
    want = json.loads(json.dumps(recommendations.read(spark, path, group, latest, limit),
                                 default=str))
    assert got == want
    assert got, "no rows to compare"


def test_the_job_wrote_what_the_comparison_needs(written, spark):
    rows = recommendations.read(spark, written.table_path(RECOMMENDATIONS), None, False, 50)
    assert sorted((r["group"], r["version"]) for r in rows) == [("racks", 1), ("skewed", 1),
                                                                ("skewed", 2)]
    racks = next(r for r in rows if r["group"] == "racks")
    assert {m["rack"] for m in racks["assignment"]} == {"a", "b", "c"}  # nested structs with values
    # lag in seconds (streaming.policy.lag_seconds), worked out by hand: committed and end offsets
    # of both groups grow 10/s per partition; skewed v1 at its third poll (a 20 s window), racks at
    # its second (10 s)
    skewed = next(r for r in rows if r["group"] == "skewed" and r["version"] == 1)
    assert (skewed["before_catch_up_s"], skewed["after_catch_up_s"], skewed["lag_age_s"]) \
        == (850.0, 450.0, 900.0)
    # racks: every member behind at 10/s per partition, 500 records a partition
    assert racks["before_catch_up_s"] == 50.0 and racks["lag_age_s"] == 50.0
    assert racks["after_catch_up_s"] is not None


def test_an_older_table_gets_the_lag_seconds_columns_and_reads_null(spark, cfg, tmp_path):
    """A recommendations table from before lag in seconds gets the three columns at start; its rows
    read null, and `rebalancer recommendations` prints them. A table with anything else different
    stays an error."""
    from streaming.errors import JobError
    from streaming.operations import delta_tables

    jc = job_config(cfg, f"lagsold{uuid.uuid4().hex[:6]}")
    location = jc.table_path(RECOMMENDATIONS)
    old_ddl = RECOMMENDATIONS_DDL.replace(
        ", before_catch_up_s DOUBLE, after_catch_up_s DOUBLE, lag_age_s DOUBLE", "")
    assert "lag_age_s" not in old_ddl
    spark.sql(f"CREATE TABLE delta.`{location}` ({old_ddl}) USING DELTA "
              "TBLPROPERTIES (delta.enableChangeDataFeed = true)")
    # Delta fills the other columns with NULL
    spark.createDataFrame([("g", 1, "auto")], "`group` STRING, version LONG, mode STRING") \
        .write.format("delta").mode("append").save(location)
    delta_tables.prepare(spark, jc, jc.checkpoint_path("old"))
    (row,) = spark.read.format("delta").load(location).collect()
    assert (row["group"], row["mode"], row["before_catch_up_s"], row["after_catch_up_s"],
            row["lag_age_s"]) == \
        ("g", "auto", None, None, None)
    out = cli(jc, "--format", "json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)[0]["lag_age_s"] is None

    other = job_config(cfg, f"lagsforeign{uuid.uuid4().hex[:6]}")
    spark.sql(f"CREATE TABLE delta.`{other.table_path(RECOMMENDATIONS)}` ({old_ddl}, extra STRING) "
              "USING DELTA TBLPROPERTIES (delta.enableChangeDataFeed = true)")
    with pytest.raises(JobError, match="column lag_age_s missing.*unexpected column extra"):
        delta_tables.prepare(spark, other, other.checkpoint_path("old"))


def test_table_output_and_a_missing_table(written, tmp_path):
    out = cli(written, "--latest")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split()[:2] == ["group", "ver"]
    assert sorted(line.split()[0] for line in lines[1:]) == ["racks", "skewed"]
    missing = subprocess.run(
        [sys.executable, "-m", "streaming.cli", "recommendations",
         "--conf", f"paths.tables=file://{tmp_path}/none"],
        capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and "no recommendations table" in missing.stderr

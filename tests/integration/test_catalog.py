"""The tables by name (``[catalog]``, streaming/catalog.py): the real job, with ``catalog.schema``
set,
creates its tables and registers them and the views; then a second Spark session queries them by
name as a user's notebook would, and ``recommendations``, ``describe``'s reader and ``maintain``
work by name.

The second session is ``spark.newSession()``: its own SQL settings, temporary views and current
schema, over the catalog the job registered in (the test session's, an in-memory one: the shared
SparkSession of the suite starts without Hive, and a second JVM on the embedded Derby metastore
costs ~20 s of the suite's budget). What it proves is what a reader sees: permanent tables and
views, by name, resolving to the job's data; the embedded Derby set-up (its files under
paths.tables, not the working directory) is checked in tests/unit/streaming/test_catalog.py."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import uuid

import pytest

from streaming import catalog
from streaming.commands import live_read, maintain, recommendations
from streaming.contracts import events as ev
from streaming.contracts.tables import RECOMMENDATIONS, REJECTED
from streaming.dev.produce import produce
from streaming.job import query

from .test_job import STEP, T0, job_config, lag_poll, member


@pytest.fixture(scope="module")
def written(spark, cfg):
    tag = uuid.uuid4().hex[:6]
    jc = job_config(cfg, tag)
    jc = dataclasses.replace(jc, catalog=dataclasses.replace(jc.catalog, schema=f"ops_{tag}"))
    two = [member("C0", [("t0", 0), ("t0", 1)]), member("C1", [("t0", 2), ("t0", 3)])]
    events = [ev.members_event(T0, "skewed", 1, "range", two)]
    for i in range(5):
        events += lag_poll(T0 + i * STEP, "skewed", {0: 9000, 1: 8000, 2: 100, 3: 100})
    events.append(ev.members_event(T0 + 6 * STEP, "skewed", 2, "range", [*two, member("C2", [])]))
    events += lag_poll(T0 + 6 * STEP, "skewed", {0: 9000, 1: 8000, 2: 100, 3: 100})
    bad = [
        (b"bad", b"not json"),
        (b"bad", b"[1, 2]"),
        (b"bad", json.dumps({"ts": T0, "group": "bad"}).encode()),
    ]
    produce(jc, events, bad)
    query.run(spark, jc, available_now=True)
    return jc


@pytest.fixture(scope="module")
def notebook(spark, written):
    """Another session of the application: nothing of the job's session but the catalog."""
    other = spark.newSession()
    assert other is not spark
    return other


def test_the_tables_and_views_are_in_the_catalog_by_name(written, notebook):
    schema = written.catalog.schema
    names = {t.name: t.tableType for t in notebook.catalog.listTables(schema)}
    assert names == {
        "recommendations": "EXTERNAL",
        "rejected_events": "EXTERNAL",
        "latest_recommendations": "VIEW",
        "recommendation_status": "VIEW",
        "rejected_last_day": "VIEW",
    }
    by_name = notebook.sql(f"SELECT `group`, version FROM {schema}.recommendations").collect()
    by_path = notebook.read.format("delta").load(written.table_path(RECOMMENDATIONS)).collect()
    assert sorted((r["group"], r["version"]) for r in by_name) == sorted(
        (r["group"], r["version"]) for r in by_path
    )
    assert sorted((r["group"], r["version"]) for r in by_name) == [("skewed", 1), ("skewed", 2)]


def test_the_views_answer_the_common_questions(written, notebook):
    schema = written.catalog.schema
    latest = notebook.sql(
        f"SELECT `group`, version, mode FROM {schema}.latest_recommendations"
    ).collect()
    assert [(r["group"], r["version"], r["mode"]) for r in latest] == [("skewed", 2, "auto")]
    status = notebook.sql(
        f"SELECT version, status FROM {schema}.recommendation_status ORDER BY version"
    ).collect()
    assert [(r["version"], r["status"]) for r in status] == [(1, "superseded"), (2, "published")]
    rejected = notebook.sql(
        f"SELECT reason, records, last_record FROM {schema}.rejected_last_day"
    ).collect()
    stored = notebook.read.format("delta").load(written.table_path(REJECTED)).collect()
    want: dict[str, int] = {}
    for r in stored:
        kind = r["reason"].split(":", 1)[0].strip()
        want[kind] = want.get(kind, 0) + 1
    assert {r["reason"]: r["records"] for r in rejected} == want and sum(want.values()) == 3
    assert all(r["last_record"] > dt.datetime.now() - dt.timedelta(hours=1) for r in rejected)


def test_the_commands_work_by_name(written, notebook, monkeypatch):
    name = catalog.name(written, RECOMMENDATIONS)
    assert name == f"`{written.catalog.schema}`.`recommendations`"
    rows = recommendations.read(notebook, "", "skewed", True, 50, name)
    assert [(r["group"], r["version"]) for r in rows] == [("skewed", 2)]
    # describe's reader: by --table, through Spark (the session is the notebook's; the command
    # would stop it)
    monkeypatch.setattr(
        recommendations,
        "read_with_spark",
        lambda cfg, path, group, latest, limit, local, name=None: recommendations.read(
            notebook, path, group, latest, limit, name
        ),
    )
    assert (
        live_read.latest_recommendations(
            written, "skewed", f"{written.catalog.schema}.latest_recommendations"
        )["skewed"]["version"]
        == 2
    )
    assert recommendations.by_name(written, None, "spark") == name
    assert (
        recommendations.by_name(written, None, "auto") is None
    )  # deltalake reads the same table by path
    lines: list[str] = []
    assert (
        maintain.maintain(notebook, written, 30, optimize=False, vacuum=False, out=lines.append)
        == 0
    )
    assert any(line.startswith("catalog: ") for line in lines)
    assert "rejected_events: 0 row(s) older than 30 days deleted" in lines, lines
    assert (
        catalog.location(notebook, written, RECOMMENDATIONS)
        .rstrip("/")
        .endswith(written.table_path(RECOMMENDATIONS).rstrip("/"))
    )

"""Tables and checkpoints given as ``file://`` URIs (a folder whose name has a space): the real job
writes the Delta tables and the Delta app id file there, through Hadoop's FileSystem, and a restart
keeps the app id."""

from __future__ import annotations

import dataclasses
import json
import uuid

from streaming import paths
from streaming.config import PathSettings
from streaming.contracts import events as ev
from streaming.contracts.tables import RECOMMENDATIONS, REJECTED
from streaming.job import query

from .test_job import STEP, T0, job_config, lag_poll, member, produce


def txn_app_ids(table) -> set[str]:
    """The ``txn`` app ids in a Delta table's log (one per writer that used txnAppId)."""
    ids = set()
    for commit in sorted((table / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            if "txn" in action:
                ids.add(action["txn"]["appId"])
    return ids


def test_job_on_file_uris_with_a_space_writes_there_and_restarts_with_the_same_app_id(
        spark, cfg, tmp_path):
    root = tmp_path / "with space"
    tag = uuid.uuid4().hex[:6]
    jc = job_config(cfg, tag)
    jc = dataclasses.replace(jc, paths=PathSettings(tables=f"file://{root}/tables",
                                                    checkpoints=f"file://{root}/checkpoints"))
    assert jc.table_path(RECOMMENDATIONS) == f"file://{root}/tables/recommendations"
    g = "uri"
    two = [member("C0", [("t0", 0), ("t0", 1)]), member("C1", [("t0", 2), ("t0", 3)])]
    first_run = [ev.members_event(T0, g, 1, "range", two)]
    for i in range(5):
        first_run += lag_poll(T0 + i * STEP, g, {0: 9000, 1: 8000, 2: 100, 3: 100})
    produce(jc, first_run)
    query.run(spark, jc, available_now=True)

    tables, checkpoint = root / "tables", root / "checkpoints" / query.CHECKPOINT
    for name in (RECOMMENDATIONS, REJECTED):
        assert (tables / name / "_delta_log").is_dir(), sorted(p.name for p in root.rglob("*"))
    app_file = checkpoint / "delta_app_id"
    app = app_file.read_text().strip()
    assert app.startswith("kafka-rebalancer-")
    assert (checkpoint / "offsets").is_dir()  # Spark's own checkpoint beside it
    # the URI was not taken for a relative local path under the project root
    assert not (paths.PROJECT_ROOT / "file:").exists()
    recs = spark.read.format("delta").load(jc.table_path(RECOMMENDATIONS)).collect()
    assert [(r["group"], r["triggers"]) for r in recs] == [(g, ["lag_skew"])]

    # restart on the same checkpoint: a member joins, which gives a second recommendation
    three = [*two, member("C2", [])]
    second_run = [ev.members_event(T0 + 10 * STEP, g, 2, "range", three)]
    second_run += lag_poll(T0 + 10 * STEP, g, {0: 9000, 1: 8000, 2: 100, 3: 100})
    produce(jc, second_run)
    query.run(spark, jc, available_now=True)

    assert app_file.read_text().strip() == app
    recs = spark.read.format("delta").load(jc.table_path(RECOMMENDATIONS)).collect()
    assert sorted(r["version"] for r in recs) == [1, 2]
    assert "membership_change" in max(recs, key=lambda r: r["version"])["triggers"]
    # both runs' appends carried the one app id kept in the checkpoint
    assert txn_app_ids(tables / RECOMMENDATIONS) == {f"{app}/{RECOMMENDATIONS}"}

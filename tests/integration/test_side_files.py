"""The files the job keeps beside Spark's checkpoint, left empty (as a kill during an older
release's create-then-write left them), damaged or absent at a restart, on a real Spark session and
real Delta tables: each is rebuilt as it was (floors from the table's history, the app id from the
tables' logs, the layout from the state, the lease taken over), or the job stops with one clear
error; and a checkpoint with all four left empty runs on, its outputs under its own app id (issue
#26: three kills, then every start failed with ``JSONDecodeError``). Kills at each side file's
write: tests/integration/test_chaos.py."""

from __future__ import annotations

import dataclasses
import json
import uuid
from pathlib import Path

import pytest

from streaming.contracts.tables import RECOMMENDATIONS
from streaming.errors import JobError
from streaming.job import buckets, query
from streaming.operations import delta_tables, lease, recover

from .jobrun import membership_phase
from .test_job import job_config, produce, rows

GROUPS = ["s0", "s1"]
DAMAGED: dict[str, str | bytes] = {"empty": "", "garbled": '{"s0": 1, "s1',
                                   "not UTF-8": b'{"s0": 1, "s1": \xff\xfe2}'}


@pytest.fixture(scope="module")
def job(spark, cfg):
    """Checkpoint A drains phases 0-1; then checkpoint B (same tables) phases 0-2: B's floors are
    A's versions, and B wrote versions above them. Returns the config, both checkpoints and B's side
    files."""
    jc = job_config(cfg, uuid.uuid4().hex[:6])
    jc = dataclasses.replace(jc, job=dataclasses.replace(jc.job, state_buckets=4))
    produce(jc, membership_phase(GROUPS, 0) + membership_phase(GROUPS, 1))
    ck_a, ck_b = jc.checkpoint_path("a"), jc.checkpoint_path("b")
    query.run(spark, jc, available_now=True, checkpoint=ck_a)
    produce(jc, membership_phase(GROUPS, 2))
    query.run(spark, jc, available_now=True, checkpoint=ck_b)
    files = {name: (Path(ck_b) / name).read_text() for name in
             (delta_tables.FLOORS_FILE, recover.APP_ID_FILE, buckets.LAYOUT_FILE)}
    # A's versions: B began after them
    assert json.loads(files[delta_tables.FLOORS_FILE]) == {g: 1 for g in GROUPS}
    versions = {(r["group"], r["version"]) for r in rows(spark, jc, RECOMMENDATIONS)}
    assert {v for _, v in versions} >= {1, 2}, versions  # and B wrote above them
    return jc, ck_a, ck_b, files


def damage(checkpoint: str, name: str, text: str | bytes | None) -> Path:
    path = Path(checkpoint) / name
    if text is None:
        path.unlink()
    elif isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


@pytest.mark.parametrize("kind", DAMAGED)
def test_damaged_floors_are_rebuilt_without_the_rows_this_checkpoint_wrote(spark, job, kind):
    jc, _, ck_b, files = job
    path = damage(ck_b, delta_tables.FLOORS_FILE, DAMAGED[kind])
    assert delta_tables.version_floors(spark, jc, ck_b) \
        == json.loads(files[delta_tables.FLOORS_FILE])
    assert json.loads(path.read_text()) == json.loads(files[delta_tables.FLOORS_FILE])


@pytest.mark.parametrize("kind", [*DAMAGED, "absent"])
def test_a_damaged_or_lost_app_id_is_recovered_from_the_delta_log(spark, job, kind):
    jc, _, ck_b, files = job
    path = damage(ck_b, recover.APP_ID_FILE, DAMAGED.get(kind))
    assert recover.app_id(ck_b, spark, jc) == files[recover.APP_ID_FILE].strip()
    assert path.read_text() == files[recover.APP_ID_FILE]


def test_an_app_id_the_log_cannot_tell_is_one_clear_error(spark, job):
    jc, ck_a, _, _ = job
    original = (Path(ck_a) / recover.APP_ID_FILE).read_text()
    damage(ck_a, recover.APP_ID_FILE, "")  # A and then B wrote since A began: which one is A's?
    try:
        with pytest.raises(JobError, match=f"{recover.APP_ID_FILE} is empty or unreadable .* 2 "
                                           "jobs"):
            recover.app_id(ck_a, spark, jc)
    finally:
        (Path(ck_a) / recover.APP_ID_FILE).write_text(original)


@pytest.mark.parametrize("kind", DAMAGED)
def test_a_damaged_layout_is_rebuilt_from_the_state_not_from_the_configuration(spark, job, kind):
    _, _, ck_b, files = job
    path = damage(ck_b, buckets.LAYOUT_FILE, DAMAGED[kind])
    with pytest.raises(JobError, match="keeps its group state in 4 buckets"):
        buckets.check_layout(spark, ck_b, 8)  # the configuration says 8: the state says 4, and wins
    assert json.loads(path.read_text()) == json.loads(files[buckets.LAYOUT_FILE])
    damage(ck_b, buckets.LAYOUT_FILE, DAMAGED[kind])
    buckets.check_layout(spark, ck_b, 4)
    assert json.loads(path.read_text()) == json.loads(files[buckets.LAYOUT_FILE])


@pytest.mark.parametrize("kind", DAMAGED)
def test_a_damaged_lease_is_taken_over_at_once(spark, job, kind):
    _, _, ck_b, _ = job
    path = damage(ck_b, lease.LEASE_FILE, DAMAGED[kind])
    held = lease.Lease(spark, ck_b, timeout_s=3600).acquire(active=lambda: False)
    try:
        assert json.loads(path.read_text())["run_id"] == held.me["run_id"]
    finally:
        held.release()
    assert not path.exists()


def test_a_checkpoint_with_every_side_file_left_empty_runs_on(spark, job):
    """Issue #26's listed failure: empty side files (a kill between create and write) and a normal
    restart."""
    jc, ck_a, ck_b, files = job
    for name in (delta_tables.FLOORS_FILE, recover.APP_ID_FILE, buckets.LAYOUT_FILE,
                 lease.LEASE_FILE):
        damage(ck_b, name, "")
    produce(jc, membership_phase(GROUPS, 3))
    query.run(spark, jc, available_now=True, checkpoint=ck_b)
    recs = rows(spark, jc, RECOMMENDATIONS)
    ids = [r["recommendation_id"] for r in recs]
    assert len(ids) == len(set(ids)), ids
    # phase 3 written
    assert max(r["version"] for r in recs) >= 3, [(r["group"], r["version"]) for r in recs]
    app_b = files[recover.APP_ID_FILE].strip()
    app_a = (Path(ck_a) / recover.APP_ID_FILE).read_text().strip()
    written = {t.app for t in recover.txns(spark, jc.table_path(RECOMMENDATIONS))}
    assert written == {f"{app_a}/{RECOMMENDATIONS}", f"{app_b}/{RECOMMENDATIONS}"}, written
    for name in (delta_tables.FLOORS_FILE, recover.APP_ID_FILE, buckets.LAYOUT_FILE):
        assert (Path(ck_b) / name).read_text() == files[name], name

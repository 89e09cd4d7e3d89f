"""Checksum files a local Delta log keeps after their commits expired
(streaming.operations.log_orphans)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from streaming import config
from streaming.operations import log_orphans, row_retention

SOAK = Path(__file__).parents[3] / "data" / "delta_log_after_soak.txt"
"""``recommendations/_delta_log`` at the end of the 2,000-batch soak (2026-11-26, 59a38df):
ls -A."""


def v(n: int) -> str:
    return f"{n:020d}"


def test_the_docstring_example():
    names = [f".{v(57)}.json.crc", f"{v(57)}.crc", f".{v(57)}.crc.crc",
             f"{v(90)}.checkpoint.parquet", f".{v(90)}.checkpoint.parquet.crc", f"{v(90)}.json",
             f"{v(91)}.json", "_last_checkpoint"]
    assert log_orphans.orphans(names) == [f".{v(57)}.crc.crc", f".{v(57)}.json.crc", f"{v(57)}.crc"]


def _kept_is_clean(names: set[str], gone: set[str]) -> None:
    kept = names - gone
    oldest = min(int(n[:20]) for n in names if n.endswith(".json") and not n.startswith("."))
    for n in gone:  # only checksums, only below the oldest commit kept
        assert n.endswith(".crc") and int(n.lstrip(".")[:20]) < oldest, n
    # what stays: no sidecar without its file, no version checksum without its commit below it
    for n in kept:
        if n.startswith(".") and n.endswith(".crc") and n[1] in "0123456789":
            assert n[1:-4] in kept or int(n[1:21]) >= oldest, n
        elif n.endswith(".crc") and n[0] in "0123456789":
            assert int(n[:20]) >= oldest, n
    assert log_orphans.orphans(kept) == []  # one pass deletes them all


def test_the_soak_log_loses_its_orphans_and_nothing_a_reader_needs():
    names = set(SOAK.read_text().split())
    gone = set(log_orphans.orphans(names))
    # 53 version checksums of expired commits and their sidecars, found by hand in the soak's log
    assert sum(1 for n in gone if not n.startswith(".")) == 53
    assert len(gone) > 100
    _kept_is_clean(names, gone)


_names = st.sets(
    st.tuples(st.integers(0, 30), st.sampled_from(
        ["json", "crc", "checkpoint.parquet", ".json.crc", ".crc.crc", ".checkpoint.parquet.crc",
         ".json.tmp.crc"])
    ).map(lambda t: f".{v(t[0])}.{t[1][1:]}" if t[1].startswith(".") else f"{v(t[0])}.{t[1]}"),
    max_size=60)


@given(_names)
def test_any_log_keeps_what_readers_need(names):
    if not any(n.endswith(".json") and not n.startswith(".") for n in names):
        assert log_orphans.orphans(names) == []
        return
    _kept_is_clean(set(names), set(log_orphans.orphans(names)))


def test_a_retention_round_sweeps_local_tables_and_maintain_style_sweep_counts(
        tmp_path, monkeypatch):
    from streaming.operations import delta_tables

    monkeypatch.setattr(delta_tables, "expire_recommendations", lambda spark, location, days: 0)
    monkeypatch.setattr(delta_tables, "expire_rejected", lambda spark, location, days: 0)
    log_dir = tmp_path / "recommendations" / "_delta_log"
    log_dir.mkdir(parents=True)
    for n in SOAK.read_text().split():
        if n != "_staged_commits":
            (log_dir / n).write_text("")
    before = {p.name for p in log_dir.iterdir()}
    cfg = config.load()
    cfg = dataclasses.replace(cfg, paths=dataclasses.replace(cfg.paths, tables=str(tmp_path)),
                              maintenance=dataclasses.replace(cfg.maintenance, expire_every_s=1))
    r = row_retention.Retention(cfg, clock=lambda: 5.0)
    r.due = 0.0
    r.after_batch(None)
    after = {p.name for p in log_dir.iterdir()}
    assert before - after == set(log_orphans.orphans(before)) and len(before - after) > 100
    assert log_orphans.sweep(tmp_path / "recommendations") == 0  # nothing left to delete
    assert log_orphans.sweep(tmp_path / "rejected_events") == 0  # no such table: nothing, no error


def test_a_slow_table_is_checkpointed_and_its_expired_log_entries_deleted(tmp_path):
    import pyarrow as pa
    from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

    table = tmp_path / "rejected_events"
    rows = pa.table({"x": [1]})
    write_deltalake(str(table), rows,
                    configuration={"delta.logRetentionDuration": "interval 0 seconds"})
    # each append tagged as the job tags it (the idempotency the job relies on)
    for batch in range(11):
        write_deltalake(str(table), rows, mode="append",
                        commit_properties=CommitProperties(
                            app_transactions=[Transaction("app/t", batch)]))
    log_dir = table / "_delta_log"
    # 12 commits, no checkpoint yet: delta-rs waits for 100
    assert len(list(log_dir.glob("*.json"))) == 12
    assert log_orphans.expire_log(table) is True
    kept = sorted(p.name for p in log_dir.glob("*.json"))
    assert (kept == ["00000000000000000011.json"]
            and (log_dir / "00000000000000000011.checkpoint.parquet").exists())
    after = DeltaTable(str(table))
    assert after.to_pyarrow_table().num_rows == 12  # the table reads the same
    # and the last batch's tag survives in the checkpoint
    assert after.transaction_version("app/t") == 10
    assert log_orphans.expire_log(table) is False  # nothing new since the checkpoint: none written
    assert log_orphans.expire_log(tmp_path / "missing") is False

"""The soak's figures read back as written, the state store's versions counted per partition, and a
saved run kept above the runs before it."""

from __future__ import annotations

from benchmarks.soak import command, verdicts
from benchmarks.soak.figures import state_versions

FIGURES = {"jvm_rss_mb": 1743.0, "py_rss_mb": 210.0, "workers_rss_mb": 338.0, "state_files": 636.0,
           "state_mb": 2.11, "state_versions": 52.0, "ckpt_files": 726.0, "ckpt_mb": 2.13,
           "delta_files": 57.0, "delta_mb": 0.62, "log_files": 69.0, "log_kb": 250.0,
           "log_orphans": 0.0, "window_commits": 59.0, "batch_ms": 797.0}


def test_a_figure_line_reads_back_as_written():
    assert verdicts.parse(command.fmt(150, FIGURES, 150.0)) == [(150, FIGURES)]


def test_a_line_from_before_the_versions_reads_without_them():
    line = command.fmt(150, FIGURES, 150.0).replace(" in 52 versions", "")
    assert verdicts.parse(line) == [
        (150, {k: v for k, v in FIGURES.items() if k != "state_versions"})]


def test_versions_are_the_most_any_one_partition_keeps(tmp_path):
    for part, versions in (("0", range(10, 31)), ("1", range(25, 31))):
        folder = tmp_path / "state" / "0" / part
        folder.mkdir(parents=True)
        for v in versions:
            (folder / f"{v}.changelog").write_text("")
            (folder / f".{v}.changelog.crc").write_text("")
        (folder / "20.zip").write_text("")  # a snapshot of a version already counted
    (tmp_path / "state" / "0" / "_metadata").mkdir()
    (tmp_path / "state" / "0" / "_metadata" / "metadata").write_text("")
    assert state_versions(tmp_path / "state") == 21


def test_a_saved_run_goes_above_the_runs_before_it(tmp_path, monkeypatch):
    results = tmp_path / "soak.txt"
    results.write_text("an earlier run\n")
    monkeypatch.setattr(command, "RESULTS", results)
    say = command.sayer(True)
    say("line 1")
    assert results.read_text() == "line 1\n\n## Earlier\n\nan earlier run\n"
    say("line 2")
    assert results.read_text().startswith("line 1\nline 2\n\n## Earlier\n\nan earlier run\n")

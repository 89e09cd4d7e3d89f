"""``make test-long``'s summary: each step's last run, read from its output file's header, whichever
steps a run chose."""

from __future__ import annotations

from pathlib import Path

from benchmarks import long


def test_the_summary_keeps_every_steps_last_run(tmp_path: Path) -> None:
    (tmp_path / "fuzz.txt").write_text(
        "# python -m streaming.dev.fuzz --records 10000\n"
        "# commit abc1234, 2026-12-02 01:31 UTC, 47 s, exit 0; load before 1.0 2.0 3.0, "
        "after 1.0 1.0 1.0\n# in make test: tests/integration/test_fuzz.py\n\nvalid lost: 0\n")
    (tmp_path / "soak.txt").write_text(
        "# python -m benchmarks.soak\n"
        "# commit def5678-dirty, 2026-11-30 01:41 UTC, 1957 s, exit 1; load before 1 1 1, "
        "after 1 1 1\n")
    (tmp_path / "chaos-random.txt").write_text("not a header\n")
    text = long.summary(tmp_path)
    rows = {line.split(" | ")[0].lstrip("| "): line for line in text.splitlines()
            if line.startswith("| ") and not line.startswith("| step")}
    assert set(rows) == {s.name for s in long.STEPS}
    assert rows["fuzz"] == ("| fuzz | passed | 47 s | abc1234, 2026-12-02 01:31 UTC "
                            "| [fuzz.txt](fuzz.txt) |")
    assert rows["soak"].startswith("| soak | FAILED (exit 1) | 1957 s | def5678-dirty, ")
    assert rows["chaos-random"] == "| chaos-random | not run | | | |"
    assert rows["pytest-long"] == "| pytest-long | not run | | | |"

"""The loop's offline replay reads a run's kept events and says whether every cut agrees."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.loop import replay

RUN = Path(__file__).resolve().parents[3] / "benchmarks" / "results" / "loop-cost-recover.json"


def test_a_live_runs_first_90_s_metadata_first_agree_however_cut(tmp_path: Path, capsys) -> None:
    """``recover`` as it ran live (the job's input kept): its first 90 s, each poll's metadata
    before its lag, decide the same ``utilisation`` shed whatever the cut."""
    events = json.loads(RUN.read_text())["runs"]["recover"][0]["events_published"]
    first = events[0]["ts"]
    kept = sorted((e for e in events if e["ts"] <= first + 90_000),
                  key=lambda e: (e["ts"], replay.META_FIRST.get(e["type"], 2)))
    once = replay.decisions(kept, 1, 200)
    assert [t for _, t in once] == [["lag_skew", "utilisation"]], once
    path = tmp_path / "loop.json"
    path.write_text(json.dumps({"runs": {"recover": [{"recommendations": [],
                                                      "events_published": kept}]}}))
    assert replay.main([str(path), "recover", "--cuts", "1,3,16"]) == 0
    assert "the cuts agree" in capsys.readouterr().out

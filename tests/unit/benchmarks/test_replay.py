"""The loop's offline replay reads a run's kept events and says whether every cut agrees."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from benchmarks.loop import replay
from streaming.contracts import events as ev

RUN = Path(__file__).resolve().parents[3] / "benchmarks" / "results" / "loop-cost-recover.json"


def _first_90_s() -> list[dict]:
    """``recover``'s first 90 s as it ran live (the job's input kept), each poll's metadata before
    its lag; kept before lag events counted their poll's metadata."""
    events = json.loads(RUN.read_text())["runs"]["recover"][0]["events_published"]
    first = events[0]["ts"]
    return sorted((e for e in events if e["ts"] <= first + 90_000),
                  key=lambda e: (e["ts"], replay.META_FIRST.get(e["type"], 2)))


def _counted(events: list[dict]) -> list[dict]:
    """The events with each lag event counting its poll's metadata, as the collector writes them
    now."""
    meta = Counter((e["group"], e["ts"]) for e in events if e["type"] not in ev.LAG_TYPES)
    return [ev.marked([e], meta[e["group"], e["ts"]])[0] if e["type"] in ev.LAG_TYPES else e
            for e in events]


def test_a_live_runs_first_90_s_agree_however_cut_and_ordered(tmp_path: Path, capsys) -> None:
    """Counted, the live events decide the same ``utilisation`` shed whatever the cut, metadata
    first or each poll's lag first."""
    kept = _counted(_first_90_s())
    once = replay.decisions(kept, 1, 200)
    assert [t for _, t in once] == [["lag_skew", "utilisation"]], once
    path = tmp_path / "loop.json"
    path.write_text(json.dumps({"runs": {"recover": [{"recommendations": [],
                                                      "events_published": kept}]}}))
    assert replay.main([str(path), "recover", "--cuts", "1,3,16"]) == 0
    out = capsys.readouterr().out
    assert "lag first  cut   1" in out and "the cuts agree" in out


def test_uncounted_the_live_runs_lag_first_decides_otherwise() -> None:
    """Not vacuous: as kept (no counts), each poll's lag read one event a batch before its members
    event decides the shed at another poll, on a partial view."""
    kept = _first_90_s()
    lag_first = sorted(kept, key=lambda e: (e["ts"], e["type"] in replay.META_FIRST))
    assert replay.decisions(lag_first, 1, 200) != replay.decisions(kept, 1, 200)
    assert replay.decisions(_counted(lag_first), 1, 200) == replay.decisions(kept, 1, 200)

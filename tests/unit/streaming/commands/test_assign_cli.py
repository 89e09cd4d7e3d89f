"""``rebalancer assign`` in-process: JSON out, table out, and exit status 2 on bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from streaming.cli import main

SCENARIO = {
    "name": "two consumers",
    "topics": {"t0": 3, "t1": 3},
    "replica_racks": None,
    "members": [
        {"id": "C1", "instance_id": None, "rack": None, "topics": ["t0", "t1"], "owned": [],
         "generation": None},
        {"id": "C0", "instance_id": None, "rack": None, "topics": ["t0", "t1"], "owned": [],
         "generation": None},
    ],
    "lags": {"t0": [5, 0, 0], "t1": [0, 0, 1]},
}


def run(capsys, argv, stdin_text=None, monkeypatch=None):
    if stdin_text is not None:
        import io

        monkeypatch.setattr("sys.stdin", io.StringIO(stdin_text))
    status = main(argv)
    out, err = capsys.readouterr()
    return status, out, err


def test_single_scenario_json(tmp_path, capsys):
    f = tmp_path / "s.json"
    f.write_text(json.dumps(SCENARIO))
    status, out, _ = run(capsys, ["assign", "--assignor", "range", "--input", str(f)])
    assert status == 0
    doc = json.loads(out)
    assert doc["assignor"] == "range"
    assert doc["assignment"] == {"C1": [["t0", 2], ["t1", 2]],
                                 "C0": [["t0", 0], ["t0", 1], ["t1", 0], ["t1", 1]]}
    assert doc["metrics"]["max_load"] == 5
    assert doc["metrics"]["member_loads"] == {"C0": 5, "C1": 1}


def test_array_from_stdin_skips_schema(capsys, monkeypatch):
    data = [{"_schema": True, "topics": "..."}, SCENARIO, dict(SCENARIO, name="again")]
    status, out, _ = run(capsys, ["assign", "--assignor", "roundrobin"], json.dumps(data),
                         monkeypatch)
    assert status == 0
    docs = json.loads(out)
    assert [d["name"] for d in docs] == ["two consumers", "again"]
    assert docs[0]["assignment"]["C0"] == [["t0", 0], ["t0", 2], ["t1", 1]]


def test_table(capsys, monkeypatch):
    status, out, _ = run(capsys,
                         ["assign", "--assignor", "lag", "--format", "table", "--input", "-"],
                         json.dumps(SCENARIO), monkeypatch)
    assert status == 0
    assert "lag on two consumers" in out
    assert "C0" in out and "imbalance" in out


@pytest.mark.parametrize(("argv", "stdin", "message"), [
    (["--assignor", "nope"], SCENARIO, "--assignor: unknown assignor 'nope'"),
    (["--assignor", "range"], dict(SCENARIO, topics={"t0": -1, "t1": 3}),
     "topics.t0: partition count must be an integer >= 0, got -1"),
    (["--assignor", "range"], [{"_schema": True},
                               dict(SCENARIO, members=[*SCENARIO["members"],
                                                       {"id": "C2", "topics": []}])],
     "members[2].topics: member subscribes to nothing"),
    (["--assignor", "range"], "{not json", "--input: stdin is not valid JSON"),
    (["--assignor", "range"], 42, "--input: must hold a scenario object"),
    (["--assignor", "range"], dict(SCENARIO, members=[{"id": "C0", "topics": ["t0"]}] * 2),
     "members[1].id: duplicate member id 'C0'"),
    (["--assignor", "lag"], dict(SCENARIO, lags={"t0": [1, 2]}),
     "lags.t0: must list one value per partition"),
])
def test_bad_input_exits_2(capsys, monkeypatch, argv, stdin, message):
    text = stdin if isinstance(stdin, str) else json.dumps(stdin)
    status, out, err = run(capsys, ["assign", *argv], text, monkeypatch)
    assert status == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], err


def test_missing_file_exits_2(tmp_path, capsys):
    status, _, err = run(capsys,
                         ["assign", "--assignor", "range", "--input", str(tmp_path / "nope.json")])
    assert status == 2
    assert "--input: no such file" in err


def test_conformance_file_runs_whole(capsys):
    path = Path(__file__).resolve().parents[3] / "data" / "conformance" / "assignor-scenarios.json"
    status, out, _ = run(capsys, ["assign", "--assignor", "range", "--input", str(path)])
    assert status == 0
    # the schema element is skipped
    assert len(json.loads(out)) == len(json.loads(path.read_text())) - 1

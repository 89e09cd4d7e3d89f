"""Every path of the command line that needs no JVM: every assignor through ``rebalancer assign``
(JSON and table) on the conformance scenarios, ``--option`` and its errors, ``--help`` of every
subcommand (taken from the parser, so a new command is covered without editing this file) and
``--version``."""

from __future__ import annotations

import argparse
import importlib.metadata
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from assignors import registry
from assignors.metrics import compute_metrics
from assignors.scenario import assignment_from_json, parse_scenario
from assignors.validity import validate_assignment
from streaming.cli import build_parser, main

SCENARIO_FILE = (Path(__file__).resolve().parents[3] / "data" / "conformance"
                 / "assignor-scenarios.json")
OVERRIDES = Path(__file__).resolve().parents[3] / "data" / "java_overrides.json"
SCENARIOS = [s for s in json.loads(SCENARIO_FILE.read_text()) if not s.get("_schema")]
OVERRIDDEN = {(o["name"], o["assignor"]) for o in json.loads(OVERRIDES.read_text())["overrides"]}

# Lag, produce rates and racks: what balanced and lag look at, which the Kafka scenarios mostly
# lack.
LOADED = {
    "name": "loaded",
    "topics": {"orders": 6, "audit": 2},
    "replica_racks": {"orders": [["a", "b"], ["b", "c"], ["c", "a"], ["a", "b"], ["b", "c"],
                                 ["c", "a"]],
                      "audit": [["a"], ["b"]]},
    "members": [
        {"id": "C0", "rack": "a", "topics": ["orders", "audit"],
         "owned": [["orders", 0], ["orders", 1], ["orders", 2], ["audit", 0]]},
        {"id": "C1", "rack": "b", "topics": ["orders", "audit"],
         "owned": [["orders", 3], ["orders", 4]]},
        {"id": "C2", "rack": "c", "topics": ["orders"], "owned": [["orders", 5]]},
    ],
    "lags": {"orders": [9000, 7000, 5000, 10, 10, 10], "audit": [300, 0]},
    "produce_rate": {"orders": [10, 10, 10, 100, 100, 100], "audit": [0, 0]},
}


def cli(capsys: pytest.CaptureFixture[str], argv: list[str], stdin: str | None = None,
        monkeypatch: pytest.MonkeyPatch | None = None) -> tuple[int, str, str]:
    if stdin is not None:
        assert monkeypatch is not None
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    status = main(argv)
    out, err = capsys.readouterr()
    return status, out, err


def _sets(a: dict[str, list]) -> dict[str, list]:
    return {m: sorted(map(tuple, v)) for m, v in a.items()}


@pytest.mark.parametrize("name", registry.names())
def test_every_assignor_on_every_scenario_as_json(capsys: pytest.CaptureFixture[str],
                                                  name: str) -> None:
    status, out, err = cli(capsys, ["assign", "--assignor", name, "--input", str(SCENARIO_FILE)])
    assert status == 0, err
    docs = json.loads(out)
    assert [d.get("name") for d in docs] == [s["name"] for s in SCENARIOS]
    checked = 0
    for scenario, doc in zip(SCENARIOS, docs, strict=True):
        snapshot = parse_scenario(scenario).snapshot
        assignment = assignment_from_json(doc["assignment"])
        validate_assignment(snapshot, assignment, allow_unassigned=name == "cooperative-sticky")
        assert doc["metrics"] == compute_metrics(snapshot, assignment).to_dict()
        # Where the scenario is one of this assignor's own, the command gives what Kafka's test
        # asserts: the scenario's flags (prefer_rack_aware_logic) reach the assignors that take
        # them.
        expected = scenario.get("expected")
        if (name in scenario["assignors"] and expected
                and (scenario["name"], name) not in OVERRIDDEN):
            got = {m: doc["assignment"].get(m, []) for m in expected}
            if scenario.get("order_significant"):
                assert got == expected, scenario["name"]
            else:
                assert _sets(got) == _sets(expected), scenario["name"]
            checked += 1
    assert checked == (sum(1 for s in SCENARIOS if name in s["assignors"] and s.get("expected"))
                       - sum(1 for (_, a) in OVERRIDDEN if a == name))


@pytest.mark.parametrize("name", registry.names())
def test_every_assignor_as_a_table(capsys: pytest.CaptureFixture[str],
                                   monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    text = json.dumps([LOADED, SCENARIOS[0]])
    status, out, err = cli(capsys, ["assign", "--assignor", name, "--format", "json"], text,
                           monkeypatch)
    assert status == 0, err
    docs = json.loads(out)
    status, table, err = cli(capsys, ["assign", "--assignor", name, "--format", "table"], text,
                             monkeypatch)
    assert status == 0, err
    blocks = table.strip().split("\n\n")
    assert len(blocks) == 2
    for block, doc in zip(blocks, docs, strict=True):
        lines = block.splitlines()
        assert lines[0] == f"{name} on {doc['name']}"
        rows = {m.group(1): int(m.group(2))
                for m in map(re.compile(r"^  (\S+)\s+(\d+)\s").match, lines[2:]) if m}
        assert rows == {member: len(tps) for member, tps in doc["assignment"].items()}
        assert f"imbalance {doc['metrics']['imbalance']:.3f}" in block
        assert f"cross-rack {doc['metrics']['cross_rack_partitions']}," in block


SKEWED = {
    "name": "skewed", "topics": {"t": 4}, "replica_racks": None,
    "members": [{"id": "C0", "topics": ["t"], "owned": [["t", 0], ["t", 1]]},
                {"id": "C1", "topics": ["t"], "owned": [["t", 2], ["t", 3]]}],
    "lags": {"t": [9000, 8000, 100, 100]},
}


def _balanced(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *argv: str,
              scenario: dict[str, Any] = LOADED) -> dict[str, Any]:
    status, out, err = cli(capsys, ["assign", "--assignor", "balanced", *argv],
                           json.dumps(scenario), monkeypatch)
    assert status == 0, err
    return json.loads(out)


def test_max_count_skew_bounds_the_counts(capsys: pytest.CaptureFixture[str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    free = _balanced(capsys, monkeypatch, scenario=SKEWED)
    assert "options" not in free
    # load alone: the member with the hottest partition takes nothing else
    assert free["metrics"]["count_spread"] == 2
    bounded = _balanced(capsys, monkeypatch, "--option", "max_count_skew=0", scenario=SKEWED)
    assert bounded["options"] == {"max_count_skew": 0}
    assert bounded["metrics"]["count_spread"] == 0
    assert bounded["metrics"]["max_load"] > free["metrics"]["max_load"]


def test_costs_trade_racks_against_moves(capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    default = _balanced(capsys, monkeypatch)["metrics"]
    racks_free = _balanced(capsys, monkeypatch, "--option", "cross_rack_cost=0")["metrics"]
    moves_dear = _balanced(capsys, monkeypatch, "--option", "move_cost=1000")["metrics"]
    assert racks_free["cross_rack_partitions"] > default["cross_rack_partitions"]
    assert racks_free["partitions_moved"] < default["partitions_moved"]
    assert moves_dear["partitions_moved"] < default["partitions_moved"]
    # the max load stays where it was: the costs only choose among near-equal balances
    assert racks_free["max_load"] == moves_dear["max_load"] == default["max_load"]


def test_horizon_reaches_balanced_and_the_metrics(capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    by_flag = _balanced(capsys, monkeypatch, "--horizon", "600")
    by_option = _balanced(capsys, monkeypatch, "--option", "horizon_s=600")
    assert by_flag["assignment"] == by_option["assignment"]
    assert by_flag["metrics"] == by_option["metrics"]
    # 600 s of 100 records/s makes the cold-lag partitions 3..5 the heavy ones
    lag_only = _balanced(capsys, monkeypatch)
    assert by_flag["assignment"] != lag_only["assignment"]
    assert by_flag["metrics"]["max_load"] > lag_only["metrics"]["max_load"]


@pytest.mark.parametrize(("argv", "message"), [
    (["--assignor", "balanced", "--option", "max_count_skew=-1"],
     "--option max_count_skew: must be an integer >= 0 or none, got -1"),
    (["--assignor", "balanced", "--option", "tolerance=0.1"],
     "--option tolerance: not an option of the balanced assignor; it takes max_count_skew, "
     "load_tolerance, cross_rack_cost, move_cost, horizon_s, "
     "target_utilisation"),
    (["--assignor", "roundrobin", "--option", "max_count_skew=1"],
     "--option max_count_skew: not an option of the roundrobin assignor; it takes none"),
    (["--assignor", "range", "--option", "prefer_rack_aware_logic=yes"],
     "--option prefer_rack_aware_logic: must be true or false, got 'yes'"),
    (["--assignor", "balanced", "--option", "max_count_skew"],
     "--option 'max_count_skew': expected KEY=VALUE"),
    (["--assignor", "balanced", "--horizon", "5", "--option", "horizon_s=6"],
     "--horizon 5 and --option horizon_s=6 disagree"),
    (["--assignor", "balanced", "--horizon", "-1"], "--horizon: must be >= 0, got -1.0"),
])
def test_bad_options_exit_2_before_reading_input(capsys: pytest.CaptureFixture[str],
                                                 argv: list[str], message: str) -> None:
    # --input names a file that does not exist: the option is checked first
    status, out, err = cli(capsys, ["assign", *argv, "--input", "/nonexistent/scenario.json"])
    assert (status, out) == (2, "")
    assert err == f"rebalancer assign: error: {message}\n"


def _subcommands(parser: argparse.ArgumentParser,
                 path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command path the parser knows (``kafka up``, ``bench speed``, ...), depth first."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.append((*path, name))
                found += _subcommands(sub, (*path, name))
    return found


COMMANDS = _subcommands(build_parser())


def test_every_command_module_is_registered() -> None:
    from streaming import cli as cli_module

    top = {c[0] for c in COMMANDS}
    assert top == set(cli_module.COMMANDS)
    assert {"kafka", "kafka up", "kafka down", "kafka status", "bench speed", "bench quality"} <= {
        " ".join(c) for c in COMMANDS}


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_help_of_every_command(capsys: pytest.CaptureFixture[str],
                               command: tuple[str, ...]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main([*command, "--help"])
    out, err = capsys.readouterr()
    assert exit_.value.code == 0 and err == ""
    assert out.startswith(f"usage: rebalancer {' '.join(command)}")


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    out, _ = capsys.readouterr()
    assert exit_.value.code == 0
    assert out == f"rebalancer {importlib.metadata.version('kafka-rebalancer')}\n"


def test_assign_help_lists_every_assignor_and_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["assign", "--help"])
    out, _ = capsys.readouterr()
    for name in registry.names():
        assert f"  {name}:" in out
        for option, spec in registry.options(name).items():
            assert f"    {option} ({spec.allowed()}" in out


def test_bench_quality_on_one_small_case(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "quality", "--cases", "1", "--suites", "zipf"]) == 0
    out, _ = capsys.readouterr()
    assert "== zipf (1 cases) ==" in out
    rows = {line.split()[0] for line in out.splitlines()
            if re.match(r"^[a-z-]+\s+\d+\.\d{3}\s", line)}
    assert {"range", "roundrobin", "lag", "balanced"} <= rows
    assert "cases where balanced has a higher max load than another assignor: 0" in out

"""Every scenario of tests/data/conformance/assignor-scenarios.json, against every assignor it
names.

Scenarios whose transcription disagrees with Kafka's own Java assignor are listed, with Java's
answer, in tests/data/java_overrides.json (``python -m benchmarks.javaref --write-overrides``): Java
is the truth, so those cases compare with Java's answer.
"""

from __future__ import annotations

import hashlib
import importlib
import json
from pathlib import Path
from typing import Any

import pytest

from assignors import registry
from assignors.metrics import compute_metrics
from assignors.scenario import call_assignor, parse_scenario
from assignors.validity import validate_assignment

ROOT = Path(__file__).resolve().parents[3]
OVERRIDES = ROOT / "tests" / "data" / "java_overrides.json"
SCENARIO_FILE = ROOT / "tests" / "data" / "conformance" / "assignor-scenarios.json"
MODULES = {"sticky": "assignors.sticky.eager", "cooperative-sticky": "assignors.sticky.cooperative"}


def _load() -> list[dict[str, Any]]:
    # Loaded at collection: a missing file must fail the run loudly, not skip the tests.
    data = json.loads(SCENARIO_FILE.read_text())
    assert data and data[0].get("_schema") is True, "element 0 must be the schema"
    return [s for s in data if not s.get("_schema")]


def _overrides() -> dict[tuple[str, str], dict[str, Any]]:
    if not OVERRIDES.is_file():
        return {}
    doc = json.loads(OVERRIDES.read_text())
    return {(o["name"], o["assignor"]): o for o in doc.get("overrides", [])
            if o.get("java") is not None}


SCENARIOS = _load()
CASES = [
    pytest.param(s, a, id=f"{i + 1:02d}-{a}-{s['name']}")
    for i, s in enumerate(SCENARIOS)
    for a in s["assignors"]
]
OVERRIDDEN = _overrides()


def test_every_scenario_is_collected() -> None:
    assert len(SCENARIOS) >= 56
    assert all(s["assignors"] for s in SCENARIOS)


def test_java_overrides_were_made_from_this_file() -> None:
    # The overrides name scenarios of one version of the file: a changed file needs them
    # regenerated.
    doc = json.loads(OVERRIDES.read_text())
    assert doc["conformance_sha256"] == hashlib.sha256(SCENARIO_FILE.read_bytes()).hexdigest(), (
        "tests/data/java_overrides.json was generated from another scenario file: "
        "run `.venv/bin/python -m benchmarks.javaref --write-overrides`"
    )


def _as_lists(assignment: dict) -> dict[str, list[tuple[str, int]]]:
    return {m: [(t, int(p)) for t, p in tps] for m, tps in assignment.items()}


@pytest.mark.parametrize(("scenario", "assignor"), CASES)
def test_conformance(scenario: dict[str, Any], assignor: str) -> None:
    parsed = parse_scenario(scenario)
    snapshot, options = parsed.snapshot, parsed.options
    expected = scenario.get("expected")
    expected_transferring = scenario.get("expected_transferring")
    override = OVERRIDDEN.get((scenario["name"], assignor))
    if override is not None:
        expected = override["java"]
        if override.get("java_transferring") is not None and expected_transferring is not None:
            expected_transferring = override["java_transferring"]

    transferring = None
    with_transfers = None
    if assignor in MODULES and expected_transferring is not None:
        module = importlib.import_module(MODULES[assignor])
        with_transfers = getattr(module, "assign_with_transfers", None)
        if with_transfers is None and assignor == "cooperative-sticky":
            pytest.fail(
                "assignors.sticky.cooperative has no assign_with_transfers(snapshot, **options)")
    if with_transfers is not None:
        result, transferring = call_assignor(with_transfers, snapshot, options)
    else:
        result = call_assignor(registry.get(assignor), snapshot, options)

    # A cooperative first round withholds the partitions that change owner.
    validate_assignment(snapshot, result, allow_unassigned=assignor == "cooperative-sticky")
    if expected is not None:
        want = _as_lists(expected)
        # `expected` may name only the members the Kafka test asserts on.
        got = {m: list(result.get(m, [])) for m in want}
        if scenario.get("order_significant"):
            assert got == want
        else:
            assert {m: sorted(v) for m, v in got.items()} == {m: sorted(v) for m, v in want.items()}

    metrics = compute_metrics(snapshot, result)
    for prop in scenario.get("properties") or []:
        if prop == "fully_balanced":
            assert metrics.count_spread <= 1, f"counts {metrics.member_counts}"
        elif prop.startswith("rack_mismatches="):
            assert metrics.cross_rack_partitions == int(prop.split("=", 1)[1])
        else:
            pytest.fail(f"unknown property {prop!r}")

    if transferring is not None:
        assert dict(transferring) == expected_transferring

"""The conformance scenarios against Kafka's Java assignors: what disagrees, and the overrides
file."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .build import JAVA_ASSIGNORS, ROOT, kafka_clients_version
from .run import run_cases

CONFORMANCE = ROOT / "tests" / "data" / "conformance" / "assignor-scenarios.json"
OVERRIDES = ROOT / "tests" / "data" / "java_overrides.json"


def to_snapshot(scenario: Mapping[str, Any]):
    """The :class:`assignors.model.GroupSnapshot` of a scenario dict (conformance schema)."""
    from assignors.model import GroupSnapshot, Member

    racks = scenario.get("replica_racks")
    lags = scenario.get("lags") or {}
    return GroupSnapshot(
        topics=dict(scenario["topics"]),
        members=tuple(
            Member(
                member_id=m["id"],
                topics=tuple(m["topics"]),
                instance_id=m.get("instance_id"),
                rack=m.get("rack"),
                owned=tuple((t, int(p)) for t, p in (m.get("owned") or [])),
                generation=m.get("generation"),
            )
            for m in scenario["members"]
        ),
        replica_racks=(None if racks is None
                       else {t: tuple(tuple(r) for r in per) for t, per in racks.items()}),
        lag={t: tuple(v) for t, v in lags.items()},
    )


def same_assignment(a: Mapping[str, Sequence], b: Mapping[str, Sequence], *,
                    ordered: bool = False) -> bool:
    """Equal per member (members with no partitions may be absent on either side)."""
    members = {m for m, v in a.items() if v} | {m for m, v in b.items() if v}
    norm = (lambda v: [tuple(x) for x in v]) if ordered else (lambda v: sorted(tuple(x) for x in v))
    return all(norm(a.get(m, [])) == norm(b.get(m, [])) for m in members)


def rack_mismatches(scenario: Mapping[str, Any], assignment: Mapping[str, Sequence]) -> int:
    """Assigned partitions whose member has a rack that holds none of the partition's replicas."""
    racks = scenario.get("replica_racks")
    rack_of = {m["id"]: m.get("rack") for m in scenario["members"]}
    n = 0
    for member, tps in assignment.items():
        rack = rack_of.get(member)
        if not rack:
            continue
        for t, p in tps:
            replica = (set() if racks is None or t not in racks
                       else {r for r in racks[t][p] if r is not None})
            if rack not in replica:
                n += 1
    return n


def _load_conformance(path: Path) -> list[dict[str, Any]]:
    """The scenarios of a conformance file (its schema entry left out)."""
    data = json.loads(path.read_text())
    return [s for s in data if not s.get("_schema")]


def check_conformance(path: Path = CONFORMANCE) -> tuple[list[dict[str, Any]], int]:
    """Run every conformance scenario of a Java assignor through Java 4.3.x.

    Returns (disagreements, scenarios checked). A disagreement names the scenario and assignor, what
    the file expects and what Java gives (assignment, transferring, properties, member iteration
    order).
    """
    scenarios = _load_conformance(path)
    disagreements: list[dict[str, Any]] = []
    checked = 0
    for assignor in JAVA_ASSIGNORS:
        mine = [s for s in scenarios if assignor in s.get("assignors", [])]
        if not mine:
            continue
        results = run_cases(assignor, mine)
        for s, r in zip(mine, results, strict=True):
            checked += 1
            problems = [f"Java threw {r['error']}"] if r["error"] else _problems(s, assignor, r)
            if problems:
                disagreements.append(_disagreement(s, assignor, r, problems))
    return disagreements, checked


def _problems(s: Mapping[str, Any], assignor: str, r: Mapping[str, Any]) -> list[str]:
    """Where Java's result ``r`` on scenario ``s`` differs from what the file says."""
    problems = []
    java = r["assignment"]
    ordered = bool(s.get("order_significant"))
    # `expected` may name only the members the test asserts on
    # (testNoReassignmentOnCurrentMembers)
    expected = s.get("expected")
    if expected is not None and not same_assignment(
        expected, {m: java.get(m, []) for m in expected}, ordered=ordered
    ):
        problems.append("assignment" + (" (list order significant)" if ordered else ""))
    exp_t = s.get("expected_transferring")
    if (
        exp_t is not None
        and assignor in ("sticky", "cooperative-sticky")
        and exp_t != (r["transferring"] or {})
    ):
        problems.append("expected_transferring")
    problems += _property_problems(s, java)
    order = s.get("java_member_iteration_order")
    if order and assignor in ("sticky", "cooperative-sticky") and order != r["member_order"]:
        problems.append(f"java_member_iteration_order: file {order}, Java {r['member_order']}")
    return problems


def _property_problems(s: Mapping[str, Any], java: Mapping[str, Sequence]) -> list[str]:
    """The scenario's ``properties`` that Java's assignment breaks."""
    problems = []
    for prop in s.get("properties") or []:
        if prop == "fully_balanced":
            sizes = [len(v) for v in java.values()]
            if sizes and max(sizes) - min(sizes) > 1:
                problems.append("fully_balanced")
        elif prop.startswith("rack_mismatches="):
            want = int(prop.split("=", 1)[1])
            got = rack_mismatches(s, java)
            if got != want:
                problems.append(f"rack_mismatches: file {want}, Java {got}")
    return problems


def _disagreement(s: Mapping[str, Any], assignor: str, r: Mapping[str, Any],
                  problems: list[str]) -> dict[str, Any]:
    """One entry of the overrides: the scenario, its problems, what the file expects and what Java
    gives."""
    return {
        "name": s["name"],
        "assignor": assignor,
        "problems": problems,
        "expected": s.get("expected"),
        "expected_transferring": s.get("expected_transferring"),
        "java": (None if r["error"]
                 else {m: [list(tp) for tp in v] for m, v in r["assignment"].items()}),
        "java_transferring": r.get("transferring"),
        "java_member_order": r.get("member_order"),
        "java_error": r["error"],
    }


def write_overrides(path: Path = CONFORMANCE, out: Path = OVERRIDES) -> dict[str, Any]:
    """Check the conformance scenarios and write every disagreement to ``out``; the document
    written."""
    disagreements, checked = check_conformance(path)
    doc = {
        "_about": (
            "Conformance scenarios whose `expected` (or expected_transferring / properties / "
            "java_member_iteration_order) disagrees with Kafka's own Java assignor on the same "
            "input. Java is the truth: conformance tests compare these (name, assignor) pairs with "
            "`java` (and `java_transferring`) instead of the file's `expected`. Regenerate with "
            "`.venv/bin/python -m benchmarks.javaref --write-overrides`."
        ),
        "kafka_clients": kafka_clients_version(),
        "conformance_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "scenarios_checked": checked,
        "overrides": disagreements,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1) + "\n")
    return doc

"""Golden outputs of ``balanced``: any change of a single assignment (or of its list order) fails
here.

``tests/data/balanced_golden.json`` holds seeded groups and the outputs the assignor gave them
before it was split into a package: small random groups (racks or none, several topics,
heterogeneous subscriptions, zero, skewed and huge lags, produce rates, current owners with
conflicting claims and generations, stuck partitions, members without racks, no members at all, 62+
racks), groups as ``benchmarks.quality`` builds them, each with the default or non-default options.
The groups too big to store (past the ``SMALL``/peer-seed and ``LARGE`` thresholds) are built here
from a fixed hash and checked by the SHA-256 of their output.

Regenerate the expected outputs (only when an assignment is *meant* to change)::

    .venv/bin/python -m tests.unit.assignors.test_balanced_golden --write
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest

from assignors import registry
from assignors.model import Assignment, GroupSnapshot, Member
from assignors.scenario import parse_scenario

GOLDEN = Path(__file__).resolve().parents[2] / "data" / "balanced_golden.json"


def _load() -> dict[str, Any]:
    # Read at collection: a missing file must fail the run loudly, not skip the tests.
    return json.loads(GOLDEN.read_text())


def group_snapshot(group: dict[str, Any]) -> GroupSnapshot:
    """A stored group: the conformance scenario schema plus ``stuck`` (a list of [topic,
    partition])."""
    snapshot = parse_scenario(group).snapshot
    return dataclasses.replace(snapshot, stuck=frozenset((t, p) for t, p in group.get("stuck", ())))


def _h(*parts: object) -> int:
    """A fixed hash (CRC-32): the generated groups are the same on every platform and version."""
    return zlib.crc32(repr(parts).encode("utf-8"))


def _lag(t: str, p: int) -> int:
    """A fifth of the partitions idle, one in 97 hot (1000x)."""
    if _h("zero", t, p) % 5 == 0:
        return 0
    return (_h("lag", t, p) % 1000) * (1000 if _h("hot", t, p) % 97 == 0 else 1)


def generated_group(kind: str) -> GroupSnapshot:
    """A group too big to store: ``mid`` (3,000 partitions) or ``large`` (21,000), 3 racks, skewed
    lags, a previous assignment most members still own, two new members, a member without a rack,
    stuck partitions and (``mid``) one member subscribed to fewer topics."""
    n_parts, n_members = (3000, 60) if kind == "mid" else (21000, 300)
    topics = {f"t{k}": n_parts // 4 + (k < n_parts % 4) for k in range(4)}
    racks = ("a", "b", "c")
    lag, replica_racks = {}, {}
    for t, n in topics.items():
        lag[t] = [_lag(t, p) for p in range(n)]
        replica_racks[t] = [(racks[_h("r", t, p) % 3], racks[(_h("r", t, p) + 1) % 3])
                            for p in range(n)]
    every = [(t, p) for t, n in topics.items() for p in range(n)]
    owners = n_members - 2  # the last two joined since
    owned: list[list[tuple[str, int]]] = [[] for _ in range(n_members)]
    for i, tp in enumerate(every):
        if _h("owned", *tp) % 10:
            owned[i % owners].append(tp)
    members = []
    for i in range(n_members):
        subs = tuple(topics) if not (kind == "mid" and i == 7) else ("t0", "t1")
        mine = tuple(tp for tp in owned[i] if tp[0] in subs)
        members.append(Member(f"consumer-{_h('id', i) % 100000:05d}-{i}", subs,
                              rack=None if i == 5 else racks[i % 3],
                              owned=mine, generation=1 if mine else None))
    stuck = frozenset(tp for tp in every if _h("stuck", *tp) % 1000 == 0)
    return GroupSnapshot(topics=topics, members=tuple(members), replica_racks=replica_racks,
                         lag=lag, stuck=stuck)


def canonical(assignment: Assignment) -> str:
    """The output as JSON, member order and list order included."""
    return json.dumps([[m, [[t, p] for t, p in tps]] for m, tps in assignment.items()],
                      separators=(",", ":"))


def run(snapshot: GroupSnapshot, options: dict[str, Any]) -> Assignment:
    return registry.get("balanced")(snapshot, **options)


DATA = _load()


def test_the_golden_file_covers_enough() -> None:
    assert sum(len(c["runs"]) for c in DATA["cases"]) >= 300
    assert {g["kind"] for g in DATA["generated"]} == {"mid", "large"}


@pytest.mark.parametrize("case", DATA["cases"], ids=[c["name"] for c in DATA["cases"]])
def test_stored_group(case: dict[str, Any]) -> None:
    snapshot = group_snapshot(case["group"])
    for options, expected in case["runs"]:
        assert (canonical(run(snapshot, options))
                == json.dumps(expected, separators=(",", ":"))), options


@pytest.mark.parametrize("case", DATA["generated"], ids=[c["name"] for c in DATA["generated"]])
def test_generated_group(case: dict[str, Any]) -> None:
    result = run(generated_group(case["kind"]), case["options"])
    assert hashlib.sha256(canonical(result).encode()).hexdigest() == case["sha256"]


def write() -> None:
    """Record the current outputs as the expected ones (the groups stay as they are)."""
    for case in DATA["cases"]:
        snapshot = group_snapshot(case["group"])
        case["runs"] = [[options, json.loads(canonical(run(snapshot, options)))]
                        for options, _ in case["runs"]]
    for case in DATA["generated"]:
        result = run(generated_group(case["kind"]), case["options"])
        case["sha256"] = hashlib.sha256(canonical(result).encode()).hexdigest()
    dump(DATA)


def dump(data: dict[str, Any]) -> None:
    """One case per line, so a changed case shows as one changed line."""
    lines = ["{", f'"about": {json.dumps(data["about"])},', '"cases": [']
    lines += [json.dumps(c, separators=(",", ":")) + ("," if i < len(data["cases"]) - 1 else "")
              for i, c in enumerate(data["cases"])]
    lines += ["],", '"generated": [']
    lines += [json.dumps(c, separators=(",", ":")) + ("," if i < len(data["generated"]) - 1 else "")
              for i, c in enumerate(data["generated"])]
    lines += ["]", "}"]
    GOLDEN.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python -m tests.unit.assignors.test_balanced_golden --write")
    write()

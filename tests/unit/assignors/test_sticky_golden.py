"""Golden outputs of ``sticky`` and ``cooperative-sticky`` on seeded random groups, list order
included.

The groups below (seeded, so the same on every run) cover what the builders branch on: equal and
unequal subscriptions, racks with and without replica racks, owned partitions claimed by several
members, generations (none, -1, older, equal, newer), topics that vanished, a second round where
members re-join owning their first-round result, and ``kafka_bugs``.
``tests/data/sticky_golden.json`` holds the outputs recorded before the sticky core was split into a
package and made faster: any change of a single assignment, list order or transferring partition
fails here.

Regenerate (only when an assignment is *meant* to change, e.g. to follow a new Kafka release)::

    .venv/bin/python -m tests.unit.assignors.test_sticky_golden --write
"""

from __future__ import annotations

import importlib
import json
import random
import sys
from pathlib import Path
from typing import Any

import pytest

from assignors import registry
from assignors.model import GroupSnapshot, Member

GOLDEN = Path(__file__).resolve().parents[2] / "data" / "sticky_golden.json"
SEED = 20251122
CASES = 120
RACKS = ("a", "b", "c")


def random_group(rng: random.Random, with_racks: bool) -> GroupSnapshot:
    """A small group: up to 6 topics of up to 10 partitions, up to 8 members, owned partitions and
    racks."""
    n_topics = rng.randint(1, 6)
    topics = {(f"t{i}" if rng.random() < 0.7 else f"topic-{i}x"): rng.randint(0, 10)
              for i in range(n_topics)}
    names = list(topics)
    every = [(t, p) for t, n in topics.items() for p in range(n)] + [("gone", 0)]
    common = tuple(rng.sample(names, rng.randint(1, n_topics)))
    equal = rng.random() < 0.4
    members: dict[str, Member] = {}
    for i in range(rng.randint(1, 8)):
        suffix = "-x" * rng.randint(1, 3) if rng.random() < 0.2 else ""
        mid = rng.choice(("c", "consumer", "m-", "C")) + str(i) + suffix
        subs = common if equal else tuple(rng.sample(names, rng.randint(1, n_topics)))
        if rng.random() < 0.05:
            subs += ("missing",)
        owned = (tuple(rng.sample(every, rng.randint(0, min(len(every), 12))))
                 if rng.random() < 0.7 else ())
        generation = rng.choice((None, -1, 1, 1, 2, 2, 3)) if owned or rng.random() < 0.3 else None
        rack = rng.choice((*RACKS, None)) if with_racks else None
        members[mid] = Member(member_id=mid, topics=subs, owned=owned, generation=generation,
                              rack=rack)
    replica_racks = None
    if with_racks and rng.random() < 0.85:
        replica_racks = {t: tuple(tuple(rng.sample((*RACKS, None), rng.randint(1, 3)))
                                  for _ in range(n))
                         for t, n in topics.items()}
    return GroupSnapshot(topics=topics, members=tuple(members.values()),
                         replica_racks=replica_racks)


def next_round(snapshot: GroupSnapshot, result: dict[str, list],
               rng: random.Random) -> GroupSnapshot:
    """Members re-join owning what they got (most one generation later); some leave, one may
    join."""
    members = [
        Member(member_id=m.member_id, topics=m.topics, owned=tuple(result.get(m.member_id, ())),
               rack=m.rack,
               generation=(m.generation or 0) + 1 if rng.random() < 0.8 else m.generation)
        for m in snapshot.members if rng.random() >= 0.1
    ]
    if rng.random() < 0.5:
        members.append(Member(member_id="new-one", topics=tuple(snapshot.topics)))
    return GroupSnapshot(topics=dict(snapshot.topics), members=tuple(members),
                         replica_racks=snapshot.replica_racks)


def _run(assignor: str, snapshot: GroupSnapshot, **options: Any) -> dict[str, Any]:
    try:
        if assignor == "sticky":
            result, transferring = registry.get("sticky")(snapshot, **options), None
        else:
            # the module that registers cooperative-sticky, wherever it lives
            module = importlib.import_module(registry.get(assignor).__module__)
            result, transferring = module.assign_with_transfers(snapshot, **options)
    except Exception as e:  # Kafka's own failures (kafka_bugs) are part of the golden record
        return {"error": f"{type(e).__name__}: {e}"}
    out: dict[str, Any] = {"assignment": {m: [[t, p] for t, p in tps] for m, tps in result.items()}}
    if transferring is not None:
        out["transferring"] = transferring
    return out


def outputs() -> dict[str, Any]:
    """Every case's outputs, keyed ``<case>/<assignor>/<variant>``."""
    rng = random.Random(SEED)
    out: dict[str, Any] = {}
    for i in range(CASES):
        snapshot = random_group(rng, with_racks=i % 2 == 1)
        prefer = rng.random() < 0.3
        for assignor in ("sticky", "cooperative-sticky"):
            first = _run(assignor, snapshot, prefer_rack_aware_logic=prefer)
            out[f"{i}/{assignor}/first"] = first
            buggy = _run(assignor, snapshot, prefer_rack_aware_logic=prefer, kafka_bugs=True)
            if buggy != first:
                out[f"{i}/{assignor}/kafka_bugs"] = buggy
            if "assignment" in first:
                result = {m: [(t, p) for t, p in tps] for m, tps in first["assignment"].items()}
                again = next_round(snapshot, result, random.Random(i))
                out[f"{i}/{assignor}/second"] = _run(assignor, again,
                                                     prefer_rack_aware_logic=prefer)
    return out


def test_golden_outputs_unchanged() -> None:
    want = json.loads(GOLDEN.read_text())
    got = json.loads(json.dumps(outputs()))
    assert len(want) >= 2 * CASES * 2
    changed = [k for k in want if got.get(k) != want[k]]
    assert set(got) == set(want), f"cases appeared or vanished: {sorted(set(got) ^ set(want))[:10]}"
    assert not changed, f"{len(changed)} golden outputs changed, first: {changed[:10]}"


@pytest.mark.parametrize("key", ["0/sticky/first", "1/cooperative-sticky/second"])
def test_golden_file_has_real_assignments(key: str) -> None:
    entry = json.loads(GOLDEN.read_text())[key]
    assert entry.get("assignment"), entry


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python -m tests.unit.assignors.test_sticky_golden --write")
    GOLDEN.write_text(json.dumps(outputs(), sort_keys=True, separators=(",", ":")) + "\n")
    print(f"wrote {GOLDEN}")

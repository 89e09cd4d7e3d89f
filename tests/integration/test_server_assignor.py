"""The KIP-848 server-side assignor's core (clients/java ServerAssignor, docs/server-assignor.md):
it decides every shared fit vector (tests/data/fit) as streaming/apply/plan.py does, falls back on
the job's load model as streaming/apply/fallback.py does (tests/data/fallback), and handles the
shapes of Kafka's own assignor tests (empty group, topic deleted, partitions added, a nudge member,
no feed) with Kafka's uniform assignor as the fallback. On a broker that loads it, with the real
job: tests/integration/test_served.py.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from streaming import jvm

from .java_client import build_assignor

VECTORS = Path(__file__).parents[1] / "data" / "fit"
FALLBACK_VECTORS = Path(__file__).parents[1] / "data" / "fallback"


def _cases() -> dict[tuple[str, str], dict]:
    classpath = ":".join([*build_assignor(), jvm.kafka_classpath()])
    out = subprocess.run([jvm.java_executable(), "-Xmx128m", "-cp", classpath,
                          "io.github.kafkarebalancer.ServerAssignorCases", str(VECTORS),
                          str(FALLBACK_VECTORS)],
                         check=True, capture_output=True, text=True, timeout=120).stdout
    return {(d["case"], d["name"]): d["outcome"] for d in map(json.loads, out.splitlines())}


def _flat(outcome: dict) -> list[str]:
    return [tp for tps in outcome["assignment"].values() for tp in tps]


@pytest.mark.java
def test_the_server_assignor_decides_the_fit_vectors_and_kafkas_assignor_shapes():
    cases = _cases()
    for path in VECTORS.glob("*.json"):
        want = json.loads(path.read_text())["expect"]
        got = cases["vector", path.stem]
        if want["applied"]:
            assert got["applied"], (path.stem, got)
            assert got["assignment"] == {m: sorted(f"{t}-{p}" for t, p in tps)
                                         for m, tps in want["assignment"].items()}, path.stem
        else:
            assert (got["applied"], got["kind"]) == (False, want["reason"]), (path.stem, got)
    for path in FALLBACK_VECTORS.glob("*.json"):
        want = json.loads(path.read_text())["expect"]
        got = cases["fallback", path.stem]
        assert not got["applied"], path.stem
        if want["fallback"] == "default":  # the given fallback (one that assigns nothing) ran
            assert (got["assignor"], got["assignment"]) == ("none", {}), (path.stem, got)
        else:
            assert got["assignor"] == "load-model", (path.stem, got)
            assert got["assignment"] == {m: sorted(f"{t}-{p}" for t, p in tps)
                                         for m, tps in want["assignment"].items()}, path.stem
    shape = {name: out for (kind, name), out in cases.items() if kind == "shape"}
    every = [f"t-{p}" for p in range(4)]
    assert shape["fits"] == {"applied": True, "kind": None, "assignor": "recommendation",
                             "assignment": {"m1": ["t-0", "t-1", "t-2"], "m2": ["t-3"]}}
    # no member left to match the recommendation's member ids: not applied, nothing to assign
    assert shape["empty_group"] == {"applied": False, "kind": "no_identity", "assignor": "uniform",
                                    "assignment": {}}
    # partitions added: the recommendation misses t-4 and t-5, so uniform spreads all six
    added = shape["partitions_added"]
    assert (added["applied"], added["kind"]) == (False, "partition_missing")
    assert sorted(_flat(added), key=lambda s: int(s[2:])) == [f"t-{p}" for p in range(6)]
    assert sorted(len(v) for v in added["assignment"].values()) == [3, 3]
    deleted = shape["topic_deleted"]  # the recommendation gives u-0, whose topic is gone
    assert (deleted["applied"], deleted["kind"]) == (False, "not_subscribed")
    assert sorted(_flat(deleted)) == every
    nudge = shape["fits_with_a_nudge_member"]
    assert nudge["applied"] and nudge["assignment"] == {"m1": ["t-0", "t-1", "t-2"], "m2": ["t-3"],
                                                        "n1": []}
    fallback = shape["uniform_with_a_nudge_member"]
    assert not fallback["applied"] and fallback["assignment"]["n1"] == []
    assert sorted(len(fallback["assignment"][m]) for m in ("m1", "m2")) == [3, 3]
    unknown = shape["feed_unknown"]
    assert (unknown["applied"], unknown["kind"]) == (False, "no_view")
    assert sorted(_flat(unknown)) == every

"""The fit rule of streaming/apply/plan.py against the shared vectors in tests/data/fit (the Java
assignor passes the same files: tests/integration/test_java_assignor.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from assignors.model import Member
from streaming.apply.plan import decide, parse_recommendation

VECTORS = sorted((Path(__file__).parents[3] / "data" / "fit").glob("*.json"))
KINDS = {"invalid", "no_recommendation", "other_group", "no_identity", "ambiguous_client_id",
         "same_member", "member_gone", "member_joined", "partition_twice", "not_subscribed",
         "partition_not_current", "partition_missing", "not_approved"}

# plan.py says why in words; the vectors name the rule. The first pattern that matches wins.
REASONS = [
    (r"^no recommendation for the group yet$", "no_recommendation"),
    (r"^recommendation is for group ", "other_group"),
    (r"^recommendation v\d+ is \w+, not approved$", "not_approved"),
    (r"has no group\.instance\.id or client id to match", "no_identity"),
    (r"current members have client id", "ambiguous_client_id"),
    (r"are the same member now", "same_member"),
    (r"is no longer in the group", "member_gone"),
    (r"joined after the recommendation", "member_joined"),
    (r"is assigned twice", "partition_twice"),
    (r"which does not subscribe to", "not_subscribed"),
    (r"is not a current partition", "partition_not_current"),
    (r"current partition\(s\) not in the recommendation", "partition_missing"),
]


def reason_kind(reason: str) -> str:
    for pattern, kind in REASONS:
        if re.search(pattern, reason):
            return kind
    raise AssertionError(f"no kind for reason {reason!r}")


def outcome(case: dict) -> dict:
    """What plan.py does with the case, in the vectors' terms."""
    members = [Member(member_id=m["member_id"], topics=tuple(m["topics"]),
                      instance_id=m.get("instance_id"), client_id=m.get("client_id"),
                      rack=m.get("rack"))
               for m in case["members"]]
    raw = case["recommendation"]
    try:
        rec = None if raw is None else parse_recommendation(json.dumps(raw))
    except ValueError:
        return {"applied": False, "reason": "invalid"}
    decision = decide(case["group"], rec, members, case["topics"], fallback="sticky")
    if decision.applied:
        return {"applied": True,
                "assignment": {k: [list(tp) for tp in v] for k, v in decision.assignment.items()}}
    return {"applied": False, "reason": reason_kind(decision.reason)}


@pytest.mark.parametrize("path", VECTORS, ids=[p.stem for p in VECTORS])
def test_plan_decides_as_the_vector_says(path):
    case = json.loads(path.read_text())
    assert outcome(case) == case["expect"], case["description"]


def test_the_vectors_cover_every_kind_and_both_outcomes():
    expects = [json.loads(p.read_text())["expect"] for p in VECTORS]
    assert {e["reason"] for e in expects if not e["applied"]} == KINDS
    assert sum(e["applied"] for e in expects) >= 5

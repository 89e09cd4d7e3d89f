"""How long a group's latest feed record waited, for a decision or to be in place
(streaming/apply/waiting.py), as the collector's /metrics exports it: a LiveGroup and a feed record
in, (awaiting, unapplied) seconds out."""

from __future__ import annotations

import math

from assignors.model import Member
from streaming.apply.verification import LiveGroup
from streaming.apply.waiting import waiting
from streaming.proposals import expiry

NOW = 1_800_000_000.0
LIVE = {"c0": [0, 1], "c1": [2, 3]}
OTHER = {"c0": [0, 2], "c1": [1, 3]}


def _group(owners: dict[str, list[int]]) -> LiveGroup:
    members = [
        Member(f"{c}-id", ("t",), None, "a", tuple(("t", p) for p in ps), client_id=c)
        for c, ps in owners.items()
    ]
    return LiveGroup("g", "Stable", members, {"t": 4})


def _rec(owners: dict[str, list[int]], age_s: float, status: str = "auto", **extra) -> dict:
    return {
        "group": "g",
        "version": 2,
        "event_ts": int((NOW - age_s) * 1000),
        "status": status,
        "assignment": [
            {
                "member_id": f"old-{c}",
                "instance_id": None,
                "client_id": c,
                "rack": "a",
                "partitions": [["t", p] for p in ps],
            }
            for c, ps in owners.items()
        ],
        **extra,
    }


def _nan(pair: tuple[float, float]) -> tuple[bool, bool]:
    return math.isnan(pair[0]), math.isnan(pair[1])


def test_an_applicable_recommendation_waits_until_it_is_in_place():
    assert waiting(_group(LIVE), _rec(LIVE, 600), NOW)[1] == 0.0
    assert waiting(_group(LIVE), _rec(OTHER, 600), NOW)[1] == 600.0
    # approved: counted from its approval, not from when it was made
    approved = _rec(OTHER, 600, "approved", decided_at=int((NOW - 30) * 1000))
    assert waiting(_group(LIVE), approved, NOW)[1] == 30.0
    assert math.isnan(waiting(_group(LIVE), approved, NOW)[0])


def test_a_proposal_awaits_approval_until_it_expires():
    assert waiting(_group(LIVE), _rec(OTHER, 600, "proposed"), NOW)[0] == 600.0
    assert math.isnan(waiting(_group(LIVE), _rec(OTHER, 600, "proposed"), NOW)[1])
    members = list(_group(LIVE).members)
    fresh = expiry.basis(members, {"t": 4}, int((NOW - 600) * 1000), 3600)
    assert waiting(_group(LIVE), _rec(OTHER, 600, "proposed", proposal=fresh), NOW)[0] == 600.0
    old = expiry.basis(members, {"t": 4}, int((NOW - 600) * 1000), 300)
    assert _nan(waiting(_group(LIVE), _rec(OTHER, 600, "proposed", proposal=old), NOW)) == (
        True,
        True,
    )
    joined = _group({**LIVE, "c2": []})
    assert _nan(waiting(joined, _rec(OTHER, 600, "proposed", proposal=fresh), NOW)) == (True, True)


def test_nothing_waits_without_a_record_once_rejected_or_when_it_no_longer_fits():
    assert _nan(waiting(_group(LIVE), None, NOW)) == (True, True)
    assert _nan(waiting(_group(LIVE), _rec(OTHER, 600, "rejected"), NOW)) == (True, True)
    assert _nan(waiting(_group({"c0": [0, 1], "c9": [2, 3]}), _rec(OTHER, 600), NOW)) == (
        True,
        True,
    )

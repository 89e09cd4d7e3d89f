"""verify's classification as a pure function: a LiveGroup and a recommendation row in, a
Verification out (the command's rendering and its statuses on collector snapshots are in
tests/unit/streaming/commands)."""

from __future__ import annotations

import datetime as dt

from assignors.model import Member
from streaming.apply.verification import LiveGroup, Verdict, verify

NOW = 1_800_000_000.0


def _group(owners: dict[str, list[int]], state: str = "Stable",
           epoch: int | None = None) -> LiveGroup:
    members = [Member(f"{c}-id", ("t",), None, "a", tuple(("t", p) for p in ps), client_id=c)
               for c, ps in owners.items()]
    return LiveGroup("g", state, members, {"t": 4}, epoch)


def _rec(owners: dict[str, list[int]], age_s: float, **extra) -> dict:
    return {"version": 2, "recommendation_id": "r", "generation": 3, "triggers": ["lag_skew"],
            "event_time": dt.datetime.fromtimestamp(NOW - age_s),
            "assignment": [{"member_id": f"old-{c}", "instance_id": None, "client_id": c,
                            "rack": "a", "partitions": [{"topic": "t", "partition": p} for p in ps]}
                           for c, ps in owners.items()],
            **extra}


def test_every_verdict_has_its_own_label_and_exit_status():
    assert len({v.label for v in Verdict}) == len({v.exit_status for v in Verdict}) == len(Verdict)


def test_the_verdict_its_reason_and_the_differences():
    live, other = {"c0": [0, 1], "c1": [2, 3]}, {"c0": [0, 2], "c1": [1, 3]}
    assert verify(_group(live), None, 120, NOW).verdict is Verdict.NO_RECOMMENDATION
    assert verify(_group(live), _rec(live, 10), 120, NOW).verdict is Verdict.APPLIED
    diverged = verify(_group(live), _rec(other, 900), 120, NOW)
    assert diverged.verdict is Verdict.DIVERGED and diverged.reason.startswith("2 of 4 partitions")
    assert [(d["partition"], d["now"], d["recommended"]) for d in diverged.differences] == [
        ("t-1", "c0", "c1"), ("t-2", "c1", "c0")]
    assert diverged.as_dict()["status"] == "diverged" and diverged.as_dict()["version"] == 2
    assert verify(_group(live, epoch=3), _rec(other, 900), 120, NOW).verdict is Verdict.PENDING
    assert (verify(_group(live), _rec({"c0": [0, 1], "c9": [2, 3]}, 10), 120, NOW).verdict
            is Verdict.SUPERSEDED)
    approve = _rec(other, 900, mode="approve")
    assert verify(_group(live), approve, 120, NOW).verdict is Verdict.AWAITING_APPROVAL
    decided = {"version": 2, "status": "approved", "decided_at": int((NOW - 10) * 1000)}
    # counted from approval
    assert verify(_group(live), approve, 120, NOW, decided).verdict is Verdict.PENDING

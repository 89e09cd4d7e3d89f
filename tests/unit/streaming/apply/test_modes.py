"""Modes observe / approve / auto: the mode of a group, what the job writes and publishes in each,
the apply side acting only on ``auto`` and ``approved`` records, ``rebalancer approve`` /
``reject``'s record and ``verify``'s answers for them."""

from __future__ import annotations

import dataclasses
import json

import pytest
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment

from streaming import config
from streaming.apply import plan
from streaming.apply.assignor import RecommendationAssignor
from streaming.apply.errors import InvalidRecommendation
from streaming.apply.feed import LatestRecommendations
from streaming.apply.rejoin import RejoinOnRecommendation
from streaming.apply.verification import LiveGroup
from streaming.commands import approve, verify
from streaming.contracts.recommendation import Recommendation
from streaming.contracts.tables import ADDED_COLUMNS, RECOMMENDATIONS_DDL
from streaming.errors import ConfigError
from streaming.job import sinks

from ..commands.test_describe_verify import NOW, _rec, _snap
from .test_apply import REC, FakeCluster, FakeConsumer, join_member, members, mid

FIT = {"t": 6}


# -- the mode of a group ---------------------------------------------------------------------------

def test_default_mode_is_observe_in_the_code_and_the_conf_file():
    assert config.PolicySettings().mode == config.OBSERVE
    assert config.load().policy.mode == config.OBSERVE
    assert config.load().policy.mode_for("payments-api") == config.OBSERVE


def test_first_matching_override_in_file_order_wins(tmp_path):
    f = tmp_path / "r.toml"
    f.write_text('[policy]\nmode = "auto"\n[policy.mode_overrides]\n"^payments-" = "approve"\n'
                 '"-test$" = "observe"\n"^pay" = "auto"\n')
    policy = config.load(f).policy
    assert policy.mode_for("payments-test") == "approve"  # both match: the first written wins
    assert policy.mode_for("orders-test") == "observe"
    assert policy.mode_for("payroll") == "auto" and policy.mode_for("orders") == "auto"
    # --conf adds after the file's overrides, or clears them all
    more = config.load(f, ["policy.mode_overrides.^orders=approve"]).policy
    assert more.mode_for("orders-test") == "observe" and more.mode_for("orders") == "approve"
    assert config.load(f, ["policy.mode_overrides="]).policy.mode_for("payments-x") == "auto"


@pytest.mark.parametrize("override, message", [
    ("policy.mode=manual", "policy.mode: 'manual' is not one of observe, approve, auto"),
    ("policy.mode_overrides.^a=yes", "policy.mode_overrides.^a: 'yes' is not one of"),
    ("policy.mode_overrides.a(=auto", "is not a regular expression"),
])
def test_bad_modes_fail_at_load(override, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace("^", r"\^")):
        config.load(None, [override])


# -- what the job writes ---------------------------------------------------------------------------

def _recommendation(mode: str) -> Recommendation:
    return Recommendation(group="g", version=2, event_ts=1, generation=1,
                          triggers={"lag_skew": {}}, assignor="b",
                          assignment=[{"member_id": "m", "instance_id": None, "client_id": "c",
                                       "rack": None, "partitions": [["t", 0]]}],
                          before={"max_member_lag": 2, "imbalance": 1, "cross_rack_partitions": 0},
                          after={"max_member_lag": 1, "imbalance": 1, "cross_rack_partitions": 0},
                          lower_bound=1, partitions_moved=1, lag_moved=1, stuck_partitions=[],
                          mode=mode)


@pytest.mark.parametrize("mode, status, published", [
    ("observe", "observed", False), ("approve", "proposed", True), ("auto", "auto", True)])
def test_row_carries_the_mode_and_the_feed_value_its_status(mode, status, published):
    row = _recommendation(mode).to_row()
    assert row["mode"] == mode
    assert json.loads(row["feed_value"])["status"] == status
    assert (mode in sinks.PUBLISHED_MODES) is published
    # the feed sink publishes only the published modes, and the table has the column
    assert "mode STRING" in RECOMMENDATIONS_DDL and ADDED_COLUMNS["mode"] == "STRING"


def test_policy_stamps_each_recommendation_with_its_groups_mode():
    from ..policy.test_policy import POLICY, STEP, T0, TWO, members, poll, run

    joined = members(("C0", [("t0", 0), ("t0", 1)], None), ("C1", [("t0", 2), ("t0", 3)], None),
                     ("C2", [], None), gen=2)
    joined["ts"] = T0 + STEP
    events = [TWO, *poll(T0, {p: 100 for p in range(4)}), joined,
              *poll(T0 + STEP, {p: 100 for p in range(4)})]
    for mode, overrides, expected in (("observe", {}, "observe"),
                                      ("auto", {"^g$": "approve"}, "approve"),
                                      ("approve", {"^x": "observe", "g": "auto"}, "auto")):
        policy = dataclasses.replace(POLICY, mode=mode, mode_overrides=overrides)
        (rec,) = run(events, policy)[1]
        assert rec.mode == expected and rec.to_row()["mode"] == expected


# -- the apply side --------------------------------------------------------------------------------

def test_status_is_checked_and_missing_means_auto():
    assert plan.status_of(plan.parse_recommendation(REC)) == "auto" and plan.actionable(REC)
    for status, ok in (("auto", True), ("approved", True), ("proposed", False), ("rejected", False),
                       ("observed", False)):
        assert plan.actionable(plan.parse_recommendation(REC | {"status": status})) is ok
    for bad in ("APPROVED", None, 1, ""):
        with pytest.raises(InvalidRecommendation, match="status"):
            plan.parse_recommendation(REC | {"status": bad})


def test_leader_falls_back_on_a_proposal_and_applies_it_once_approved():
    for status in ("proposed", "rejected"):
        d = plan.decide("g", REC | {"status": status}, members(), FIT, fallback="sticky")
        assert not d.applied and d.reason == f"recommendation v3 is {status}, not approved"
        # so the approval (same version) still makes members ask for a rebalance
        assert d.considered == 0
    for status in ("approved", "auto"):
        d = plan.decide("g", REC | {"status": status}, members(), FIT, fallback="sticky")
        assert d.applied and d.version == 3


def test_feed_keeps_the_decision_at_the_same_version():
    feed = LatestRecommendations()
    assert feed.offer(REC | {"status": "proposed"})["status"] == "proposed"
    assert feed.offer(REC | {"status": "proposed"}) is None  # a replay
    assert feed.offer(REC | {"status": "approved"})["status"] == "approved"
    # a replayed proposal cannot undo the approval
    assert feed.offer(REC | {"status": "proposed"}) is None
    assert feed.offer(REC | {"status": "auto"}) is None
    # the later decision wins
    assert feed.offer(REC | {"status": "rejected"})["status"] == "rejected"
    assert feed.offer(REC | {"status": "approved"})["status"] == "approved"
    newer = REC | {"version": 4, "recommendation_id": plan.recommendation_id("g", 4),
                   "status": "proposed"}
    assert feed.offer(newer)["version"] == 4
    assert feed.offer(REC | {"status": "rejected"}) is None  # an older version's decision


def test_members_ask_for_a_rebalance_only_once_it_is_approved():
    owned = {("t", 0)}
    assert plan.rejoin_reason(REC | {"status": "proposed"}, 0, owned, "x", "c-0") is None
    assert plan.rejoin_reason(REC | {"status": "rejected"}, 0, owned, "x", "c-0") is None
    assert plan.rejoin_reason(REC | {"status": "approved"}, 0, owned, "x", "c-0")

    feed = LatestRecommendations()
    a = RecommendationAssignor(feed, "g")
    consumer = FakeConsumer(a)
    helper = RejoinOnRecommendation(consumer, feed, "g", min_interval_s=0)
    a.on_assignment(ConsumerProtocolAssignment(
        0, [("t", [0])], plan.Decision({}, "fallback", "r", "x").user_data()), 1)
    feed.offer(REC | {"status": "proposed"})
    assert helper.check() is None and consumer.rejoins == 0
    feed.offer(REC | {"status": "approved"})
    assert helper.check() and consumer.rejoins == 1


def test_assignor_leader_hands_out_the_fallback_for_a_proposal():
    feed = LatestRecommendations()
    feed.offer(REC | {"status": "proposed"})
    leader = RecommendationAssignor(feed, "g")
    joined = [join_member(RecommendationAssignor(None, "g"), mid(f"c-{i}", i)) for i in range(3)]
    leader.assign(FakeCluster({"t": 6}, {0: "a", 1: "b", 2: "c"}), joined)
    assert leader.last_decision is not None and not leader.last_decision.applied
    feed.offer(REC | {"status": "approved"})
    leader.assign(FakeCluster({"t": 6}, {0: "a", 1: "b", 2: "c"}), joined)
    assert leader.last_decision.applied and leader.last_decision.version == 3


# -- rebalancer approve / reject -------------------------------------------------------------------

def test_decision_record_republishes_the_proposal_with_its_status():
    proposed = REC | {"status": "proposed"}
    out = approve.decided(proposed, "g", "approved", None, 1234)
    assert out == proposed | {"status": "approved", "decided_at": 1234}
    assert (plan.parse_recommendation(json.dumps(out))["recommendation_id"]
            == REC["recommendation_id"])
    assert approve.decided(proposed, "g", "rejected", 3, 1)["status"] == "rejected"
    assert approve.decided(out, "g", "approved", 3, 1) is None  # already so
    assert approve.decided(out, "g", "rejected", 3, 1)["status"] == "rejected"  # deciding again


@pytest.mark.parametrize("rec, version, message", [
    (None, None, "no recommendation of group g"),
    (REC | {"status": "proposed"}, 2,
     "v2 is not group g's latest recommendation .v3 is.; review v3"),
    (REC | {"status": "proposed"}, 9, "no recommendation v9 yet"),
    (REC, None, "published with status auto, not as a proposal"),
])
def test_nothing_to_decide_on_is_refused(rec, version, message):
    with pytest.raises(approve.Refused, match=message):
        approve.decided(rec, "g", "approved", version, 1)


def test_an_expired_proposal_is_refused_with_its_reason_and_may_still_be_rejected():
    proposed = REC | {"status": "proposed"}
    why = "member client:c2@10.0.0.3 joined since the proposal"
    with pytest.raises(approve.Refused, match=f"v3 of group g has expired: {why}"):
        approve.decided(proposed, "g", "approved", 3, 1, expired=why)
    assert approve.decided(proposed, "g", "rejected", 3, 1, expired=why)["status"] == "rejected"
    # rejected, then the group changed: stale all the same
    with pytest.raises(approve.Refused, match="has expired"):
        approve.decided(proposed | {"status": "rejected"}, "g", "approved", 3, 1, expired=why)
    approved = proposed | {"status": "approved"}
    # decided before it expired
    assert approve.decided(approved, "g", "approved", 3, 1, expired=why) is None


# -- verify ----------------------------------------------------------------------------------------

def test_verify_says_expired_for_an_undecided_proposal_whose_group_changed_or_aged():
    from streaming.proposals import expiry

    live, other = {"c0": [0, 1], "c1": [2, 3]}, {"c0": [0, 2], "c1": [1, 3]}
    snap = _snap(live)
    made_ms = int((NOW - 900) * 1000)
    ms = [LiveGroup.of_snapshot(snap, "g").members[0]]  # c1 has joined since
    feed_rec = {"group": "g", "version": 2, "assignment": [], "status": "proposed",
                "event_ts": made_ms, "proposal": expiry.basis(ms, {"t": 4}, made_ms, 3600)}
    row = _rec(other, 900) | {"mode": "approve"}
    r = verify.verify(snap, "g", row, 120, NOW, feed_rec)
    assert r["status"] == "expired" and verify.EXIT[r["status"]] == 10
    assert (r["reason"]
            == "the proposal expired: member client:c1@10.0.0.1 joined since the proposal")
    both = expiry.basis(LiveGroup.of_snapshot(snap, "g").members, {"t": 4}, made_ms, 3600)
    assert (verify.verify(snap, "g", row, 120, NOW, feed_rec | {"proposal": both})["status"]
            == "awaiting approval")
    aged = expiry.basis(LiveGroup.of_snapshot(snap, "g").members, {"t": 4}, made_ms, 600)
    r = verify.verify(snap, "g", row, 120, NOW, feed_rec | {"proposal": aged})
    assert r["status"] == "expired" and "made 900 s ago, past its expiry" in r["reason"]
    # decided on before it expired: no longer a proposal; an approved one that no longer fits is
    # superseded
    approved = feed_rec | {"status": "approved", "decided_at": made_ms}
    assert verify.verify(snap, "g", row, 120, NOW, approved)["status"] == "diverged"
    assert verify.verify(snap, "g", _rec({"c0": [0, 1, 2, 3]}, 900) | {"mode": "approve"}, 120, NOW,
                         approved)["status"] == "superseded"



def test_verify_says_awaiting_approval_rejected_or_observed():
    live = {"c0": [0, 1], "c1": [2, 3]}
    other = {"c0": [0, 2], "c1": [1, 3]}
    feed_rec = {"group": "g", "version": 2, "assignment": [], "status": "proposed"}
    r = verify.verify(_snap(live), "g", _rec(other, 900) | {"mode": "approve"}, 120, NOW, feed_rec)
    assert r["status"] == "awaiting approval" and "rebalancer approve g --version 2" in r["reason"]
    assert verify.EXIT[r["status"]] == 7
    r = verify.verify(_snap(live), "g", _rec(other, 900) | {"mode": "approve"}, 120, NOW,
                      feed_rec | {"status": "rejected"})
    assert r["status"] == "rejected" and verify.EXIT[r["status"]] == 8
    r = verify.verify(_snap(live), "g", _rec(other, 900) | {"mode": "observe"}, 120, NOW)
    assert r["status"] == "observed" and verify.EXIT[r["status"]] == 9
    # approved 10 s ago (made 900 s ago): pending, counted from the approval
    approved = feed_rec | {"status": "approved", "decided_at": int((NOW - 10) * 1000)}
    assert verify.verify(_snap(live), "g", _rec(other, 900) | {"mode": "approve"}, 120, NOW,
                         approved)["status"] == "pending"
    # in place whatever the mode; an older table's row (mode NULL) is auto
    assert verify.verify(_snap(live), "g", _rec(live, 900) | {"mode": "approve"}, 120, NOW,
                         feed_rec)["status"] == "applied"
    assert (verify.verify(_snap(live), "g", _rec(other, 900) | {"mode": None}, 120, NOW)["status"]
            == "diverged")


def test_recommendations_table_shows_the_mode():
    import datetime as dt

    from streaming.commands.recommendations import render_table

    row = {"group": "g", "version": 1, "event_time": dt.datetime(2026, 1, 1),
           "triggers": ["lag_skew"],
           "before_max_lag": 2, "after_max_lag": 1, "before_imbalance": 2, "after_imbalance": 1,
           "before_cross_rack": 0, "after_cross_rack": 0, "partitions_moved": 1}
    lines = render_table([row | {"mode": "observe"}, row]).splitlines()
    assert (lines[0].split()[-1] == "mode" and lines[1].split()[-1] == "observe"
            and lines[2].split()[-1] == "auto")


def test_recommendations_table_shows_the_lag_seconds():
    import datetime as dt

    from streaming.commands.recommendations import render_table

    row = {"group": "g", "version": 1, "event_time": dt.datetime(2026, 1, 1),
           "triggers": ["lag_skew"],
           "before_max_lag": 28547, "after_max_lag": 18537, "before_imbalance": 2,
           "after_imbalance": 1,
           "before_cross_rack": 0, "after_cross_rack": 0, "partitions_moved": 1, "mode": "auto",
           "before_catch_up_s": 232.53995, "after_catch_up_s": 1232.74, "lag_age_s": 82.738}
    unknown = row | {"before_catch_up_s": None, "after_catch_up_s": float("nan"), "lag_age_s": None}
    older = {k: v for k, v in row.items() if not k.endswith("_s")}  # a row from before the columns
    head, *lines = render_table([row, unknown, older]).splitlines()
    at = head.index("catch-up s")
    assert head.index("age s") > at and head.split()[-1] == "mode"
    assert lines[0][at:].split()[:4] == ["232.5", "->", "1,232.7", "82.7"]
    assert lines[1][at:].split()[:4] == lines[2][at:].split()[:4] == ["-", "->", "-", "-"]

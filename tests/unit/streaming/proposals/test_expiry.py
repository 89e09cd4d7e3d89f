"""When a proposal expires (streaming.proposals.expiry): a member joined or left (by the job's
identity rule), a subscribed topic's partitions changed, or it is past its deadline; a proposal
without the facts never does."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assignors.model import Member
from streaming import config
from streaming.errors import ConfigError
from streaming.proposals import expiry

T0 = 1_800_000_000_000
HOUR_MS = 3_600_000


def _m(member_id: str, client: str | None = None, host: str | None = "10.0.0.1",
       instance: str | None = None, topics=("orders",)) -> Member:
    return Member(member_id, tuple(topics), instance, None, client_id=client, host=host)


GROUP = [_m("c0-1", "c0"), _m("c1-1", "c1", "10.0.0.2")]
TOPICS = {"orders": 4}


def _proposal(members=GROUP, topics=TOPICS, expiry_s=3600.0) -> dict:
    return {"version": 2, "event_ts": T0, "status": "proposed",
            "proposal": expiry.basis(members, topics, T0, expiry_s)}


def test_the_facts_a_proposal_carries():
    assert expiry.basis([*GROUP, _m("x", topics=())], TOPICS, T0, 3600) == {
        "expires_at": T0 + HOUR_MS, "members": ["client:c0@10.0.0.1", "client:c1@10.0.0.2"],
        # a member that subscribes to nothing is not one the assignor saw
        "partitions": {"orders": 4}}


def test_the_docstring_example():
    rec = _proposal()
    # new member ids, same identities: no change
    rejoined = [_m("c0-2", "c0"), _m("c1-7", "c1", "10.0.0.2")]
    assert expiry.reason(rec, rejoined, TOPICS, T0 + 20 * 60_000) is None
    joined = [*rejoined, _m("c2-1", "c2", "10.0.0.3")]
    assert expiry.reason(rec, joined, TOPICS, T0 + 20 * 60_000) == \
        "member client:c2@10.0.0.3 joined since the proposal"
    late = expiry.reason(rec, rejoined, TOPICS, T0 + HOUR_MS + 1000)
    assert late == ("made 3601 s ago, past its expiry at 2027-01-15 09:00:00 UTC "
                    "(policy.proposal_expiry_s)")


def test_left_and_partition_changes_are_each_named():
    rec = _proposal()
    why = expiry.reason(rec, GROUP[:1], {"orders": 6, "audit": 2}, T0)
    assert why == (
        "member client:c1@10.0.0.2 left since the proposal; topic audit (2 partitions) is "
        "subscribed since the proposal; orders has 6 partitions now, 4 in the proposal")
    assert (expiry.reason(rec, GROUP, {}, T0)
            == "topic orders is no longer subscribed (or no longer exists)")
    static = _proposal([_m("a", "c0", instance="s-0")])
    assert expiry.reason(static, [_m("b", "other", "10.9.9.9", instance="s-0")], TOPICS, T0) is None


@pytest.mark.parametrize("field",
                         [None, "x", {"expires_at": "soon", "members": [], "partitions": {}},
                          {"expires_at": T0, "members": [1], "partitions": {}},
                          {"expires_at": T0, "members": [], "partitions": {"t": 0}},
                          {"expires_at": True, "members": [], "partitions": {}}])
def test_a_proposal_without_sound_facts_never_expires(field):
    rec = {"version": 1, "event_ts": T0, "proposal": field}
    assert expiry.read(field) is None
    assert expiry.reason(rec, [], {}, T0 + 100 * HOUR_MS) is None


identities = st.sampled_from(["c0", "c1", "c2", "c3"])


@settings(max_examples=200, deadline=None)
@given(st.sets(identities), st.sets(identities),
       st.dictionaries(st.sampled_from("abc"), st.integers(0, 4)),
       st.dictionaries(st.sampled_from("abc"), st.integers(0, 4)), st.integers(-5, 5))
def test_expired_exactly_when_members_partitions_or_time_differ(
        then, now, topics_then, topics_now, offset_s):
    rec = _proposal([_m(f"{c}-old", c) for c in then], topics_then, expiry_s=60)
    members = [_m(f"{c}-new", c) for c in now]
    at = T0 + 60_000 + offset_s * 1000
    why = expiry.reason(rec, members, topics_now, at)
    same_topics = ({t: n for t, n in topics_then.items() if n}
                   == {t: n for t, n in topics_now.items() if n})
    assert (why is None) == (then == now and same_topics and offset_s < 0)
    if why is not None:
        assert all(part for part in why.split("; "))  # each cause its own sentence


@pytest.mark.parametrize("value", ["0", "-5", "nan", "inf"])
def test_the_expiry_setting_is_a_positive_number_of_seconds(value):
    with pytest.raises(ConfigError, match="policy.proposal_expiry_s"):
        config.load(None, [f"policy.proposal_expiry_s={value}"])
    assert config.load(None, []).policy.proposal_expiry_s == 3600.0


def test_the_job_writes_the_facts_with_proposals_only():
    from ..policy.test_policy import POLICY, STEP, TWO, members, poll, run
    from ..policy.test_policy import T0 as P0

    joined = members(("C0", [("t0", 0), ("t0", 1)], None), ("C1", [("t0", 2), ("t0", 3)], None),
                     ("C2", [], None), gen=2)
    joined["ts"] = P0 + STEP
    # the next poll closes the join's observation
    events = [TWO, *poll(P0, {p: 100 for p in range(4)}), joined,
              *poll(P0 + 2 * STEP, {p: 100 for p in range(4)})]
    for mode in ("approve", "auto"):
        (rec,) = run(events, dataclasses.replace(POLICY, mode=mode, proposal_expiry_s=90))[1]
        message = rec.feed_message()
        if mode == "auto":
            assert "proposal" not in message
            continue
        assert message["proposal"] == {"expires_at": P0 + STEP + 90_000, "partitions": {"t0": 4},
                                       "members": ["client:c-C0@", "client:c-C1@", "client:c-C2@"]}

"""The consumer side of the loop, without Kafka: mapping a recommendation onto the current members,
checking it fits, the fallback, the assignor's subscription (rack for the collector) and the rejoin
rule."""

from __future__ import annotations

import json
import logging
from types import SimpleNamespace

import pytest
from kafka.protocol.consumer.metadata import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)

from assignors.model import Member
from streaming.apply import identities, plan
from streaming.apply.assignor import RecommendationAssignor, member_of, strategy
from streaming.apply.feed import LatestRecommendations
from streaming.apply.rejoin import RejoinOnRecommendation
from streaming.collector.member_metadata import RackResolver, member_from, subscription_from
from streaming.contracts.recommendation import recommendation_id

UUIDS = ["6f1e2d3c-0000-4000-8000-00000000000a", "0a9b8c7d-1111-4111-8111-00000000000b",
         "deadbeef-2222-4222-8222-00000000000c", "cafebabe-3333-4333-8333-00000000000d"]


def mid(client: str, i: int = 0) -> str:
    return f"{client}-{UUIDS[i]}"


def members(n: int = 3, topics=("t",), gen: int = 1) -> list[Member]:
    return [Member(member_id=mid(f"c-{i}", i), topics=tuple(topics), client_id=f"c-{i}",
                               rack="abc"[i % 3], generation=gen) for i in range(n)]


def rec(assignment: dict[str, list[tuple[str, int]]], version: int = 3, group: str = "g",
        **extra) -> dict:
    return {"group": group, "version": version,
            "recommendation_id": recommendation_id(group, version),
            "assignment": [{"member_id": f"{c}-old", "instance_id": None, "client_id": c,
                            "rack": None, "partitions": [list(tp) for tp in parts]}
                           for c, parts in assignment.items()],
            "triggers": ["lag_skew"], **extra}


REC = rec({"c-0": [("t", 0), ("t", 1)], "c-1": [("t", 2)], "c-2": [("t", 3), ("t", 4), ("t", 5)]})


# -- identities ------------------------------------------------------------------------------------

def test_client_id_from_broker_member_id():
    assert identities.client_id_from_member_id(mid("orders-1-rack-a")) == "orders-1-rack-a"
    assert identities.client_id_from_member_id("no-uuid-here") is None
    assert identities.client_id_from_member_id(f"-{UUIDS[0]}") is None
    assert identities.client_id_from_member_id(None) is None


def test_map_by_client_id_when_member_ids_changed():
    d = plan.decide("g", REC, members(), {"t": 6})
    assert (d.applied and d.version == 3 and d.considered == 3
            and d.recommendation_id == recommendation_id("g", 3))
    assert d.assignment == {mid("c-0", 0): [("t", 0), ("t", 1)], mid("c-1", 1): [("t", 2)],
                            mid("c-2", 2): [("t", 3), ("t", 4), ("t", 5)]}


def test_map_by_instance_id_first():
    ms = [Member(member_id=f"x-{i}", topics=("t",), instance_id=f"inst-{i}", client_id="same")
          for i in range(2)]
    r = {"group": "g", "version": 1, "assignment": [
        {"member_id": "gone-1", "instance_id": "inst-1", "client_id": "same",
         "partitions": [["t", 0]]},
        {"member_id": "gone-0", "instance_id": "inst-0", "client_id": "same",
         "partitions": [["t", 1]]}]}
    d = plan.decide("g", r, ms, {"t": 2})
    assert d.applied
    assert d.assignment == {"x-1": [("t", 0)], "x-0": [("t", 1)]}


def test_exact_member_id_wins_over_client_id():
    ms = [Member(member_id=f"m{i}", topics=("t",), client_id="dup") for i in range(2)]
    r = {"group": "g", "version": 1, "assignment": [
        {"member_id": "m0", "client_id": "dup", "partitions": [["t", 1]]},
        {"member_id": "m1", "client_id": "dup", "partitions": [["t", 0]]}]}
    assert plan.decide("g", r, ms, {"t": 2}).assignment == {"m0": [("t", 1)], "m1": [("t", 0)]}


def test_ambiguous_client_id_does_not_fit():
    ms = [Member(member_id=f"m{i}", topics=("t",), client_id="dup") for i in range(2)]
    r = {"group": "g", "version": 1, "assignment": [
        {"member_id": "old0", "client_id": "dup", "partitions": [["t", 1]]},
        {"member_id": "old1", "client_id": "dup", "partitions": [["t", 0]]}]}
    d = plan.decide("g", r, ms, {"t": 2})
    assert not d.applied and "cannot tell which one" in d.reason


# -- does it fit -----------------------------------------------------------------------------------

@pytest.mark.parametrize("change, expected", [
    (lambda ms, topics: (ms[:2], topics), "c-2 is no longer in the group"),
    (lambda ms, topics: ([*ms, Member(mid("c-9", 3), ("t",), client_id="c-9")], topics),
     "c-9 joined after the recommendation"),
    (lambda ms, topics: (ms, {"t": 8}), "2 current partition(s) not in the recommendation"),
    (lambda ms, topics: (ms, {"t": 5}), "t-5 is not a current partition (t has 5 partitions now)"),
    (lambda ms, topics: ([ms[0], ms[1], Member(ms[2].member_id, ("u",), client_id="c-2")],
                         {"t": 6, "u": 1}), "does not subscribe to t"),
])
def test_recommendation_that_no_longer_fits_falls_back(change, expected):
    ms, topics = change(members(), {"t": 6})
    d = plan.decide("g", REC, ms, topics)
    assert d.source == "fallback" and d.assignor == "sticky"
    assert expected in d.reason and d.reason.startswith("recommendation v3 does not fit")
    assert d.considered == 3 and d.version is None
    # the fallback itself is complete and valid
    plan.check_fits(d.assignment, ms, topics)


def test_duplicate_partition_in_recommendation_does_not_fit():
    r = rec({"c-0": [("t", 0), ("t", 1)], "c-1": [("t", 1)], "c-2": [("t", 2)]})
    d = plan.decide("g", r, members(), {"t": 3})
    assert not d.applied and "t-1 is assigned twice" in d.reason


def test_no_recommendation_uses_fallback_without_considered():
    d = plan.decide("g", None, members(), {"t": 6})
    assert (d.source == "fallback" and d.considered == 0
            and d.reason == "no recommendation for the group yet")


def test_other_groups_recommendation_is_not_applied():
    d = plan.decide("g", rec({"c-0": []}, group="other"), members(1), {"t": 1})
    assert not d.applied and "not 'g'" in d.reason


def test_fallback_choices():
    ms = members()
    lag = {"t": [1000, 0, 0, 0, 0, 900]}
    assert plan.decide("g", None, ms, {"t": 6}, lag=lag).assignor == "balanced"
    d = plan.decide("g", None, ms, {"t": 6}, fallback="range")
    assert d.assignor == "range"
    # Kafka's range: members sorted by member id, 2 partitions each
    by_client = {m.client_id: d.assignment[m.member_id] for m in ms}
    assert by_client == {"c-0": [("t", 0), ("t", 1)], "c-1": [("t", 2), ("t", 3)],
                         "c-2": [("t", 4), ("t", 5)]}
    # balanced with lag puts the two loaded partitions on different members
    bal = plan.decide("g", None, ms, {"t": 6}, lag=lag).assignment
    holders = {m for m, tps in bal.items() for tp in tps if tp in (("t", 0), ("t", 5))}
    assert len(holders) == 2


def test_sticky_fallback_keeps_owned_partitions():
    ms = [Member(mid("c-0", 0), ("t",), client_id="c-0", owned=(("t", 0), ("t", 3)), generation=4),
          Member(mid("c-1", 1), ("t",), client_id="c-1", owned=(("t", 1), ("t", 2)), generation=4)]
    d = plan.decide("g", None, ms, {"t": 4})
    assert d.assignor == "sticky"
    assert d.assignment == {mid("c-0", 0): [("t", 0), ("t", 3)],
                            mid("c-1", 1): [("t", 1), ("t", 2)]}


def test_decision_user_data_round_trip():
    d = plan.decide("g", REC, members(), {"t": 6})
    body = identities.read_user_data(d.user_data())
    assert body["source"] == "recommendation" and body["version"] == 3 and body["considered"] == 3
    assert (identities.read_user_data(b"\x00\x01binary") == {}
            and identities.read_user_data(None) == {})


def test_parse_recommendation_rejects_bad_values():
    for bad in ('{"group": "g"}', '{"group": "g", "version": "3", "assignment": []}',
                '{"group": "g", "version": 3, "assignment": [{"partitions": [["t"]]}]}', "[1]"):
        with pytest.raises(ValueError):
            plan.parse_recommendation(bad)


def test_latest_keeps_highest_version_per_group():
    feed = LatestRecommendations()
    seen = []
    feed.add_listener(lambda r: seen.append(r["version"]))
    assert feed.offer(json.dumps(rec({"c-0": []}, version=2)))
    assert feed.offer(json.dumps(rec({"c-0": []}, version=1))) is None
    assert feed.offer(json.dumps(rec({"c-0": []}, version=2))) is None  # at-least-once replay
    assert feed.offer(json.dumps(rec({"c-0": []}, version=5)))
    assert feed.offer(b"not json") is None and feed.rejected == 1
    assert feed.latest("g")["version"] == 5 and feed.latest("other") is None and seen == [2, 5]


# -- the kafka-python assignor without a broker ----------------------------------------------------

class FakeCluster:
    def __init__(self, topics: dict[str, int], racks: dict[int, str] | None = None,
                 replicas: dict[tuple[str, int], list[int]] | None = None) -> None:
        self.topics = topics
        self._brokers = {b: SimpleNamespace(rack=r) for b, r in (racks or {}).items()}
        self._partitions = {
            t: {p: SimpleNamespace(replica_nodes=(replicas or {}).get((t, p), [p % 3]))
                for p in range(n)}
            for t, n in topics.items()}

    def partitions_for_topic(self, topic):
        return set(range(self.topics[topic])) if topic in self.topics else None

    def broker_metadata(self, b):
        return self._brokers.get(b)


def join_member(assignor: RecommendationAssignor, member_id: str, topics=("t",), instance_id=None):
    """What the leader gets: the member's subscription encoded, then decoded as kafka-python
    does."""
    encoded = assignor.metadata(set(topics)).encode()
    return SimpleNamespace(member_id=member_id, group_instance_id=instance_id,
                           metadata=ConsumerProtocolSubscription.decode(encoded))


def test_metadata_is_subscription_v3_with_rack_owned_and_generation():
    a = RecommendationAssignor(None, "g", rack="b", client_id="c-1")
    a.on_assignment(ConsumerProtocolAssignment(0, [("t", [2, 0])], b""), 7)
    sub = ConsumerProtocolSubscription.decode(a.metadata({"t"}).encode())
    assert sub.version == 3 and sub.rack_id == "b" and sub.generation_id == 7
    assert [(tp.topic, tp.partitions) for tp in sub.owned_partitions] == [("t", [0, 2])]
    assert identities.read_user_data(sub.user_data) == {"rebalancer": 1, "rack": "b",
                                                         "client_id": "c-1"}


def test_collector_reads_the_rack_from_the_subscription():
    """The collector gets kafka-python's describe_groups output: the decoded subscription's
    to_dict(); the rack must come from rack_id, not from the client-id pattern or a rack map."""
    a = RecommendationAssignor(None, "g", rack="b")
    decoded = ConsumerProtocolSubscription.decode(a.metadata({"t"}).encode())
    assert subscription_from(decoded.to_dict()).rack_id == "b"
    # raw bytes, when not decoded
    assert subscription_from(a.metadata({"t"}).encode()).rack_id == "b"
    described = {"member_id": mid("app-1"), "client_id": "app-1-rack-c",
                 "client_host": "/127.0.0.1",
                 "member_metadata": decoded.to_dict(), "member_assignment": None}
    m = member_from(described, RackResolver.parse(["app-1-rack-c=c"]))
    assert m.rack == "b" and m.topics == ("t",)


def test_leader_applies_fitting_recommendation_and_members_learn_it(caplog):
    feed = LatestRecommendations()
    feed.offer(REC)
    leader = RecommendationAssignor(feed, "g", rack="a")
    joined = [join_member(RecommendationAssignor(None, "g", rack="abc"[i]), mid(f"c-{i}", i))
              for i in range(3)]
    with caplog.at_level(logging.INFO, logger="streaming.apply"):
        out = leader.assign(FakeCluster({"t": 6}, {0: "a", 1: "b", 2: "c"}), joined)
    assert {k: [(tp.topic, tp.partition) for tp in v.partitions()] for k, v in out.items()} == {
        mid("c-0", 0): [("t", 0), ("t", 1)], mid("c-1", 1): [("t", 2)],
        mid("c-2", 2): [("t", 3), ("t", 4), ("t", 5)]}
    assert "applying recommendation v3" in caplog.text
    follower = RecommendationAssignor(feed, "g", rack="b")
    follower.on_assignment(ConsumerProtocolAssignment.decode(out[mid("c-1", 1)].encode()), 5)
    assert (follower.owned == (("t", 2),) and follower.considered == 3
            and follower.source == "recommendation")
    assert follower.applied_version == 3


def test_leader_falls_back_when_a_partition_was_added_and_logs_why(caplog):
    feed = LatestRecommendations()
    feed.offer(REC)
    leader = RecommendationAssignor(feed, "g", fallback="range")
    joined = [join_member(RecommendationAssignor(None, "g"), mid(f"c-{i}", i)) for i in range(3)]
    with caplog.at_level(logging.INFO, logger="streaming.apply"):
        out = leader.assign(FakeCluster({"t": 7}), joined)
    assert sorted(tp.partition for v in out.values() for tp in v.partitions()) == list(range(7))
    assert leader.last_decision.assignor == "range" and not leader.last_decision.applied
    rec_line = [r for r in caplog.records if "does not fit" in r.getMessage()]
    assert rec_line and rec_line[0].levelno == logging.WARNING
    assert "1 current partition(s) not in the recommendation" in rec_line[0].getMessage()


def test_replica_racks_reach_the_fallback():
    feed = LatestRecommendations()
    leader = RecommendationAssignor(feed, "g", fallback="balanced")
    joined = [join_member(RecommendationAssignor(None, "g", rack=r), mid(f"c-{i}", i))
              for i, r in enumerate("abc")]
    cluster = FakeCluster({"t": 6}, {0: "a", 1: "b", 2: "c"})  # partition p lives on broker p % 3
    out = leader.assign(cluster, joined)
    # zero lag: balanced places every partition on its own rack
    for i, m in enumerate(joined):
        assert all(tp.partition % 3 == i for tp in out[m.member_id].partitions())


def test_member_of_reads_v0_subscriptions_of_other_assignors():
    sub = ConsumerProtocolSubscription.decode(ConsumerProtocolSubscription(0, ["t"], b"").encode())
    m = member_of(SimpleNamespace(member_id=mid("c-0"), group_instance_id=None, metadata=sub))
    assert m.client_id == "c-0" and m.rack is None and m.owned == () and m.generation is None


def test_strategy_chain():
    chain = strategy(None, "g", rack="a")
    assert [a.name for a in chain] == ["rebalancer", "range"]


# -- rejoin rule -----------------------------------------------------------------------------------

def test_rejoin_reason():
    owned = {("t", 0), ("t", 1)}
    r = REC
    assert plan.rejoin_reason(r, 2, owned, "whatever", "c-0") is None  # same partitions
    reason = plan.rejoin_reason(r, 2, {("t", 0)}, "whatever", "c-0")
    assert reason and "v3" in reason
    assert plan.rejoin_reason(r, 3, {("t", 0)}, "x", "c-0") is None  # leader already considered v3
    assert plan.rejoin_reason(r, None, {("t", 0)}, "x", "c-0") is None  # not assigned yet
    # no part for this member: the leader judges
    assert plan.rejoin_reason(r, 0, set(), "x", "c-7") is None


class FakeConsumer:
    def __init__(self, assignor):
        self.config = {"client_id": "c-1", "group_instance_id": None}
        self.rejoins = 0
        self._coordinator = SimpleNamespace(_assignors={"rebalancer": assignor, "range": object()},
                                            _generation=SimpleNamespace(member_id=mid("c-1", 1)),
                                            rejoin_needed=False, rejoining=False,
                                            request_rejoin=self._rejoin)

    def _rejoin(self):
        self.rejoins += 1

    def poll(self):  # a consumer, not a factory
        pass


def test_rejoin_helper_respects_min_interval():
    feed = LatestRecommendations()
    a = RecommendationAssignor(feed, "g")
    consumer = FakeConsumer(a)
    helper = RejoinOnRecommendation(consumer, feed, "g", min_interval_s=10)
    assert helper.check() is None  # never assigned yet
    fallback = plan.Decision({}, "fallback", "range", "x").user_data()
    a.on_assignment(ConsumerProtocolAssignment(0, [("t", [0])], fallback), 1)
    t0 = a.assigned_at
    assert helper.check(t0 + 20) is None  # no recommendation
    feed.offer(REC)
    assert helper.check(t0 + 1) is None and consumer.rejoins == 0  # too soon after the rebalance
    assert helper.check(t0 + 11) and consumer.rejoins == 1
    assert helper.check(t0 + 12) is None and consumer.rejoins == 1  # too soon after the request
    assert helper.check(t0 + 22) and consumer.rejoins == 2

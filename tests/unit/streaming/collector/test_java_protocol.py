"""Java consumers as the collector sees them, from bytes Java's kafka-clients 4.3.1 wrote.

``tests/data/java_consumer_protocol.json`` is the output of ``tests/java/GroupMember.java protocol``
(``ConsumerProtocol.serializeSubscription/Assignment`` v0-3 and ConsumerGroupDescribe request and
response messages v0-1); tests/integration/test_java_consumers.py regenerates it and checks it is
unchanged.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kafka import TopicPartition
from kafka.protocol.consumer.metadata import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)
from kafka.structs import OffsetAndMetadata, OffsetAndTimestamp

from streaming import config
from streaming.collector import Collector, CollectorOptions, kip848
from streaming.collector.member_metadata import (
    RackResolver,
    decode_assignment,
    decode_subscription,
    member_from,
    subscription_from,
)

JAVA = json.loads((Path(__file__).parents[3] / "data" / "java_consumer_protocol.json").read_text())
OWNED = (("audit", 1), ("orders", 0), ("orders", 2))
NO_PATTERN = RackResolver({}, None)


def _java(name: str) -> bytes:
    return bytes.fromhex(JAVA[name])


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_java_subscriptions_of_every_version_decode(version):
    sub = decode_subscription(_java(f"subscription_v{version}"))
    assert sub.version == version
    assert sorted(sub.topics) == ["audit", "orders"]
    assert sub.user_data == b"\x00\xffud"
    assert sub.owned_partitions == (OWNED if version >= 1 else ())
    assert sub.generation_id == (7 if version >= 2 else -1)
    assert sub.rack_id == ("rack-b" if version >= 3 else None)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_java_subscription_without_user_data_rack_or_generation(version):
    sub = decode_subscription(_java(f"bare_subscription_v{version}"))
    assert (sub.topics, sub.user_data, sub.owned_partitions, sub.generation_id, sub.rack_id) == \
        (("orders",), None, (), -1, None)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_java_assignments_of_every_version_decode(version):
    assert decode_assignment(_java(f"assignment_v{version}")) == OWNED


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_a_classic_java_member_as_describe_groups_hands_it_over(version):
    """kafka-python's describe_groups decodes the metadata itself (a dict) or leaves raw bytes: same
    member."""
    raw_sub, raw_asg = _java(f"subscription_v{version}"), _java(f"assignment_v{version}")
    decoded_sub = ConsumerProtocolSubscription.decode(raw_sub).to_dict()
    decoded_asg = ConsumerProtocolAssignment.decode(raw_asg).to_dict()
    assert (subscription_from(decoded_sub) == subscription_from(raw_sub)
            == decode_subscription(raw_sub))
    members = [member_from({"member_id": "m", "group_instance_id": "i", "client_id": "java-1",
                            "client_host": "/10.0.0.7", "member_metadata": sub,
                            "member_assignment": asg},
                           NO_PATTERN)
               for sub, asg in ((raw_sub, raw_asg), (decoded_sub, decoded_asg))]
    assert members[0] == members[1]
    m = members[0]
    assert (m.topics, m.assigned, m.host,
            m.instance_id) == (("audit", "orders"), OWNED, "10.0.0.7", "i")
    assert m.rack == ("rack-b" if version >= 3 else None)
    assert m.generation_hint == (8 if version >= 2 else None)
    assert "member_epoch" not in m.entry() and "target_assigned" not in m.entry()


def test_the_consumer_group_describe_request_is_what_java_writes():
    request = kip848.ConsumerGroupDescribeRequest(group_ids=["orders-app", "gone"],
                                                  include_authorized_operations=False, version=0)
    assert bytes(request.encode()) == _java("consumer_group_describe_request_v0")


@pytest.mark.parametrize("version", [0, 1])
def test_a_java_consumer_group_describe_response_decodes_into_members(version):
    response = kip848.ConsumerGroupDescribeResponse.decode(
        _java(f"consumer_group_describe_response_v{version}"), version=version)
    group, gone = (kip848.group_result(g) for g in response.groups)
    assert gone["group_id"] == "gone" and "GroupIdNotFound" in gone["error"]
    assert group["error"] is None
    assert (group["group_state"], group["group_epoch"],
            group["assignor_name"]) == ("Reconciling", 12, "uniform")
    first, second = (kip848.member_from(m, NO_PATTERN, group["group_epoch"])
                     for m in group["members"])
    assert (first.member_id, first.instance_id, first.client_id, first.host, first.rack) == \
        ("m-1", "i-1", "c-1", "127.0.0.1", "b")
    assert first.topics == ("audit", "orders")
    assert (first.assigned, first.target,
            first.member_epoch) == ((("orders", 0), ("orders", 2)), (("orders", 0),), 12)
    assert (second.instance_id, second.rack, second.member_epoch) == (None, None, 11)
    assert (second.assigned, second.target) == ((("orders", 1),), (("orders", 1), ("orders", 2)))
    entry = first.entry()
    assert entry["member_epoch"] == 12 and entry["target_assigned"] == [["orders", 0]]
    assert entry["assigned"] == [["orders", 0], ["orders", 2]] and entry["rack"] == "b"


def test_a_member_without_a_rack_falls_back_to_the_rack_map():
    described = {"member_id": "m", "client_id": "orders-7", "client_host": "/10.1.1.1",
                 "rack_id": None, "subscribed_topic_names": ["t"],
                 "assignment": {"topic_partitions": []}, "member_epoch": 3}
    assert kip848.member_from(described, RackResolver.parse(["orders-*=c"])).rack == "c"
    assert kip848.member_from(dict(described, rack_id="a"),
                              RackResolver.parse(["orders-*=c"])).rack == "a"


@pytest.mark.parametrize(("state", "classic"),
                         [("Stable", "Stable"), ("Empty", "Empty"), ("Dead", "Dead"),
                          ("Reconciling", "CompletingRebalance"),
                          ("Assigning", "PreparingRebalance"), ("NotReady", "PreparingRebalance"),
                          ("whatever", None)])
def test_kip848_states_map_to_classic_ones(state, classic):
    assert kip848.classic_state(state) == classic


class TwoProtocolsAdmin:
    """Topic t (partitions 0-2, broker 1 on rack a). Group ``old``: classic, one Java member (v3,
    rack b). Group ``new``: KIP-848, described with the Java-written response (as
    ``orders-app``)."""

    def describe_cluster(self):
        return {"brokers": [{"broker_id": 1, "rack": "a"}]}

    def list_groups(self, broker_ids=None):
        return [{"group_id": "old", "protocol_type": "consumer", "group_type": "Classic"},
                {"group_id": "orders-app", "protocol_type": "consumer", "group_type": "Consumer"},
                {"group_id": "s", "protocol_type": "share", "group_type": "Share"}]

    def describe_groups(self, ids):
        assert ids == ["old"], "only classic groups are described with DescribeGroups"
        return {"old": {"group_state": "Stable", "protocol_type": "consumer",
                        "protocol_data": "range", "error": None,
                        "members": [{"member_id": "j", "group_instance_id": None,
                                     "client_id": "java", "client_host": "/10.0.0.2",
                                     "member_metadata": _java("bare_subscription_v3"),
                                     "member_assignment": _java("assignment_v3")}]}}

    def list_group_offsets(self, specs):
        return {g: {TopicPartition("orders", 0): OffsetAndMetadata(1, "", -1)} for g in specs}

    def describe_topics(self, topics):
        return [{"name": t, "error_code": 0, "partitions": [
            {"partition_index": p, "leader_id": 1, "replica_nodes": [1], "error_code": 0}
            for p in range(3)]}
            for t in topics]

    def list_partition_offsets(self, specs):
        return {tp: OffsetAndTimestamp(10, -1, None) for tp in specs}

    def close(self):
        pass


def test_a_poll_describes_each_group_with_its_own_protocol_and_says_which():
    asked = []

    def describe_consumer_groups(admin, ids):
        asked.append(ids)
        response = kip848.ConsumerGroupDescribeResponse.decode(
            _java("consumer_group_describe_response_v1"), version=1)
        stable = [dict(kip848.group_result(g), group_state="Stable") for g in response.groups]
        return {g["group_id"]: g for g in stable}

    admin = TwoProtocolsAdmin()
    c = Collector(config.Config(), CollectorOptions(), admin=lambda: admin, out=None)
    c.reader._describe_consumer_groups = describe_consumer_groups
    members = {e["group"]: e for e in c.poll_once() if e["type"] == "members"}
    assert asked == [["orders-app"]]
    assert members["old"]["group_protocol"] == "classic" and members["old"]["protocol"] == "range"
    assert ([m["assigned"] for m in members["old"]["members"]]
            == [[["audit", 1], ["orders", 0], ["orders", 2]]])
    new = members["orders-app"]
    assert (new["group_protocol"], new["protocol"],
            new["generation"]) == ("consumer", "uniform", 12)
    got = [(m["member_id"], m["rack"], m["assigned"], m["target_assigned"], m["member_epoch"])
           for m in new["members"]]
    assert got == [
        ("m-1", "b", [["orders", 0], ["orders", 2]], [["orders", 0]], 12),
        ("m-2", None, [["orders", 1]], [["orders", 1], ["orders", 2]], 11)]
    assert "s" not in members


def test_a_reconciling_kip848_group_waits_and_a_missing_one_is_gone():
    def describe_consumer_groups(admin, ids):
        response = kip848.ConsumerGroupDescribeResponse.decode(
            _java("consumer_group_describe_response_v0"), version=0)
        return {g.group_id: kip848.group_result(g) for g in response.groups}

    class Admin(TwoProtocolsAdmin):
        def list_groups(self, broker_ids=None):
            return [{"group_id": g, "protocol_type": "consumer", "group_type": "consumer"}
                    for g in ("orders-app", "gone")]

    admin = Admin()
    c = Collector(config.Config(), CollectorOptions(), admin=lambda: admin, out=None)
    c.reader._describe_consumer_groups = describe_consumer_groups
    evs = c.poll_once()
    assert not [e for e in evs if e["type"] == "members"], (
        "members are in flux while the group reconciles")
    assert c.last_snapshot.gone_groups == {"gone"}
    assert c.last_snapshot.groups["orders-app"].state == "CompletingRebalance"

"""Member metadata decoding (consumer protocol subscription v0-3, assignment) and the rack
fallbacks."""

from __future__ import annotations

import struct

import pytest
from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from kafka.protocol.consumer.metadata import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)
from kafka.structs import TopicPartition

from streaming.collector.member_metadata import (
    DecodeError,
    RackResolver,
    assignment_from,
    decode_assignment,
    decode_subscription,
    generation_hint,
    json_bytes,
    member_from,
    sticky_user_data_generation,
    subscription_from,
)

Owned = ConsumerProtocolSubscription.TopicPartition


def _kafka_python(version: int) -> ConsumerProtocolSubscription:
    kw = {"version": version, "topics": ["orders", "audit"], "user_data": b"\x00\xffud"}
    if version >= 1:
        kw["owned_partitions"] = [Owned(topic="orders", partitions=[2, 0])]
    if version >= 2:
        kw["generation_id"] = 7
    if version >= 3:
        kw["rack_id"] = "rack-b"
    return ConsumerProtocolSubscription(**kw)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_every_subscription_version_decodes_as_kafka_python_encodes_it(version):
    sub = decode_subscription(_kafka_python(version).encode())
    assert sub.version == version
    assert sub.topics == ("orders", "audit")
    assert sub.user_data == b"\x00\xffud"
    assert sub.owned_partitions == ((("orders", 0), ("orders", 2)) if version >= 1 else ())
    assert sub.generation_id == (7 if version >= 2 else -1)
    assert sub.rack_id == ("rack-b" if version >= 3 else None)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_the_dict_describe_groups_returns_reads_the_same(version):
    as_dict = _kafka_python(version).to_dict()  # what KafkaAdminClient.describe_groups hands back
    assert subscription_from(as_dict) == decode_subscription(_kafka_python(version).encode())


def test_hand_built_v3_with_null_rack_and_null_user_data():
    data = (struct.pack(">hi", 3, 1) + struct.pack(">h", 1) + b"t" + struct.pack(">i", -1)
            + struct.pack(">i", 0) + struct.pack(">i", 12) + struct.pack(">h", -1))
    sub = decode_subscription(data)
    assert (sub.topics, sub.user_data, sub.generation_id, sub.rack_id) == (("t",), None, 12, None)


def test_a_later_version_reads_as_v3_and_missing_trailing_fields_take_defaults():
    v3 = _kafka_python(3).encode()
    v4 = struct.pack(">h", 4) + v3[2:] + b"\x00\x00\x00\x05"  # a future field appended
    assert decode_subscription(v4).rack_id == "rack-b"
    v2_without_generation = struct.pack(">h", 2) + _kafka_python(1).encode()[2:]
    assert decode_subscription(v2_without_generation).generation_id == -1


@pytest.mark.parametrize("data", [b"", b"\x00", b"\x00\x00\x00\x00\x00\x05\x00\x01a", b"\xff\xff"])
def test_garbage_is_a_decode_error_and_unreadable_metadata_is_none(data):
    with pytest.raises(DecodeError):
        decode_subscription(data)
    assert subscription_from(data) is None or data == b""


def test_assignment_decodes_from_bytes_dict_and_object():
    a = ConsumerProtocolAssignment(0, [("orders", [3, 1]), ("audit", [0])], b"")
    want = (("audit", 0), ("orders", 1), ("orders", 3))
    assert decode_assignment(a.encode()) == want
    assert assignment_from(ConsumerProtocolAssignment.decode(a.encode()).to_dict()) == want
    assert assignment_from(ConsumerProtocolAssignment.decode(a.encode())) == want
    assert assignment_from(b"") == () and assignment_from(None) == ()


def test_builtin_assignors_metadata_roundtrip_and_carry_no_rack():
    for assignor in (RangePartitionAssignor(), CooperativeStickyAssignor()):
        sub = subscription_from(
            ConsumerProtocolSubscription.decode(assignor.metadata(["t"]).encode()).to_dict())
        assert sub.topics == ("t",) and sub.rack_id is None


def test_sticky_user_data_gives_a_generation_hint_in_both_encodings():
    meta = StickyPartitionAssignor._metadata(["t"], [TopicPartition("t", 3)], 5)
    encoded = meta.encode()
    sub = decode_subscription(encoded)
    assert sticky_user_data_generation(sub.user_data) == 5  # kafka-python: int16 version header
    java = (struct.pack(">i", 1) + struct.pack(">h", 1) + b"t" + struct.pack(">ii", 1, 3)
            + struct.pack(">i", 9))
    assert sticky_user_data_generation(java) == 9  # Java: no header
    assert generation_hint(sub) == 6
    # and through describe_groups' dict, where bytes became a backslash-escaped string
    assert generation_hint(
        subscription_from(ConsumerProtocolSubscription.decode(encoded).to_dict())) == 6
    assert sticky_user_data_generation(b"") is None and sticky_user_data_generation(b"junk") is None
    # user data that is not the sticky assignors' (Kafka Streams' SubscriptionInfo under `stream`)
    # is never read as a generation, even when its bytes happen to parse as one
    assert generation_hint(sub, sticky=False) is None


def test_generation_id_of_v2_gives_a_hint():
    assert generation_hint(decode_subscription(_kafka_python(2).encode())) == 8
    assert generation_hint(decode_subscription(_kafka_python(0).encode())) is None


def test_json_bytes_undoes_backslashreplace():
    raw = bytes(range(256))
    assert json_bytes(raw.decode(errors="backslashreplace")) == raw


def test_rack_comes_from_subscription_then_map_then_client_id_pattern():
    r = RackResolver.parse(["app-7=east", "10.0.0.5=west", "billing-*=north"])
    assert r.rack_for("app-7", "10.0.0.5", "sub-rack") == "sub-rack"
    assert r.rack_for("app-7", "10.0.0.5") == "east"
    assert r.rack_for("other", "10.0.0.5") == "west"
    assert r.rack_for("billing-3", "h") == "north"
    assert r.rack_for("orders-2-rack-c", "h") == "c"
    assert r.rack_for("orders-2", "h") is None
    assert RackResolver.parse([], client_id_pattern=None).rack_for("orders-2-rack-c", "h") is None
    with pytest.raises(ValueError):
        RackResolver.parse(["no-equals-sign"])


def test_member_from_a_describe_groups_member():
    sub = _kafka_python(3).to_dict()
    described = {"member_id": "m-1", "group_instance_id": "inst-1", "client_id": "c",
                 "client_host": "/10.1.2.3", "member_metadata": sub,
                 "member_assignment": ConsumerProtocolAssignment.decode(
                     ConsumerProtocolAssignment(0, [("orders", [1])], b"").encode()).to_dict()}
    m = member_from(described, RackResolver())
    assert m.entry() == {"member_id": "m-1", "instance_id": "inst-1", "client_id": "c",
                         "host": "10.1.2.3", "rack": "rack-b", "topics": ["audit", "orders"],
                         "assigned": [["orders", 1]]}
    assert m.generation_hint == 8

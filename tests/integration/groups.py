"""What Kafka itself says of a group, for the tests that compare against it: its type from
ListGroups (``classic`` or ``consumer``: whether a classic group was converted), and a KIP-848
group's members from ConsumerGroupDescribe (the collector's own reader,
:mod:`streaming.collector.kip848`), per client id."""

from __future__ import annotations

from typing import Any


def _admin(bootstrap: str):
    from kafka import KafkaAdminClient

    return KafkaAdminClient(bootstrap_servers=bootstrap, client_id="groups-test")


def group_type(bootstrap: str, group: str) -> str | None:
    """ListGroups' type of ``group`` (``classic``, ``consumer``, ...), lower-cased; None while it is
    not listed."""
    admin = _admin(bootstrap)
    try:
        found = {g["group_id"]: g for g in admin.list_groups()}.get(group)
    finally:
        admin.close()
    if found is None:
        return None
    return (found.get("group_type") or "").lower() or None


def described(bootstrap: str, group: str) -> dict[str, Any]:
    """ConsumerGroupDescribe of ``group`` (its ``to_dict``); empty while it is not a consumer
    group."""
    from streaming.collector import kip848

    admin = _admin(bootstrap)
    try:
        return kip848.describe(admin, [group]).get(group) or {}
    finally:
        admin.close()


def by_client(group: dict[str, Any], key: str) -> dict[str, set[tuple[str, int]]]:
    """client id -> partitions of each described member's ``key`` (``assignment`` or
    ``target_assignment``)."""
    out = {}
    for m in group.get("members") or ():
        tps = (m.get(key) or {}).get("topic_partitions") or ()
        out[m["client_id"]] = {(tp["topic_name"], int(p)) for tp in tps
                               for p in tp.get("partitions") or ()}
    return out


def classic_members(bootstrap: str, group: str) -> dict[str, str]:
    """client id -> member id of a classic group's members (DescribeGroups)."""
    admin = _admin(bootstrap)
    try:
        found = admin.describe_groups([group]).get(group) or {}
    finally:
        admin.close()
    return {m["client_id"]: m["member_id"] for m in found.get("members") or ()}


def end_offsets(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    """partition -> log end offset of ``topic``."""
    from kafka import TopicPartition
    from kafka.admin import OffsetSpec

    admin = _admin(bootstrap)
    try:
        ends = admin.list_partition_offsets({TopicPartition(topic, p): OffsetSpec.LATEST
                                             for p in range(partitions)})
    finally:
        admin.close()
    return {tp.partition: o.offset for tp, o in ends.items()}

"""The events on Kafka: what the collector writes and the streaming job reads (JSON, UTF-8, key = group).

Three types, as in DESIGN.md:

``lag`` (lag topic), one per partition per poll::

    {"type": "lag", "ts": 1763700000000, "group": "orders-app", "topic": "orders", "partition": 3,
     "committed_offset": 1200, "end_offset": 5000}

  A partition the group never committed carries ``"no_commit": true`` and, as ``committed_offset``, the
  position ``auto.offset.reset`` would start from (begin offset for earliest, end offset for latest), so
  ``end_offset - committed_offset`` is always the lag.

``members`` (metadata topic), on change and at every full refresh::

    {"type": "members", "ts": ..., "group": "orders-app", "generation": 7, "protocol": "range",
     "members": [{"member_id": "...", "instance_id": null, "client_id": "...", "host": "...",
                  "rack": "a", "topics": ["orders"], "assigned": [["orders", 0], ["orders", 1]]}]}

``partitions`` (metadata topic), per group and subscribed topic, on change and at every full refresh::

    {"type": "partitions", "ts": ..., "group": "orders-app", "topic": "orders",
     "partitions": [{"partition": 0, "leader": 1, "replicas": [1, 2], "replica_racks": ["a", "b"]}]}

``ts`` is epoch milliseconds of the observation. The builders below are the only way the project
writes events; :data:`SPARK_SCHEMA` is the one way the job parses them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

LAG = "lag"
MEMBERS = "members"
PARTITIONS = "partitions"
TYPES = (LAG, MEMBERS, PARTITIONS)

# A value larger than this is rejected unparsed (a members event of a 1000-member group is ~200 KB).
MAX_VALUE_BYTES = 4 * 1024 * 1024

SPARK_SCHEMA = (
    "type STRING, ts LONG, group STRING, topic STRING, partition INT, "
    "committed_offset LONG, end_offset LONG, no_commit BOOLEAN, "
    "generation INT, protocol STRING, "
    "members ARRAY<STRUCT<member_id: STRING, instance_id: STRING, client_id: STRING, host: STRING, "
    "rack: STRING, topics: ARRAY<STRING>, assigned: ARRAY<ARRAY<STRING>>>>, "
    "partitions ARRAY<STRUCT<partition: INT, leader: INT, replicas: ARRAY<INT>, replica_racks: ARRAY<STRING>>>"
)


def lag_event(ts: int, group: str, topic: str, partition: int, committed_offset: int, end_offset: int,
              no_commit: bool = False) -> dict[str, Any]:
    event = {"type": LAG, "ts": int(ts), "group": group, "topic": topic, "partition": int(partition),
             "committed_offset": int(committed_offset), "end_offset": int(end_offset)}
    if no_commit:
        event["no_commit"] = True
    return event


def member_entry(member_id: str, topics: Iterable[str], assigned: Iterable[tuple[str, int]],
                 instance_id: str | None = None, client_id: str | None = None, host: str | None = None,
                 rack: str | None = None) -> dict[str, Any]:
    return {"member_id": member_id, "instance_id": instance_id, "client_id": client_id, "host": host,
            "rack": rack, "topics": sorted(set(topics)), "assigned": [[t, int(p)] for t, p in sorted(assigned)]}


def members_event(ts: int, group: str, generation: int, protocol: str | None,
                  members: Sequence[dict[str, Any]], group_protocol: str | None = None) -> dict[str, Any]:
    # group_protocol (optional): "classic" (JoinGroup/SyncGroup) or "consumer" (KIP-848); for "consumer"
    # the generation is Kafka's group epoch and members may carry member_epoch and target_assigned
    event = {"type": MEMBERS, "ts": int(ts), "group": group, "generation": int(generation), "protocol": protocol,
             "members": sorted(members, key=lambda m: m["member_id"])}
    if group_protocol is not None:
        event["group_protocol"] = group_protocol
    return event


def partition_entry(partition: int, leader: int | None, replicas: Sequence[int],
                    replica_racks: Sequence[str | None]) -> dict[str, Any]:
    return {"partition": int(partition), "leader": leader, "replicas": [int(r) for r in replicas],
            "replica_racks": list(replica_racks)}


def partitions_event(ts: int, group: str, topic: str, partitions: Sequence[dict[str, Any]]) -> dict[str, Any]:
    return {"type": PARTITIONS, "ts": int(ts), "group": group, "topic": topic,
            "partitions": sorted(partitions, key=lambda p: p["partition"])}


def encode(event: dict[str, Any]) -> tuple[bytes, bytes]:
    """(key, value) of the Kafka message for ``event``: key = group id, value = compact JSON."""
    return event["group"].encode(), json.dumps(event, separators=(",", ":")).encode()


def topic_for(event: dict[str, Any], lag_topic: str, metadata_topic: str) -> str:
    return lag_topic if event["type"] == LAG else metadata_topic

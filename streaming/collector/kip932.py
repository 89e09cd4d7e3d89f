"""KIP-932 share groups: ShareGroupDescribe (API key 77) and DescribeShareGroupOffsets (API key 90).

A share group's members (share consumers) own no partition: the broker gives each member partitions
to fetch from (several members may be given the same one) and hands out their records one delivery
at a time, keeping each record's state (available, acquired, acknowledged, archived) itself. So a
share-partition has no committed offset. It has a start offset (SPSO: every record before it is done
with) and, from Kafka 4.2 (KIP-1226, DescribeShareGroupOffsets v1), a lag the broker counts: the
records from the SPSO to the log end not yet delivered to completion (acknowledged or archived
records past the SPSO do not count). kafka-python 3.0.12 has no classes for these APIs; the four
below are kafka-python ``ApiMessage`` classes built from the layouts in ``kip932_schemas/``, as
:mod:`streaming.collector.kip848` builds ConsumerGroupDescribe's.

The collector publishes the broker's lag as any group's (:func:`positions`): a lag event's lag is
``end_offset - committed_offset``, so a share-partition's event says
``committed_offset = end - lag``, the position a consumer with that lag would be at. Example: SPSO
100, log end 400, 50 records past 100 already acknowledged out of order: the broker says lag 250,
and the event says committed 150, end 400 (the end the collector read just after the broker counted:
a partition that grew in between still shows lag 250). A partition whose lag the broker does not
report (-1: its state not initialised yet; v0, a broker before 4.2) gets no lag event, never a
made-up one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kafka.protocol.api_message import ApiMessage

import streaming.collector.kip932_schemas as _schemas
from assignors.model import Member
from assignors.model import TopicPartition as TP
from streaming.collector.kip848 import group_result, partitions_of, per_coordinator
from streaming.collector.member_metadata import RackResolver, normalise_host
from streaming.collector.observed import ObservedMember


# kafka-python ships no types, so mypy checks ApiMessage's class keyword against object's
# __init_subclass__
class ShareGroupDescribeRequest(ApiMessage, load_json=_schemas):  # type: ignore[call-arg]
    pass


class ShareGroupDescribeResponse(ApiMessage, load_json=_schemas):  # type: ignore[call-arg]
    pass


class DescribeShareGroupOffsetsRequest(ApiMessage, load_json=_schemas):  # type: ignore[call-arg]
    pass


class DescribeShareGroupOffsetsResponse(ApiMessage, load_json=_schemas):  # type: ignore[call-arg]
    pass


@dataclass(frozen=True)
class ShareOffset:
    """One share-partition as DescribeShareGroupOffsets reports it."""

    start_offset: int
    """the share-partition start offset (SPSO); -1 until the share-partition has state (its first
    acknowledgement), and then nothing else about it is known either (Kafka's tool shows ``-`` for
    all)."""
    leader_epoch: int | None
    lag: int | None
    """records not yet delivered to completion (KIP-1226); None when the broker does not report
    it."""


def _known(value: int | None) -> int | None:
    return None if value is None or value < 0 else int(value)


def share_offsets(group: Mapping[str, Any]) -> tuple[dict[TP, ShareOffset], list[str]]:
    """The share-partitions of one group of a DescribeShareGroupOffsets response (its ``to_dict``),
    and a line for each partition the broker answered with an error (left out)."""
    out: dict[TP, ShareOffset] = {}
    failed: list[str] = []
    for topic in group.get("topics") or ():
        for p in topic.get("partitions") or ():
            tp = (topic["topic_name"], int(p["partition_index"]))
            if p.get("error_code"):
                message = p.get("error_message") or ""
                failed.append(f"{tp[0]}-{tp[1]}: error {p['error_code']} {message}".rstrip())
                continue
            start = int(p["start_offset"])
            # no state yet: the leader epoch the broker still sends is not the share-partition's
            if start < 0:
                out[tp] = ShareOffset(start, None, None)
            else:
                out[tp] = ShareOffset(start, _known(p.get("leader_epoch")), _known(p.get("lag")))
    return out, failed


def positions(offsets: Mapping[TP, ShareOffset], end: Mapping[TP, int]) -> dict[TP, int]:
    """The committed offset each share-partition's lag event says (``end - lag``), for the
    partitions whose lag the broker reports and whose end offset was read; one whose lag exceeds the
    end read (a truncated log) is left out."""
    return {tp: end[tp] - o.lag for tp, o in offsets.items()
            if o.lag is not None and tp in end and o.lag <= end[tp]}


def member_from(described: Mapping[str, Any], racks: RackResolver,
                group_epoch: int | None = None) -> ObservedMember:
    """An :class:`ObservedMember` from one member of a ShareGroupDescribe response (its
    ``to_dict``): what it holds is the partitions the broker gives it records of, which other
    members may hold too."""
    client_id = described.get("client_id") or ""
    host = normalise_host(described.get("client_host"))
    member = Member(member_id=described["member_id"],
                    topics=tuple(sorted(set(described.get("subscribed_topic_names") or ()))),
                    rack=racks.rack_for(client_id, host, described.get("rack_id")),
                    owned=partitions_of(described.get("assignment")), client_id=client_id)
    return ObservedMember(member, host, generation_hint=group_epoch,
                          member_epoch=described.get("member_epoch"))


async def _describe(admin: Any, group_ids: list[str]) -> dict[str, dict[str, Any]]:
    def request(groups: list[str]) -> Any:
        return ShareGroupDescribeRequest(group_ids=groups, include_authorized_operations=False)

    responses = await per_coordinator(admin, group_ids, request)
    return {group.group_id: group_result(group) for response in responses
            for group in response.groups}


async def _offsets(admin: Any, group_ids: list[str]) -> dict[str, dict[str, Any]]:
    def request(groups: list[str]) -> Any:
        every_topic = [DescribeShareGroupOffsetsRequest.Group(group_id=g, topics=None)
                       for g in groups]
        return DescribeShareGroupOffsetsRequest(groups=every_topic)

    responses = await per_coordinator(admin, group_ids, request)
    return {group.group_id: group_result(group) for response in responses
            for group in response.groups}


def describe(admin: Any, group_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """group id -> the ShareGroupDescribe result of every share group in ``group_ids``, from its
    coordinator, with kafka-python's ``KafkaAdminClient`` (``error``: a message, None when fine).
    Raises what the client raises."""
    ids = list(group_ids)
    return admin._manager.run(_describe, admin, ids) if ids else {}


def offsets(admin: Any, group_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """group id -> the DescribeShareGroupOffsets result of every share group in ``group_ids`` (every
    topic it has share-partitions of; read them with :func:`share_offsets`). Raises what the client
    raises."""
    ids = list(group_ids)
    return admin._manager.run(_offsets, admin, ids) if ids else {}

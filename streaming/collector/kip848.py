"""KIP-848 consumer groups (``group.protocol=consumer``): ConsumerGroupDescribe (API key 69).

Classic DescribeGroups does not describe such a group (Kafka 4 answers GROUP_ID_NOT_FOUND), so the
collector asks the group coordinator with ConsumerGroupDescribe instead. kafka-python 3.0.12 has no
classes for this API; the two below are kafka-python ``ApiMessage`` classes built from the layouts
in ``kip848_schemas/`` (flexible from v0: compact strings and arrays, tagged fields; v1 adds
MemberType).

A described member carries what the classic protocol hid in opaque bytes: its rack
(``client.rack``), subscribed topic names, current assignment and target assignment, and its member
epoch; the group carries its epoch, which is Kafka's own generation for this protocol. A consumer
group may hold classic members too (a classic consumer that joined it during an upgrade):
ConsumerGroupDescribe lists them all.

A member that subscribes with a regex the broker matches (Java's ``SubscriptionPattern``, RE2J) is
described with the regex and without the topics it matches; its topics are the cluster's topics the
regex matches whole, as the broker matches them (``matching`` in :func:`member_from`). Example:
regex ``orders-.*`` over topics orders-eu, orders-us and audit: the member subscribes to orders-eu
and orders-us.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kafka.protocol.api_message import ApiMessage

import streaming.collector.kip848_schemas as _schemas
from assignors.model import Member
from streaming.collector.member_metadata import RackResolver, normalise_host
from streaming.collector.observed import ObservedMember

CLASSIC = "classic"
CONSUMER = "consumer"

# KIP-848 group states as ConsumerGroupDescribe spells them, mapped to the classic ones the
# collector reasons with: members are settled only when every member runs the target assignment.
_STATES = {"empty": "Empty", "assigning": "PreparingRebalance",
           "reconciling": "CompletingRebalance", "stable": "Stable", "dead": "Dead",
           "notready": "PreparingRebalance"}


# kafka-python ships no types, so mypy checks ApiMessage's class keyword against object's
# __init_subclass__
class ConsumerGroupDescribeRequest(ApiMessage, load_json=_schemas):  # type: ignore[call-arg]
    pass


class ConsumerGroupDescribeResponse(ApiMessage, load_json=_schemas):  # type: ignore[call-arg]
    pass


def converging(member_epoch: int | None, assignment_epoch: int | None,
               assigned: Iterable[tuple[str, int]],
               target: Iterable[tuple[str, int]] | None) -> bool | None:
    """Whether a KIP-848 member is still on its way to the group's target assignment: its epoch is
    behind the target assignment's, or what it holds is not its target yet (it revokes or awaits
    partitions). None for a member without an epoch (a classic member)."""
    if member_epoch is None:
        return None
    behind = assignment_epoch is not None and member_epoch < assignment_epoch
    return behind or (target is not None and set(assigned) != set(target))


def classic_state(state: str | None) -> str | None:
    """The classic group state that means the same as a KIP-848 ``state`` (None when unknown)."""
    return _STATES.get((state or "").replace("_", "").lower())


def partitions_of(assignment: Mapping[str, Any] | None) -> tuple[tuple[str, int], ...]:
    """The sorted (topic, partition) pairs of a described member's ``assignment`` (its
    ``to_dict``)."""
    out: list[tuple[str, int]] = []
    for tp in (assignment or {}).get("topic_partitions") or ():
        out.extend((tp["topic_name"], int(p)) for p in tp.get("partitions") or ())
    return tuple(sorted(out))


def member_from(described: Mapping[str, Any], racks: RackResolver, group_epoch: int | None = None,
                matching: Callable[[str], Iterable[str]] = lambda regex: ()) -> ObservedMember:
    """An :class:`ObservedMember` from one member of a ConsumerGroupDescribe response (its
    ``to_dict``); ``matching(regex)``: the topics a member's subscribed regex matches."""
    client_id = described.get("client_id") or ""
    host = normalise_host(described.get("client_host"))
    regex = described.get("subscribed_topic_regex")
    topics = (set(described.get("subscribed_topic_names") or ())
              | (set(matching(regex)) if regex else set()))
    member = Member(
        member_id=described["member_id"],
        topics=tuple(sorted(topics)),
        instance_id=described.get("instance_id"),
        rack=racks.rack_for(client_id, host, described.get("rack_id")),
        owned=partitions_of(described.get("assignment")),
        client_id=client_id,
    )
    return ObservedMember(member, host, generation_hint=group_epoch,
                          member_epoch=described.get("member_epoch"),
                          target=partitions_of(described.get("target_assignment")))


def regex_matcher(list_topics: Callable[[], Iterable[str]],
                  warn: Callable[[str], None]) -> Callable[[str], set[str]]:
    """regex -> the topics of ``list_topics()`` it matches whole (RE2J, as the broker matches a
    ``SubscriptionPattern``; Python's re reads the syntax both share the same). The list is read
    once, at the first regex; what cannot be read or compiled is warned of and matches nothing."""
    names: list[str] = []
    read = False

    def matching(regex: str) -> set[str]:
        nonlocal read
        if not read:
            read = True
            try:
                names.extend(list_topics())
            except Exception as e:
                warn(f"topic list unreadable ({type(e).__name__}: {e}); regex members' topics "
                     "unknown this poll")
        try:
            pattern = re.compile(regex)
        except re.error as e:
            warn(f"subscribed regex {regex!r} is not one Python reads ({e}); its topics unknown")
            return set()
        return {t for t in names if pattern.fullmatch(t)}
    return matching


def group_result(group: Any) -> dict[str, Any]:
    """One described group as a plain dict, with ``error`` a message (None when fine), like
    kafka-python's ``describe_groups`` results."""
    import kafka.errors as errors

    result = group.to_dict()
    code = result.pop("error_code", 0)
    message = result.pop("error_message", None)
    result["error"] = str(errors.for_code(code)(message or "")) if code else None
    return result


async def per_coordinator(admin: Any, group_ids: list[str],
                          ask: Callable[[list[str]], Any]) -> list[Any]:
    """The responses of ``ask(groups)`` sent to each group coordinator with the groups of
    ``group_ids`` it coordinates (the share-group APIs, :mod:`streaming.collector.kip932`, are asked
    the same way)."""
    # kafka-python's admin has no public call for these APIs; its coordinator lookup and send are
    # what its own describe_groups uses (batched FindCoordinator v4+, cached per client)
    coordinators = await admin._find_coordinator_ids(group_ids)
    by_node: dict[int, list[str]] = defaultdict(list)
    for group, node in coordinators.items():
        by_node[node].append(group)
    return [await admin._manager.send(ask(groups), node_id=node)
            for node, groups in by_node.items()]


async def _describe(admin: Any, group_ids: list[str]) -> dict[str, dict[str, Any]]:
    def request(groups: list[str]) -> Any:
        return ConsumerGroupDescribeRequest(group_ids=groups, include_authorized_operations=False)

    responses = await per_coordinator(admin, group_ids, request)
    return {group.group_id: group_result(group) for response in responses
            for group in response.groups}


def describe(admin: Any, group_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """group id -> the ConsumerGroupDescribe result of every KIP-848 group in ``group_ids``, from
    its coordinator, with kafka-python's ``KafkaAdminClient``. Raises what the client raises."""
    ids = list(group_ids)
    if not ids:
        return {}
    return admin._manager.run(_describe, admin, ids)

"""Conformance-schema scenarios (``tests/data/conformance/assignor-scenarios.json``) as snapshots.

A scenario is a plain dict: ``topics`` (name -> partition count, in order), ``replica_racks`` (null
or name -> one list of replica racks per partition), ``members`` (``id``, ``instance_id``, ``rack``,
``topics``, ``owned``, ``generation``), optionally ``lags`` (name -> lag per partition),
``produce_rate``/``consume_rate`` (same shape, records per second) and ``prefer_rack_aware_logic``.
Other keys (``name``, ``expected``, ...) are the test's business and are ignored here.

:func:`parse_scenario` checks every field and raises :class:`~assignors.errors.InvalidSnapshot`
naming it (``members[2].topics: member subscribes to nothing``), then builds the snapshot.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from assignors import registry
from assignors.errors import InvalidSnapshot
from assignors.model import Assignment, GroupSnapshot, Member, TopicPartition

__all__ = ["Scenario", "assignment_from_json", "assignment_to_json", "call_assignor",
           "parse_scenario"]


@dataclass(frozen=True)
class Scenario:
    """A parsed scenario: the snapshot and the options any assignor may take from it."""

    snapshot: GroupSnapshot
    options: dict[str, Any] = field(default_factory=dict)
    name: str | None = None


def _is_int(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _opt_str(value: object, where: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise InvalidSnapshot(where, f"must be a string or null, got {value!r}")
    return value


def _partition_list(value: object, where: str,
                    topics: Mapping[str, int]) -> tuple[TopicPartition, ...]:
    if not isinstance(value, list):
        raise InvalidSnapshot(where, f"must be a list of [topic, partition], got {value!r}")
    out = []
    for i, tp in enumerate(value):
        if (not isinstance(tp, list | tuple) or len(tp) != 2 or not isinstance(tp[0], str)
                or not _is_int(tp[1]) or tp[1] < 0):
            raise InvalidSnapshot(f"{where}[{i}]", f"must be [topic, partition >= 0], got {tp!r}")
        out.append((tp[0], tp[1]))
    return tuple(out)


def _per_partition(value: object, where: str, topics: Mapping[str, int], number: type,
                   minimum: float | None = 0) -> dict[str, list]:
    if not isinstance(value, dict):
        raise InvalidSnapshot(where,
                              f"must be an object topic -> list per partition, got {value!r}")
    out: dict[str, list] = {}
    for topic, values in value.items():
        if topic not in topics:
            raise InvalidSnapshot(f"{where}.{topic}", "topic is not in topics")
        if not isinstance(values, list) or len(values) != topics[topic]:
            got = f"{len(values)} entries" if isinstance(values, list) else repr(values)
            raise InvalidSnapshot(f"{where}.{topic}", f"must list one value per partition "
                                  f"({topics[topic]}), got {got}")
        for p, x in enumerate(values):
            ok = (_is_int(x) if number is int
                  else (isinstance(x, int | float) and not isinstance(x, bool)))
            if not ok or (minimum is not None and x < minimum):
                kind = "an integer" if number is int else "a number"
                raise InvalidSnapshot(f"{where}.{topic}[{p}]",
                                      f"must be {kind} >= {minimum}, got {x!r}")
        out[topic] = list(values)
    return out


def _parse_topics(data: dict) -> dict[str, int]:
    """``topics``: name -> partition count, in order."""
    topics_raw = data.get("topics")
    if not isinstance(topics_raw, dict):
        raise InvalidSnapshot("topics",
                              f"must be an object topic -> partition count, got {topics_raw!r}")
    topics: dict[str, int] = {}
    for topic, count in topics_raw.items():
        if not topic:
            raise InvalidSnapshot("topics", "topic name must not be empty")
        if not _is_int(count) or count < 0:
            raise InvalidSnapshot(f"topics.{topic}",
                                  f"partition count must be an integer >= 0, got {count!r}")
        topics[topic] = count
    return topics


def _parse_member(m: object, where: str, seen: dict[str, int], topics: Mapping[str, int]) -> Member:
    """One entry of ``members`` (``seen``: the ids before it, by index)."""
    if not isinstance(m, dict):
        raise InvalidSnapshot(where, f"must be an object, got {m!r}")
    member_id = m.get("id")
    if not isinstance(member_id, str) or not member_id:
        raise InvalidSnapshot(f"{where}.id", f"must be a non-empty string, got {member_id!r}")
    if member_id in seen:
        raise InvalidSnapshot(f"{where}.id",
                              f"duplicate member id {member_id!r} (also "
                              f"members[{seen[member_id]}])")
    subscribed = m.get("topics")
    if not isinstance(subscribed, list) or not all(isinstance(t, str) and t for t in subscribed):
        raise InvalidSnapshot(f"{where}.topics",
                              f"must be a list of topic names, got {subscribed!r}")
    if not subscribed:
        raise InvalidSnapshot(f"{where}.topics", "member subscribes to nothing")
    generation = m.get("generation")
    if generation is not None and not _is_int(generation):
        raise InvalidSnapshot(f"{where}.generation",
                              f"must be an integer or null, got {generation!r}")
    return Member(
        member_id=member_id,
        topics=tuple(subscribed),
        instance_id=_opt_str(m.get("instance_id"), f"{where}.instance_id"),
        rack=_opt_str(m.get("rack"), f"{where}.rack"),
        owned=_partition_list(m.get("owned", []) or [], f"{where}.owned", topics),
        generation=generation,
        client_id=_opt_str(m.get("client_id"), f"{where}.client_id"),
    )


def _parse_members(data: dict, topics: Mapping[str, int]) -> list[Member]:
    """``members``, each checked, with no id twice."""
    members_raw = data.get("members")
    if not isinstance(members_raw, list):
        raise InvalidSnapshot("members", f"must be a list of members, got {members_raw!r}")
    members: list[Member] = []
    seen: dict[str, int] = {}
    for i, m in enumerate(members_raw):
        member = _parse_member(m, f"members[{i}]", seen, topics)
        seen[member.member_id] = i
        members.append(member)
    return members


def _parse_replica_racks(data: dict, topics: Mapping[str, int]) -> dict[str, list[tuple]] | None:
    """``replica_racks``: null, or name -> the replica racks of each partition."""
    racks_raw = data.get("replica_racks")
    if racks_raw is None:
        return None
    if not isinstance(racks_raw, dict):
        raise InvalidSnapshot("replica_racks", f"must be null or an object, got {racks_raw!r}")
    replica_racks = {}
    for topic, per_partition in racks_raw.items():
        where = f"replica_racks.{topic}"
        if topic not in topics:
            raise InvalidSnapshot(where, "topic is not in topics")
        if not isinstance(per_partition, list) or len(per_partition) != topics[topic]:
            got = (f"{len(per_partition)} entries" if isinstance(per_partition, list)
                   else repr(per_partition))
            raise InvalidSnapshot(where,
                                  f"must list the replica racks of each of the {topics[topic]} "
                                  f"partitions, got {got}")
        rows = []
        for p, racks in enumerate(per_partition):
            if not isinstance(racks, list) or not all(r is None or isinstance(r, str)
                                                      for r in racks):
                raise InvalidSnapshot(f"{where}[{p}]",
                                      f"must be a list of rack names or nulls, got {racks!r}")
            rows.append(tuple(racks))
        replica_racks[topic] = rows
    return replica_racks


def _parse_options(data: dict, member_ids: list[str]) -> dict[str, Any]:
    """The assignor options: ``prefer_rack_aware_logic`` and ``java_member_iteration_order``."""
    options: dict[str, Any] = {}
    prefer = data.get("prefer_rack_aware_logic", False)
    if prefer is None:
        prefer = False
    if not isinstance(prefer, bool):
        raise InvalidSnapshot("prefer_rack_aware_logic", f"must be true or false, got {prefer!r}")
    options["prefer_rack_aware_logic"] = prefer
    order = data.get("java_member_iteration_order")
    if order is not None:
        if not isinstance(order, list) or sorted(order) != sorted(member_ids):
            raise InvalidSnapshot("java_member_iteration_order",
                                  "must list every member id exactly once")
        options["java_member_iteration_order"] = list(order)
    return options


def parse_scenario(data: object) -> Scenario:
    """Check a scenario dict and build its :class:`Scenario`; :class:`InvalidSnapshot` names a bad
    field."""
    if not isinstance(data, dict):
        raise InvalidSnapshot("scenario", f"must be a JSON object, got {type(data).__name__}")
    topics = _parse_topics(data)
    members = _parse_members(data, topics)
    replica_racks = _parse_replica_racks(data, topics)
    lag = _per_partition(data["lags"], "lags", topics, int) if data.get("lags") is not None else {}
    produce = (_per_partition(data["produce_rate"], "produce_rate", topics, float)
               if data.get("produce_rate") is not None else {})
    consume = (_per_partition(data["consume_rate"], "consume_rate", topics, float)
               if data.get("consume_rate") is not None else {})
    options = _parse_options(data, [m.member_id for m in members])
    snapshot = GroupSnapshot(topics=topics, members=tuple(members), replica_racks=replica_racks,
                             lag=lag, produce_rate=produce, consume_rate=consume)
    name = data.get("name")
    return Scenario(snapshot=snapshot, options=options,
                    name=name if isinstance(name, str) else None)


def call_assignor(fn: Callable[..., Assignment], snapshot: GroupSnapshot,
                  options: Mapping[str, Any]) -> Any:
    """Call an assignor function with only the scenario options it takes.

    For a function of a registered assignor's module (``assign``, ``assign_with_transfers``) the
    registry's declaration decides, so ``prefer_rack_aware_logic`` reaches Kafka's assignors and not
    ``balanced``; for any other function, its signature (all options if it takes ``**``).
    """
    declared = registry.options_of_module(getattr(fn, "__module__", "") or "")
    if declared is not None:
        return fn(snapshot, **{k: v for k, v in options.items() if k in declared})
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return fn(snapshot, **options)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return fn(snapshot, **options)
    return fn(snapshot, **{k: v for k, v in options.items() if k in params})


def assignment_to_json(assignment: Assignment) -> dict[str, list[list]]:
    """member -> [[topic, partition], ...], ready for ``json.dumps``."""
    return {member: [[t, p] for t, p in tps] for member, tps in assignment.items()}


def assignment_from_json(data: Mapping[str, list]) -> Assignment:
    """The inverse of :func:`assignment_to_json`."""
    return {member: [(t, int(p)) for t, p in tps] for member, tps in data.items()}

"""Which events a poll emits: pure decisions over plain values, no Kafka client.

- Lag: one event per partition of every topic the group subscribes to, every poll, built by
  :func:`lag_events`. A partition whose committed or end offset could not be read this poll is left
  out (and reported back), never given a made-up lag.
- Members: when the group's membership or assignment differs from the last one emitted for the
  group, and at every full refresh. Only for groups that are ``Stable`` or ``Empty``: during a
  rebalance the members and their assignments are in flux and the collector waits for the outcome.
- Partitions: per group and subscribed topic, when the topic's leaders, replicas or replica racks
  differ from the last ones emitted for that group, and at every full refresh.

Generation: classic DescribeGroups does not return the group's generation, so it is derived here.
The first members event of a group (in this collector's life) carries 1 or, when members'
subscriptions tell (v2+ ``generation_id``, sticky user data), the least generation they imply; every
later change of membership or assignment takes ``max(last + 1, hint)``. It is strictly increasing
per group for as long as the collector runs: a group that vanishes and comes back continues from its
last generation. It is not Kafka's generation id (which nothing in the classic admin API exposes);
it restarts when the collector restarts, unless the members' subscriptions carry hints. For a
KIP-848 group the hint is the group epoch ConsumerGroupDescribe returns, so there the generation
follows Kafka's own epoch.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from streaming.contracts import events

EARLIEST = "earliest"
LATEST = "latest"
POLICIES = (EARLIEST, LATEST)

# group states whose membership is settled (a group in PreparingRebalance/CompletingRebalance is
# not)
SETTLED_STATES = frozenset({"Stable", "Empty"})


@dataclass(frozen=True)
class LagResult:
    events: list[dict[str, Any]]
    missing: list[tuple[str, int]]
    """partitions left out this poll, with no event (offset lookup failed, or committed > end)."""
    inconsistent: list[tuple[str, int]] = field(default_factory=list)
    """the subset of ``missing`` whose committed offset was past the end offset."""


def lag_events(ts: int, group: str, partitions: Iterable[tuple[str, int]],
               committed: Mapping[tuple[str, int], int], end: Mapping[tuple[str, int], int],
               begin: Mapping[tuple[str, int], int], policy: str) -> LagResult:
    """Lag events of ``group`` for ``partitions``.

    ``committed`` holds only partitions the group committed (a partition absent from it has no
    commit); ``end`` and ``begin`` hold the partitions whose offsets were read. With no commit the
    event's committed offset is where ``policy`` would start (``latest``: the end offset, lag 0;
    ``earliest``: the begin offset, lag end - begin) and it is flagged ``no_commit``. Every event
    carries its partition's begin offset as ``log_start_offset`` when it was read (at most the end
    offset).
    """
    if policy not in POLICIES:
        raise ValueError(f"offset reset policy must be one of {POLICIES}, got {policy!r}")
    out: list[dict[str, Any]] = []
    missing: list[tuple[str, int]] = []
    inconsistent: list[tuple[str, int]] = []
    for tp in sorted(set(partitions)):
        if tp not in end:
            missing.append(tp)
            continue
        end_offset = end[tp]
        start = min(begin[tp], end_offset) if tp in begin else None
        if tp in committed and committed[tp] >= 0:
            if committed[tp] > end_offset:
                missing.append(tp)
                inconsistent.append(tp)
                continue
            out.append(events.lag_event(
                ts, group, tp[0], tp[1], committed[tp], end_offset, log_start_offset=start
            ))
        elif policy == LATEST:
            out.append(events.lag_event(
                ts, group, tp[0], tp[1], end_offset, end_offset, True, start
            ))
        elif start is not None:
            out.append(events.lag_event(ts, group, tp[0], tp[1], start, end_offset, True, start))
        else:
            missing.append(tp)
    return LagResult(out, missing, inconsistent)


def members_signature(protocol: str | None, members: Sequence[Mapping[str, Any]],
                      group_protocol: str | None = None) -> tuple:
    return (protocol, group_protocol, tuple(sorted(
        (m["member_id"], m.get("instance_id"), m.get("client_id"), m.get("host"), m.get("rack"),
         tuple(m.get("topics") or ()), tuple(tuple(a) for a in m.get("assigned") or ()))
        for m in members)))


def partitions_signature(partitions: Sequence[Mapping[str, Any]]) -> tuple:
    return tuple(sorted((p["partition"], p.get("leader"), tuple(p.get("replicas") or ()),
                         tuple(p.get("replica_racks") or ())) for p in partitions))


class MetadataTracker:
    """Remembers what was last emitted per group (and group + topic) and derives generations."""

    def __init__(self) -> None:
        self._members: dict[str, tuple] = {}
        self._generation: dict[str, int] = {}
        self._partitions: dict[tuple[str, str], tuple] = {}

    def generation(self, group: str) -> int | None:
        return self._generation.get(group)

    def members_event(
        self,
        ts: int,
        group: str,
        state: str | None,
        protocol: str | None,
        members: Sequence[Mapping[str, Any]],
        hint: int | None = None,
        full_refresh: bool = False,
        group_protocol: str | None = None,
    ) -> dict[str, Any] | None:
        """The members event for this observation of ``group``, or None when there is nothing to
        say."""
        if state is not None and state not in SETTLED_STATES:
            return None
        sig = members_signature(protocol, members, group_protocol)
        last = self._members.get(group)
        changed = last != sig
        if not changed and not full_refresh:
            return None
        generation = self._generation.get(group)
        if generation is None:
            generation = max(1, hint or 0)
        elif changed:
            generation = max(generation + 1, hint or 0)
        self._generation[group] = generation
        self._members[group] = sig
        return events.members_event(
            ts, group, generation, protocol, [dict(m) for m in members], group_protocol
        )

    def partitions_events(
        self,
        ts: int,
        group: str,
        topics: Mapping[str, Sequence[Mapping[str, Any]]],
        full_refresh: bool = False,
    ) -> list[dict[str, Any]]:
        """Partitions events of ``group`` for its subscribed ``topics`` (topic -> partition
        entries). Topics the group no longer subscribes to are forgotten, so a later subscription
        re-emits."""
        out = []
        for topic in sorted(topics):
            entries = topics[topic]
            sig = partitions_signature(entries)
            key = (group, topic)
            if full_refresh or self._partitions.get(key) != sig:
                self._partitions[key] = sig
                out.append(events.partitions_event(ts, group, topic, [dict(e) for e in entries]))
        for key in [k for k in self._partitions if k[0] == group and k[1] not in topics]:
            del self._partitions[key]
        return out

    def forget_group(self, group: str) -> None:
        """The group vanished: its next appearance is reported afresh (the generation counter
        stays)."""
        self._members.pop(group, None)
        for key in [k for k in self._partitions if k[0] == group]:
            del self._partitions[key]

    def forget_topic(self, topic: str) -> None:
        for key in [k for k in self._partitions if k[1] == topic]:
            del self._partitions[key]

    def groups(self) -> set[str]:
        return set(self._members) | {g for g, _ in self._partitions}


def partition_entries(
    described_partitions: Iterable[Mapping[str, Any]],
    broker_racks: Mapping[int, str | None],
) -> list[dict[str, Any]]:
    """Partition entries from kafka-python ``describe_topics`` partitions and broker id -> rack."""
    out = []
    for p in described_partitions:
        replicas = [int(r) for r in p.get("replica_nodes") or ()]
        leader = p.get("leader_id")
        out.append(events.partition_entry(
            p["partition_index"], leader if leader is not None and leader >= 0 else None, replicas,
            [broker_racks.get(r) for r in replicas]))
    return sorted(out, key=lambda e: e["partition"])


def is_full_refresh(poll_number: int, every: int) -> bool:
    """Poll numbers start at 1; the first poll is not a refresh (everything is new then anyway)."""
    return every > 0 and poll_number > 1 and (poll_number - 1) % every == 0

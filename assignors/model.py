"""The values every assignor takes and returns.

A :class:`GroupSnapshot` is what a group leader knows at a rebalance, plus the load the rebalancer
measured: topics with partition counts, each partition's replica racks and load, and the members
with their subscriptions, racks, static ids and what they owned. An :class:`Assignment` maps member
id to the list of ``(topic, partition)`` it gets.

Partitions are plain ``(topic, partition)`` tuples and per-partition figures are per-topic sequences
indexed by partition: at a million partitions, one object per partition costs more than the
assignment.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from assignors.errors import InvalidSnapshot

TopicPartition = tuple[str, int]
"""A partition as ``(topic, partition)``: the one topic-partition type of the project."""
Assignment = dict[str, list[TopicPartition]]

_EMPTY: Mapping = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Member:
    """One consumer of the group, as the group leader sees it in the JoinGroup responses: the one
    member type of the project (the collector, the state's snapshots and the consumer side use it).
    A member may subscribe to nothing (a consumer using ``assign()``); a :class:`GroupSnapshot`
    takes only members that subscribe to something."""

    member_id: str
    topics: tuple[str, ...]
    instance_id: str | None = None
    rack: str | None = None
    owned: tuple[TopicPartition, ...] = ()
    generation: int | None = None
    client_id: str | None = None
    host: str | None = None
    """where the member connects from, as the coordinator reports it (names a member across
    rejoins)"""

    def __post_init__(self) -> None:
        if not isinstance(self.member_id, str) or not self.member_id:
            raise InvalidSnapshot("members[].member_id",
                                  f"must be a non-empty string, got {self.member_id!r}")

    @property
    def label(self) -> str:
        """How logs name the member: its static id, else its client id, else its member id."""
        return self.instance_id or self.client_id or self.member_id

    @property
    def identity(self) -> str:
        """What the member is across rejoins (member ids change on every one): its static id, else
        client id @ host, else its member id. The job's membership changes and capacities and a
        proposal's expiry go by it."""
        if self.instance_id:
            return f"instance:{self.instance_id}"
        if self.client_id:
            return f"client:{self.client_id}@{self.host or ''}"
        return f"member:{self.member_id}"


@dataclass(frozen=True, slots=True)
class GroupSnapshot:
    """A consumer group at one moment.

    ``topics`` keeps insertion order (it is the order the metadata listed them in).
    ``replica_racks`` is ``None`` when brokers have no racks, else topic -> one tuple of replica
    racks per partition (a ``None`` entry is a broker without a rack). ``lag``, ``produce_rate`` and
    ``consume_rate`` are topic -> one value per partition; a topic absent from ``lag`` has unknown
    lag, taken as 0. ``stuck`` lists partitions whose committed offset does not move while they have
    lag. ``capacity``: member id -> records/s it can consume, for every member (None: unknown, the
    members taken as alike); an assignor that reads it balances time (load / capacity) rather than
    records. ``capacity_at_least``: the members whose ``capacity`` is only a lower bound (never
    measured behind: what they read now); a plan to a target utilisation holds only the others to it
    (:mod:`assignors.balanced.utilisation`).
    """

    topics: Mapping[str, int]
    members: tuple[Member, ...]
    replica_racks: Mapping[str, Sequence[Sequence[str | None]]] | None = None
    lag: Mapping[str, Sequence[int]] = field(default_factory=lambda: _EMPTY)
    produce_rate: Mapping[str, Sequence[float]] = field(default_factory=lambda: _EMPTY)
    consume_rate: Mapping[str, Sequence[float]] = field(default_factory=lambda: _EMPTY)
    stuck: frozenset[TopicPartition] = frozenset()
    capacity: Mapping[str, float] | None = None
    capacity_at_least: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        for topic, count in self.topics.items():
            if not isinstance(count, int) or isinstance(count, bool) or count < 0:
                raise InvalidSnapshot(f"topics.{topic}",
                                      f"partition count must be an integer >= 0, got {count!r}")
        seen: set[str] = set()
        for m in self.members:
            if not m.topics:
                raise InvalidSnapshot(f"members[{m.member_id}].topics",
                                      "member subscribes to no topic")
            if m.member_id in seen:
                raise InvalidSnapshot("members", f"member id {m.member_id!r} appears twice")
            seen.add(m.member_id)
        if self.replica_racks is not None:
            for topic, racks in self.replica_racks.items():
                expected = self.topics.get(topic)
                if expected is not None and len(racks) != expected:
                    raise InvalidSnapshot(
                        f"replica_racks.{topic}",
                        f"has {len(racks)} entries for {expected} partitions"
                    )
        for name, per_topic in (("lag", self.lag), ("produce_rate", self.produce_rate),
                                ("consume_rate", self.consume_rate)):
            for topic, values in per_topic.items():
                expected = self.topics.get(topic)
                if expected is not None and len(values) != expected:
                    raise InvalidSnapshot(f"{name}.{topic}",
                                          f"has {len(values)} entries for {expected} partitions")
        if self.capacity is not None:
            for m in self.members:
                c = self.capacity.get(m.member_id)
                if (isinstance(c, bool) or not isinstance(c, int | float) or not math.isfinite(c)
                        or c <= 0):
                    raise InvalidSnapshot(f"capacity.{m.member_id}",
                                          f"must be a finite number > 0, got {c!r}")

    # -- derived views -----------------------------------------------------------------------------

    def partitions(self, topic: str) -> int:
        """Partition count of ``topic``; 0 for a topic that is not in the metadata."""
        return self.topics.get(topic, 0)

    def subscribed_partitions(self) -> list[TopicPartition]:
        """Every partition some member subscribes to, in topic order then partition order."""
        wanted = {t for m in self.members for t in m.topics}
        return [(t, p) for t, n in self.topics.items() if t in wanted for p in range(n)]

    def racks_of(self, tp: TopicPartition) -> frozenset[str]:
        """The racks holding a replica of ``tp`` (empty when racks are unknown)."""
        if self.replica_racks is None:
            return frozenset()
        racks = self.replica_racks.get(tp[0])
        if racks is None:
            return frozenset()
        return frozenset(r for r in racks[tp[1]] if r is not None)

    def current_assignment(self) -> Assignment:
        """What the members report they own now (their ``owned`` partitions)."""
        return {m.member_id: list(m.owned) for m in self.members}


def partition_lag(committed: int | None, begin: int, end: int,
                  auto_offset_reset: str = "latest") -> int:
    """Lag of one partition in records, as grantneale's assignor computes it.

    With a committed offset the lag is ``end - committed``. Without one the consumer would start
    where ``auto.offset.reset`` points: ``latest`` (any case) gives lag 0; every other value,
    ``none`` included, counts the whole retained log ``end - begin``, exactly as grantneale's
    ``computePartitionLag`` does. Lag never goes below 0 (an end offset that failed to read is 0).
    """
    mode = auto_offset_reset.lower() if isinstance(auto_offset_reset, str) else auto_offset_reset
    if mode not in ("latest", "earliest", "none") and not (
            isinstance(mode, str) and mode.startswith("by_duration:")):
        raise InvalidSnapshot("auto_offset_reset",
                              f"must be earliest, latest or none, got {auto_offset_reset!r}")
    if committed is not None and committed >= 0:
        return max(0, end - committed)
    if mode == "latest":
        return 0
    return max(0, end - begin)

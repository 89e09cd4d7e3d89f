"""Assignment strategies for live kafka-python groups, side by side in a closed-loop benchmark.

Each strategy is a ``partition_assignment_strategy`` list for one consumer (see
:func:`assignors_for`):

- ``range``: kafka-python's own ``RangePartitionAssignor`` (eager);
- ``cooperative-sticky``: Kafka's ``CooperativeStickyAssignor`` as
  :mod:`assignors.sticky.cooperative` computes it bit for bit with kafka-clients 4.3, rack-aware
  (KIP-881), on kafka-python's cooperative protocol (KIP-429: a moving partition is withheld one
  round, its old owner revokes it and rejoins). kafka-python's own ``cooperative-sticky`` is
  cooperative too but sends no rack and ignores racks, so it is not what a Java group with
  ``client.rack`` runs; it is available as ``cooperative-sticky-py``;
- ``lag``: grantneale's lag-based assignor (:mod:`assignors.lag`), run by the leader at each
  rebalance on the lag it reads then (committed offsets of the group and end offsets,
  :func:`offsets_lag`);
- ``rebalancer``: :class:`~streaming.apply.assignor.RecommendationAssignor`, the project's
  recommendations (built by the caller, which owns the feed;
  :class:`RecordingRecommendationAssignor`);
- ``oracle``: a given assignment, the leader asking a plan for the members it has (built by the
  caller, which knows the workload: :func:`planned_assignor`; eager, like ``range``).

Every assignor reports each assignment a member receives to a :class:`RebalanceLog`, from which the
benchmark counts rebalances and partitions moved: the group's own record, not the collector's polls,
which miss a cooperative rebalance's short first round.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kafka.coordinator.assignors.abstract import AbstractPartitionAssignor, RebalanceProtocol
from kafka.protocol.consumer.metadata import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)

from assignors import lag as grantneale
from assignors.model import Assignment, GroupSnapshot, Member, partition_lag
from assignors.sticky import cooperative as coop
from streaming.apply import identities
from streaming.apply.assignor import (
    RecommendationAssignor,
    member_of,
    replica_racks,
    topic_partitions,
)
from streaming.config import Config

log = logging.getLogger(__name__)

KAFKA_STRATEGIES = ("range", "cooperative-sticky", "lag")
STRATEGIES = (*KAFKA_STRATEGIES, "rebalancer", "oracle")
EXTRA_STRATEGIES = ("cooperative-sticky-py",)

LagSource = Callable[[Mapping[str, int]], Mapping[str, Sequence[int]] | None]
Plan = Callable[[Sequence[str]], Mapping[str, Sequence[tuple[str, int]]]]
"""The members' client ids -> each one's partitions."""


@dataclass(frozen=True)
class Received:
    """One assignment one member received."""

    t: float
    """``time.monotonic()`` when it arrived."""
    generation: int
    client_id: str
    partitions: frozenset[tuple[str, int]]


class RebalanceLog:
    """Every assignment the members of one group receive (thread-safe; members run in threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.received: list[Received] = []

    def record(self, client_id: str, generation: int, partitions: Any) -> None:
        parts = frozenset((tp.topic, tp.partition) if hasattr(tp, "topic") else (tp[0], int(tp[1]))
                          for tp in partitions)
        with self._lock:
            self.received.append(Received(time.monotonic(), int(generation), client_id, parts))

    def snapshot(self) -> list[Received]:
        with self._lock:
            return list(self.received)


def offsets_lag(cfg: Config, group: str, offset_reset: str = "earliest") -> LagSource:
    """A lag source for a leader: topic -> lag per partition, from the group's committed offsets and
    the end offsets at the moment of the call (what grantneale's assignor reads at each
    rebalance)."""

    def read(topics: Mapping[str, int]) -> Mapping[str, Sequence[int]] | None:
        from kafka import KafkaConsumer, TopicPartition

        from streaming.kafka_clients import factories as kafka_clients

        tps = [TopicPartition(t, p) for t, n in topics.items() for p in range(n)]
        if not tps:
            return None
        admin = kafka_clients.admin(cfg)
        reader = KafkaConsumer(**(kafka_clients.python_client_options(cfg, "consumer")
                                  | {"group_id": None, "enable_auto_commit": False}))
        try:
            committed = admin.list_group_offsets({group: tps}).get(group, {})
            ends = reader.end_offsets(tps)
            begins = reader.beginning_offsets(tps)
        finally:
            reader.close()
            admin.close()
        return lags_of(topics, committed, begins, ends, offset_reset)

    return read


def lags_of(topics: Mapping[str, int], committed: Mapping[Any, Any], begins: Mapping[Any, int],
            ends: Mapping[Any, int], offset_reset: str) -> dict[str, list[int]]:
    """topic -> lag per partition, each from its own committed offset (an ``OffsetAndMetadata``;
    none, or a negative one, is no commit) and log bounds, keyed by ``(topic, partition)`` (kafka's
    ``TopicPartition`` is that tuple)."""
    out: dict[str, list[int]] = {t: [0] * n for t, n in topics.items()}
    for t, n in topics.items():
        for p in range(n):
            offset = getattr(committed.get((t, p)), "offset", None)
            out[t][p] = partition_lag(offset if offset is not None and offset >= 0 else None,
                                      begins.get((t, p), 0), ends.get((t, p), 0), offset_reset)
    return out


class SnapshotAssignor(AbstractPartitionAssignor):
    """A kafka-python assignor around a pure one of :mod:`assignors`: the leader builds the
    :class:`~assignors.model.GroupSnapshot` (members with racks, owned partitions and generations
    from subscription v3; replica racks from the metadata; lag from ``lag_source`` when given) and
    returns what ``assign_fn`` computes. One instance per consumer."""

    version = 3

    def __init__(self, name: str, assign_fn: Callable[[GroupSnapshot], Assignment],
                 cooperative: bool, client_id: str, rack: str | None,
                 rebalances: RebalanceLog | None = None,
                 lag_source: LagSource | None = None) -> None:
        self._name = name
        self.assign_fn = assign_fn
        self.cooperative = cooperative
        self.client_id = client_id
        self.rack = rack or None
        self.rebalances = rebalances
        self.lag_source = lag_source
        self.owned: tuple[tuple[str, int], ...] = ()
        self.generation: int | None = None

    @property
    def name(self) -> str:
        return self._name

    def supported_protocols(self) -> list[RebalanceProtocol]:
        return [RebalanceProtocol.COOPERATIVE if self.cooperative else RebalanceProtocol.EAGER]

    def metadata(self, topics: Any) -> ConsumerProtocolSubscription:
        by_topic: dict[str, list[int]] = {}
        for t, p in self.owned:
            by_topic.setdefault(t, []).append(p)
        return ConsumerProtocolSubscription(
            version=3, topics=sorted(topics),
            user_data=identities.subscription_user_data(self.rack, self.client_id),
            owned_partitions=[(t, sorted(ps)) for t, ps in sorted(by_topic.items())],
            generation_id=self.generation if self.generation is not None else -1, rack_id=self.rack)

    def on_assignment(self, assignment: Any, generation: int) -> None:
        self.owned = tuple(sorted((tp.topic, tp.partition) for tp in assignment.partitions()))
        self.generation = generation
        if self.rebalances is not None:
            self.rebalances.record(self.client_id, generation, assignment.partitions())

    def assign(self, cluster: Any, members: Sequence[Any]) -> dict[str, ConsumerProtocolAssignment]:
        current = [member_of(m) for m in members]
        topics = topic_partitions(cluster, sorted({t for m in current for t in m.topics}))
        lag: Mapping[str, Sequence[int]] = {}
        if self.lag_source is not None:
            try:
                lag = self.lag_source(topics) or {}
            except Exception as e:  # grantneale's assignor takes unknown lag as 0 as well
                log.warning("%s: reading lag failed (%s); lag taken as 0", self.name, e)
        snapshot = GroupSnapshot(
            topics={t: n for t, n in topics.items() if n > 0},
            members=tuple(
                Member(m.member_id, m.topics, m.instance_id, m.rack, m.owned, m.generation,
                       m.client_id) for m in current),
            replica_racks=replica_racks(cluster, topics),
            lag={t: v for t, v in lag.items() if topics.get(t)})
        result = self.assign_fn(snapshot)
        out = {}
        for m in current:
            by_topic: dict[str, list[int]] = {}
            for t, p in result.get(m.member_id, []):
                by_topic.setdefault(t, []).append(p)
            out[m.member_id] = ConsumerProtocolAssignment(
                0, [(t, sorted(ps)) for t, ps in sorted(by_topic.items())], b"")
        log.info("%s: assigned %s", self.name,
                 ", ".join(f"{m.label}:{len(result.get(m.member_id, []))}" for m in current))
        return out


class Recording(AbstractPartitionAssignor):
    """A kafka-python built-in assignor that also reports each assignment to a
    :class:`RebalanceLog`."""

    def __init__(self, inner: Any, client_id: str, rebalances: RebalanceLog) -> None:
        self.inner = inner
        self.client_id = client_id
        self.rebalances = rebalances
        self.version = inner.version

    @property
    def name(self) -> str:
        return self.inner.name

    def supported_protocols(self) -> list[RebalanceProtocol]:
        return self.inner.supported_protocols()

    def metadata(self, topics: Any) -> Any:
        return self.inner.metadata(topics)

    def assign(self, cluster: Any, members: Sequence[Any]) -> Any:
        return self.inner.assign(cluster, members)

    def on_assignment(self, assignment: Any, generation: int) -> None:
        self.inner.on_assignment(assignment, generation)
        self.rebalances.record(self.client_id, generation, assignment.partitions())


class RecordingRecommendationAssignor(RecommendationAssignor):
    """:class:`RecommendationAssignor` that also reports each assignment to a
    :class:`RebalanceLog`."""

    def __init__(self, *args: Any, rebalances: RebalanceLog, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.rebalances = rebalances

    def on_assignment(self, assignment: Any, generation: int) -> None:
        super().on_assignment(assignment, generation)
        self.rebalances.record(self.client_id or "?", generation, assignment.partitions())


def planned_assignor(plan: Plan, client_id: str, rack: str | None, rebalances: RebalanceLog,
                     name: str = "oracle") -> SnapshotAssignor:
    """An assignor whose leader hands out what ``plan`` says for the members present, by client id.
    A client id twice in the group (a member that rejoined before its old self left) gets its
    partitions once."""

    def assign(snapshot: GroupSnapshot) -> Assignment:
        ids = [m.client_id or m.member_id for m in snapshot.members]
        wanted = plan(sorted(set(ids)))
        out: Assignment = {}
        for m, cid in zip(snapshot.members, ids, strict=True):
            out[m.member_id] = list(wanted.get(cid, ()))
            wanted = {k: v for k, v in wanted.items() if k != cid}
        return out

    return SnapshotAssignor(name, assign, False, client_id, rack, rebalances)


def assignors_for(strategy: str, cfg: Config, group: str, client_id: str, rack: str | None,
                  rebalances: RebalanceLog) -> list[Any]:
    """The assignor list of one consumer of ``group`` for one of the Kafka strategies
    (``rebalancer`` needs a feed: see :class:`RecordingRecommendationAssignor`)."""
    from streaming.dev.workload.consumers import builtin_assignor

    if strategy == "range":
        return [Recording(builtin_assignor("range"), client_id, rebalances)]
    if strategy == "cooperative-sticky-py":
        return [Recording(builtin_assignor("cooperative-sticky"), client_id, rebalances)]
    if strategy == "cooperative-sticky":
        return [SnapshotAssignor(coop.NAME, coop.assign, True, client_id, rack, rebalances)]
    if strategy == "lag":
        return [
            SnapshotAssignor(grantneale.NAME, grantneale.assign, False, client_id, rack, rebalances,
                             lag_source=offsets_lag(cfg, group))]
    raise ValueError(f"unknown strategy {strategy!r}; one of "
                     f"{', '.join((*KAFKA_STRATEGIES, *EXTRA_STRATEGIES))}")

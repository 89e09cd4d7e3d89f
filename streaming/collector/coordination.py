"""Dynamic sharding: collectors share the shards by joining one Kafka consumer group.

Every collector started with ``--shards N`` joins the consumer group ``rebalancer.collectors`` (the
name is ``--shard-group``) subscribed to a coordination topic of the same name with N partitions,
created if missing. Kafka's group protocol decides who owns what: the partitions a collector is
assigned are its shards (:class:`~streaming.collector.shards.ShardSet`). When a collector dies its
session times out and the others are handed its shards; when one stops cleanly it leaves the group
and the hand-over is immediate. There is no coordinator of our own, and nothing is ever written to
or read from the topic: only its partitions matter (the consumer pauses them so it does not even
fetch).

Ownership and its limits:

- The assignor is eager (round robin), so every collector gives up all its shards (the listener's
  revoke) before any collector is assigned any: once a rebalance completes, no shard has two owners.
- A collector learns of a rebalance only when it calls ``poll()`` on the consumer, which it does at
  the start of each poll round, just before publishing (the fence: events of groups it no longer
  owns are dropped) and every :data:`TICK_S` while it waits between rounds. A rebalance therefore
  waits for a collector in the middle of a round to finish it (bounded by ``max.poll.interval.ms``,
  Kafka's rebalance timeout), and while it runs the collectors hold no shards: **a group may be
  skipped for a poll round during a rebalance**, never polled twice in one round once it has
  completed.
- A collector evicted without noticing (paused longer than ``session.timeout.ms``, its heartbeats
  lost) still believes in its shards until its next ``poll()``, the fence just before it publishes;
  what a consumer group guarantees, this inherits: exclusive ownership among members that heartbeat.
- All collectors must hash with the same N: it is taken from the coordination topic's partition
  count when a collector starts (a ``--shards`` that disagrees with an existing topic is a warning,
  the topic wins). To change N, stop the collectors, recreate the topic, start them again.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from kafka import ConsumerRebalanceListener

from streaming.collector.shards import ShardSet, describe_shards
from streaming.config import Config
from streaming.kafka_clients import factories as kafka_clients
from streaming.kafka_clients.join_guard import keep_rejoin_until_joined

log = logging.getLogger(__name__)

COORDINATION_GROUP = "rebalancer.collectors"
"""Default name of the collectors' consumer group and of their coordination topic (the collector's
``own_groups`` pattern skips it, so collectors never watch each other)."""
TICK_S = 0.2
"""How often a waiting collector polls the coordination consumer: joins and hand-overs wait at most
this long for an idle collector."""


class _Listener(ConsumerRebalanceListener):
    """Keeps :class:`ShardSet` equal to the coordination topic's partitions this member holds."""

    def __init__(self, shards: ShardSet, topic: str) -> None:
        self.shards = shards
        self.topic = topic

    def _of_topic(self, partitions: Any) -> list[int]:
        return [tp.partition for tp in partitions if tp.topic == self.topic]

    def on_partitions_revoked(self, revoked: Any) -> None:
        self.shards.revoke(self._of_topic(revoked))

    def on_partitions_assigned(self, assigned: Any) -> None:
        self.shards.assign(self._of_topic(assigned))

    def on_partitions_lost(self, lost: Any) -> None:
        self.shards.revoke(self._of_topic(lost))


class DynamicShards:
    """The coordination consumer and the shards it holds; what
    :class:`~streaming.collector.Collector` asks (``owns``, ``sync``, ``wait``) under
    ``--shards N``."""

    def __init__(self, cfg: Config, count: int, group: str = COORDINATION_GROUP,
                 options: Mapping[str, str] | None = None,
                 consumer_factory: Callable[..., Any] | None = None) -> None:
        """``options``: settings of the coordination consumer alone, Kafka's names
        (``session.timeout.ms``, ``heartbeat.interval.ms``, ``max.poll.interval.ms``), on top of
        ``kafka.options``."""
        self.cfg = cfg
        self.group = self.topic = group
        self.requested = count
        self.options = dict(options or {})
        self._consumer_factory = consumer_factory
        self.shards = ShardSet(count)
        self._consumer: Any = None

    def start(self) -> DynamicShards:
        """Create the coordination topic when missing, join the group (the first assignment arrives
        with a later ``sync``/``wait``)."""
        kafka_clients.ensure_topics(self.cfg, {self.topic: {"num_partitions": self.requested,
                                                            "replication_factor": -1}})
        self._consumer = self._make_consumer()
        count = self._partition_count()
        if count != self.requested:
            log.warning("coordination topic %s has %d partitions, not the %d of --shards: %d "
                        "shards it is (every collector takes the topic's count)", self.topic, count,
                        self.requested, count)
        self.shards = ShardSet(count)
        self._consumer.subscribe([self.topic], listener=_Listener(self.shards, self.topic))
        return self

    def _make_consumer(self) -> Any:
        if self._consumer_factory is not None:
            return self._consumer_factory()
        from kafka import KafkaConsumer
        from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

        kafka = dataclasses.replace(self.cfg.kafka, options=self.cfg.kafka.options | self.options)
        opts = kafka_clients.client_options(kafka, "consumer")
        # eager (revoke everything, then assign) on purpose: a cooperative assignor would let a
        # shard be held by its old owner while another is already assigned something in the same
        # rebalance
        # guarded: a collector left "rebalancing" by kafka-python would hold its shards while the
        # others settle without it (streaming.kafka_clients.join_guard)
        return keep_rejoin_until_joined(KafkaConsumer(**{
            "client_id": f"{self.group}-member", **opts, "group_id": self.group,
            "enable_auto_commit": False, "auto_offset_reset": "latest",
            "partition_assignment_strategy": (RoundRobinPartitionAssignor,)}))

    def _partition_count(self, timeout_s: float = 30.0) -> int:
        deadline = time.monotonic() + timeout_s
        while True:
            parts = self._consumer.partitions_for_topic(self.topic)
            if parts:
                return len(parts)
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"coordination topic {self.topic} has no partitions after {timeout_s:.0f}s")
            time.sleep(0.2)

    @property
    def count(self) -> int:
        return self.shards.count

    def owns(self, group_id: str) -> bool:
        return self.shards.owns(group_id)

    def owned(self) -> frozenset[int]:
        return self.shards.owned()

    def sync(self, timeout_s: float = 0.0) -> None:
        """Poll the coordination consumer: heartbeats are kafka-python's own thread, but joining,
        revoking and assigning happen only inside ``poll()`` (and ``max.poll.interval.ms`` counts
        from the last)."""
        self._consumer.poll(timeout_ms=int(timeout_s * 1000), max_records=1)
        held = self._consumer.assignment()
        idle = held - self._consumer.paused()
        if idle:
            self._consumer.pause(*idle)  # no fetches: the topic carries no records, only ownership

    def wait(self, stop: threading.Event, seconds: float) -> None:
        """Wait ``seconds`` (or until ``stop``), polling the consumer every :data:`TICK_S`. A Kafka
        error here is logged and waited out: the next round's ``sync`` meets it again, where the
        collector backs off."""
        deadline = time.monotonic() + seconds
        while not stop.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            try:
                self.sync(min(left, TICK_S))
            except Exception as e:
                log.warning("coordination consumer of %s: %s: %s", self.group, type(e).__name__, e)
                stop.wait(min(max(0.0, deadline - time.monotonic()), 1.0))

    def describe(self) -> str:
        return f"{describe_shards(self.owned(), self.count)} (dynamic, group {self.group})"

    def close(self) -> None:
        """Leave the group, so the others take this collector's shards at once rather than after a
        session timeout."""
        if self._consumer is not None:
            try:
                self._consumer.close(autocommit=False)
            except Exception:
                # leaving a dead cluster's group may fail; the session timeout does the rest
                log.debug("closing the coordination consumer failed", exc_info=True)
            self._consumer = None

"""``RecommendationAssignor``: a kafka-python partition assignor that applies the rebalancer's
recommendations at the group's next rebalance.

::

    feed = RecommendationFeed(cfg.kafka).start()
    consumer = KafkaConsumer(
        "orders", group_id="orders-app", client_id="orders-1", client_rack="a",
        partition_assignment_strategy=strategy(feed, "orders-app", rack="a"))

``strategy`` returns ``[RecommendationAssignor(...), RangePartitionAssignor()]``: the broker picks
the first protocol every member supports, so a group where some members run without this assignor (a
rolling deploy) rebalances with ``range`` meanwhile.

On the group leader, at each rebalance, :meth:`RecommendationAssignor.assign` takes the group's
latest recommendation from the feed and applies it when it still fits the group (see
:mod:`streaming.apply.plan`); otherwise it computes the fallback (``auto``: ``balanced`` when a lag
source is given, else ``sticky``; or any assignor of :mod:`assignors.registry`, e.g. ``range``) and
logs why. Every member's assignment carries, in its user data, where it came from and the latest
recommendation version the leader considered (:class:`~streaming.apply.plan.Decision`).

:meth:`RecommendationAssignor.metadata` sends subscription **version 3** with ``rack_id`` = the
member's rack (kafka-python's built-in assignors send v0, without a rack), its owned partitions and
generation (v1, v2, for the sticky fallback), and JSON user data with the rack and client id as a
fallback for readers of older versions. The collector (``streaming/collector/member_metadata.py``)
reads the rack from it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kafka.coordinator.assignors.abstract import AbstractPartitionAssignor
from kafka.protocol.consumer.metadata import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)

from assignors.model import Member
from streaming.apply import identities, plan
from streaming.apply.builtin import builtin_assignor
from streaming.apply.feed import LatestRecommendations
from streaming.text import printable

log = logging.getLogger(__name__)

NAME = "rebalancer"

LagSource = Callable[[Mapping[str, int]], Mapping[str, Sequence[int]] | None]
"""topics with partition counts -> topic -> lag per partition (None when unknown)."""


def member_of(member: Any) -> Member:
    """A :class:`~assignors.model.Member` from a kafka-python ``JoinGroupResponseMember``
    whose ``metadata`` is a decoded ``ConsumerProtocolSubscription`` (any version)."""
    meta = member.metadata
    version = getattr(meta, "version", 0) or 0
    user = identities.read_user_data(getattr(meta, "user_data", None))
    owned: list[tuple[str, int]] = []
    if version >= 1:
        for item in getattr(meta, "owned_partitions", None) or ():
            topic = getattr(item, "topic", None) or item[0]
            parts = getattr(item, "partitions", None)
            parts = item[1] if parts is None else parts
            owned.extend((topic, int(p)) for p in parts)
    generation = getattr(meta, "generation_id", -1) if version >= 2 else -1
    rack = (getattr(meta, "rack_id", None) if version >= 3 else None) or user.get("rack") or None
    return Member(
        member_id=member.member_id,
        topics=tuple(sorted(set(meta.topics or ()))),
        instance_id=getattr(member, "group_instance_id", None) or None,
        client_id=user.get("client_id") or identities.client_id_from_member_id(member.member_id),
        rack=rack,
        owned=tuple(sorted(owned)),
        generation=generation if generation is not None and generation >= 0 else None,
    )


def topic_partitions(cluster: Any, topics: Sequence[str]) -> dict[str, int]:
    out = {}
    for t in topics:
        parts = cluster.partitions_for_topic(t)
        if parts is None:
            # a topic created moments ago: ask for metadata now; once it arrives kafka-python sees
            # the snapshot change and the leader rebalances again
            log.warning("no partition metadata for topic %s; requesting a metadata update", t)
            request_update = getattr(cluster, "request_update", None)
            if request_update is not None:
                request_update()
        out[t] = len(parts) if parts else 0
    return out


def replica_racks(cluster: Any, topics: Mapping[str, int]
                  ) -> dict[str, list[tuple[str | None, ...]]] | None:
    """topic -> replica racks per partition from kafka-python's ``ClusterMetadata``; None when
    unknown."""
    try:
        out: dict[str, list[tuple[str | None, ...]]] = {}
        for t, n in topics.items():
            parts = cluster._partitions.get(t, {})
            racks = []
            for p in range(n):
                meta = parts.get(p)
                if meta is None:
                    return None
                racks.append(tuple(getattr(cluster.broker_metadata(b), "rack", None)
                                   for b in meta.replica_nodes))
            out[t] = racks
        if not any(r for rs in out.values() for reps in rs for r in reps):
            return None
        return out
    except Exception:  # private structure of kafka-python: racks are a nicety, never a failure
        log.debug("replica racks unavailable", exc_info=True)
        return None


class RecommendationAssignor(AbstractPartitionAssignor):
    """See the module docstring. One instance per consumer (it remembers that consumer's
    assignment)."""

    name = NAME
    version = 3

    def __init__(self, feed: LatestRecommendations | None, group: str, rack: str | None = None,
                 client_id: str | None = None, fallback: str = plan.AUTO,
                 lag_source: LagSource | None = None,
                 on_decision: Callable[[plan.Decision], None] | None = None) -> None:
        self.feed = feed
        self.group = group
        self.rack = rack or None
        self.client_id = client_id
        self.fallback = fallback
        self.lag_source = lag_source
        self.on_decision = on_decision
        self._lock = threading.Lock()
        self.owned: tuple[tuple[str, int], ...] = ()
        self.generation: int | None = None
        self.considered: int | None = None
        """Latest recommendation version the leader considered, from the last assignment
        received."""
        self.source: str | None = None
        self.applied_version: int | None = None
        self.assigned_at: float | None = None
        self.last_decision: plan.Decision | None = None
        self.decisions: list[plan.Decision] = []

    # -- every member ------------------------------------------------------------------------------

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
        info = identities.read_user_data(getattr(assignment, "user_data", None))
        with self._lock:
            self.owned = tuple(sorted((tp.topic, tp.partition) for tp in assignment.partitions()))
            self.generation = generation
            self.considered = int(info.get("considered") or 0) if info else 0
            self.source = info.get("source") if info else None
            self.applied_version = info.get("version") if info else None
            self.assigned_at = time.monotonic()

    # -- the leader --------------------------------------------------------------------------------

    def assign(self, cluster: Any, members: Sequence[Any]) -> dict[str, ConsumerProtocolAssignment]:
        current = [member_of(m) for m in members]
        topics = topic_partitions(cluster, sorted({t for m in current for t in m.topics}))
        rec = self.feed.latest(self.group) if self.feed is not None else None
        lag = None
        if self.lag_source is not None and (rec is None or self.fallback == plan.AUTO):
            try:
                lag = self.lag_source(topics)
            except Exception as e:
                log.warning("group %s: lag source failed (%s); fallback without lag", self.group, e)
        decision = plan.decide(self.group, rec, current, topics, self.fallback,
                               replica_racks(cluster, topics), lag)
        self._log(decision, current)
        self.last_decision = decision
        self.decisions.append(decision)
        if self.on_decision is not None:
            try:
                self.on_decision(decision)
            except Exception:
                log.exception("on_decision callback failed")
        user_data = decision.user_data()
        out = {}
        for m in current:
            by_topic: dict[str, list[int]] = {}
            for t, p in decision.assignment.get(m.member_id, []):
                by_topic.setdefault(t, []).append(p)
            out[m.member_id] = ConsumerProtocolAssignment(
                0, [(t, sorted(ps)) for t, ps in sorted(by_topic.items())], user_data)
        return out

    def _log(self, d: plan.Decision, members: Sequence[Member]) -> None:
        # member labels and reasons carry names from the feed and the group: escaped, one line each
        sizes = printable(", ".join(f"{m.label}:{len(d.assignment.get(m.member_id, []))}"
                                    for m in sorted(members, key=lambda m: m.label)), 2000)
        group, reason = printable(self.group), printable(d.reason, 1000)
        if d.applied:
            log.info("group %s: applying recommendation v%s to %d member(s) [%s]", group, d.version,
                     len(members), sizes)
        elif d.considered:
            log.warning("group %s: %s; not applied, using the %s fallback [%s]", group, reason,
                        d.assignor, sizes)
        else:
            log.info("group %s: %s; using the %s fallback [%s]", group, reason, d.assignor, sizes)

def strategy(feed: LatestRecommendations | None, group: str, rack: str | None = None,
             client_id: str | None = None, fallback: str = plan.AUTO,
             lag_source: LagSource | None = None,
             chain: Sequence[str] = ("range",), **kwargs: Any) -> list[Any]:
    """``partition_assignment_strategy`` for a consumer: this assignor first, then kafka-python's
    built-in ones named in ``chain`` for groups where not every member runs it."""
    return [RecommendationAssignor(feed, group, rack, client_id, fallback, lag_source, **kwargs),
            *(builtin_assignor(n) for n in chain)]

"""What both sticky builders derive from a snapshot: member order, ranks, topics, and who owns what.

Kafka's AbstractStickyAssignor works from the subscriptions map (a ``java.util.HashMap``) and the
cluster metadata. Here that is :class:`GroupInput`: the members in that map's iteration order
(rebuilt from the member ids, see :mod:`assignors._java`), members and topics ranked by
``String.compareTo``, the partition count of every subscribed topic that exists, and the racks.
:meth:`GroupInput.reconcile_owned` is Kafka's ``allSubscriptionsEqual``: it settles which member
keeps each owned partition when several claim it, by generation.
"""

from __future__ import annotations

from itertools import chain, pairwise
from typing import NamedTuple

import numpy as np

from assignors._java import hashmap_order, java_ranks
from assignors.model import GroupSnapshot, Member, TopicPartition
from assignors.sticky.partition_ids import PartitionIds
from assignors.sticky.racks import RackLayout

TP = TopicPartition


class OwnedPartitions(NamedTuple):
    """The outcome of reconciling what members report they own."""

    equal_subscriptions: bool
    """Every member subscribes to the same topics: the constrained builder runs."""
    owned: dict[str, list[TP]]
    """Member id -> the owned partitions it keeps a claim on, in the order it reported them."""
    claimed_twice: set[TP]
    """Partitions two members claim in the same generation: nobody keeps them."""
    max_generation: int
    """The highest generation any member reports (-1 if none does)."""
    claimed: np.ndarray
    """By partition id (:class:`~assignors.sticky.partition_ids.PartitionIds`): some member claims
    it."""


def generation(member: Member) -> int | None:
    """The member's generation, ``None`` if it reports none (or a negative one)."""
    g = member.generation
    return g if g is not None and g >= 0 else None


class GroupInput:
    """What Kafka's AbstractStickyAssignor derives from the subscriptions and metadata."""

    def __init__(self, snapshot: GroupSnapshot, prefer_rack_aware_logic: bool) -> None:
        self.snapshot = snapshot
        self.members: dict[str, Member] = {m.member_id: m for m in snapshot.members}
        # java HashMap<String, Subscription> iteration order, members inserted in snapshot order
        self.member_order: list[str] = hashmap_order(m.member_id for m in snapshot.members)
        self.member_rank: dict[str, int] = java_ranks(self.members)
        # members mostly share one topics tuple: each distinct one is read once
        subscribed = set().union(*{id(m.topics): m.topics for m in snapshot.members}.values())
        # Kafka's partitionsPerTopic: subscribed topics that exist with at least one partition
        self.partitions_per_topic: dict[str, int] = {
            t: n for t, n in snapshot.topics.items() if t in subscribed and n > 0}
        self.topic_rank: dict[str, int] = java_ranks(self.partitions_per_topic)
        # String.compareTo order is Python's str order unless a name has characters beyond the BMP
        self.topics_in_str_order = all(a < b for a, b in pairwise(self.topic_rank))
        self.total_partitions = sum(self.partitions_per_topic.values())
        self.ids = PartitionIds(self.partitions_per_topic, self.topic_rank)
        self.racks = RackLayout(snapshot, [self.members[mid] for mid in self.member_order],
                                self.partitions_per_topic, prefer_rack_aware_logic)

    def owned_existing(self, member: Member) -> list[TP]:
        """The member's owned partitions of topics in the metadata (and within the partition
        count)."""
        counts = self.partitions_per_topic
        return [tp for tp in member.owned if 0 <= tp[1] < counts.get(tp[0], 0)]

    def reconcile_owned(self) -> OwnedPartitions:
        """Walk members in Java order; each owned partition stays with its first claimant unless a
        later one has a higher generation (it takes over) or the same one (nobody keeps it)."""
        equal = self.subscriptions_equal()
        generation_of: dict[str, int] = {}
        for mid in self.member_order:
            gen = generation(self.members[mid])
            generation_of[mid] = -1 if gen is None else gen
        max_generation = max(generation_of.values(), default=-1)
        existing, ids = self._existing_owned()
        if not len(ids):  # a fresh group: nobody owns anything
            return OwnedPartitions(equal, existing, set(), max_generation,
                                   np.zeros(self.ids.total, dtype=bool))
        claims = np.bincount(ids, minlength=self.ids.total)
        if claims.max(initial=0) <= 1:  # the usual case: no partition claimed twice
            return OwnedPartitions(equal, existing, set(), max_generation, claims.astype(bool))
        owned, claimed_twice, owner_of = _settle_claims(existing, generation_of)
        claimed = np.zeros(self.ids.total, dtype=bool)
        claimed[self.ids.ids(list(owner_of))[0]] = True
        return OwnedPartitions(equal, owned, claimed_twice, max_generation, claimed)

    def subscriptions_equal(self) -> bool:
        """Kafka's test for the constrained builder: every member (in Java order) subscribes to as
        many topics as the first one, all of them among the first one's. Members mostly share one
        topics tuple, so each distinct tuple is compared once."""
        order = self.member_order
        if not order:
            return True
        first = set(self.members[order[0]].topics)
        verdicts: dict[int, bool] = {}
        for mid in order[1:]:
            topics = self.members[mid].topics
            same = verdicts.get(id(topics))
            if same is None:
                same = verdicts[id(topics)] = len(topics) == len(first) and first.issuperset(topics)
            if not same:
                return False
        return True

    def _existing_owned(self) -> tuple[dict[str, list[TP]], np.ndarray]:
        """Each member's owned partitions that exist (members in Java order), and all their ids."""
        members = [self.members[mid] for mid in self.member_order]
        flat = list(chain.from_iterable(m.owned for m in members))
        try:
            ids, exists = self.ids.ids(flat)
        except (TypeError, OverflowError):
            # not a machine integer: no such partition, checked one by one
            existing = {m.member_id: self.owned_existing(m) for m in members}
            return existing, self.ids.ids(list(chain.from_iterable(existing.values())))[0]
        if exists.all():
            return {m.member_id: list(m.owned) for m in members}, ids
        ends = np.cumsum([len(m.owned) for m in members])
        with_missing = set(np.searchsorted(ends, np.flatnonzero(~exists), side="right").tolist())
        existing = {m.member_id: self.owned_existing(m) if k in with_missing else list(m.owned)
                    for k, m in enumerate(members)}
        return existing, ids[exists]


def _settle_claims(existing: dict[str, list[TP]], generation_of: dict[str, int]
                   ) -> tuple[dict[str, list[TP]], set[TP], dict[TP, str]]:
    """Partitions claimed more than once go to the claimant with the highest generation; a tie with
    the one holding it so far leaves it to nobody (``claimed_twice``). Members in Java order."""
    owned: dict[str, list[TP]] = {}
    claimed_twice: set[TP] = set()
    owner_of: dict[TP, str] = {}
    for mid, claims in existing.items():
        g = generation_of[mid]
        mine: list[TP] = []
        owned[mid] = mine
        for tp in claims:
            other = owner_of.get(tp)
            if other is None:
                mine.append(tp)
                owner_of[tp] = mid
                continue
            other_generation = generation_of[other]
            if g == other_generation:
                claimed_twice.add(tp)
                _remove_first(owned[other], tp)
                owner_of[tp] = mid
            elif g > other_generation:
                mine.append(tp)
                _remove_first(owned[other], tp)
                owner_of[tp] = mid
    return owned, claimed_twice, owner_of


def _remove_first(items: list[TP], item: TP) -> None:
    if item in items:
        items.remove(item)

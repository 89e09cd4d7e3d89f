"""What both sticky builders derive from a snapshot: member order, ranks, topics, and who owns what.

Kafka's AbstractStickyAssignor works from the subscriptions map (a ``java.util.HashMap``) and the
cluster metadata. Here that is :class:`GroupInput`: the members in that map's iteration order
(rebuilt from the member ids, see :mod:`assignors._java`), members and topics ranked by
``String.compareTo``, the partition count of every subscribed topic that exists, and the racks.
:meth:`GroupInput.reconcile_owned` is Kafka's ``allSubscriptionsEqual``: it settles which member
keeps each owned partition when several claim it, by generation.
"""

from __future__ import annotations

from typing import NamedTuple

from assignors._java import hashmap_order, java_ranks
from assignors.model import GroupSnapshot, Member, TopicPartition
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
        subscribed = {t for m in snapshot.members for t in m.topics}
        # Kafka's partitionsPerTopic: subscribed topics that exist with at least one partition
        self.partitions_per_topic: dict[str, int] = {
            t: n for t, n in snapshot.topics.items() if t in subscribed and n > 0}
        self.topic_rank: dict[str, int] = java_ranks(self.partitions_per_topic)
        self.total_partitions = sum(self.partitions_per_topic.values())
        self.racks = RackLayout(snapshot, [self.members[mid] for mid in self.member_order],
                                self.partitions_per_topic, prefer_rack_aware_logic)

    def owned_existing(self, member: Member) -> list[TP]:
        """The member's owned partitions of topics in the metadata (and within the partition count)."""
        counts = self.partitions_per_topic
        return [tp for tp in member.owned if 0 <= tp[1] < counts.get(tp[0], 0)]

    def reconcile_owned(self) -> OwnedPartitions:
        """Walk members in Java order; each owned partition stays with its first claimant unless a
        later one has a higher generation (it takes over) or the same one (nobody keeps it)."""
        equal = True
        first: set[str] | None = None
        owned: dict[str, list[TP]] = {}
        claimed_twice: set[TP] = set()
        owner_of: dict[TP, str] = {}
        generation_of: dict[str, int] = {}
        max_generation = -1
        for mid in self.member_order:
            member = self.members[mid]
            if first is None:
                first = set(member.topics)
            elif equal and not (len(member.topics) == len(first) and first.issuperset(member.topics)):
                equal = False
            gen = generation(member)
            g = -1 if gen is None else gen
            generation_of[mid] = g
            max_generation = max(max_generation, g)
            mine: list[TP] = []
            owned[mid] = mine
            for tp in self.owned_existing(member):
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
        return OwnedPartitions(equal, owned, claimed_twice, max_generation)


def _remove_first(items: list[TP], item: TP) -> None:
    if item in items:
        items.remove(item)

"""Rack awareness of the sticky builders (KIP-881): when it is on, which racks hold each partition.

Rack mode is on when some member has a rack, some replica lives on one of those racks, and either
some partition is not on every rack or ``prefer_rack_aware_logic`` (Kafka's test flag) is set. In
rack mode an owned partition on a member whose rack holds none of its replicas is given up, and free
partitions go to same-rack members first.
"""

from __future__ import annotations

from collections.abc import Mapping

from assignors.model import GroupSnapshot, Member, TopicPartition

_NO_RACKS: frozenset[str] = frozenset()


class RackLayout:
    """Member racks and per-partition replica racks, as far as the sticky builders use them."""

    def __init__(self, snapshot: GroupSnapshot, members_in_order: list[Member],
                 partitions_per_topic: Mapping[str, int], prefer_rack_aware_logic: bool) -> None:
        self.rack_mode = False
        self.member_rack: dict[str, str] = {}
        # topic -> one frozenset of replica racks per partition (equal sets are one object)
        self.replica_racks: dict[str, list[frozenset[str]]] = {}
        self._members_on: dict[frozenset[str], int] = {}
        members_by_rack: dict[str, int] = {}
        for m in members_in_order:
            if m.rack:
                members_by_rack[m.rack] = members_by_rack.get(m.rack, 0) + 1
        if not members_by_rack:
            return
        interned: dict[frozenset[str], frozenset[str]] = {}
        per_topic: dict[str, list[frozenset[str]]] = {}
        for topic, count in partitions_per_topic.items():
            racks = (snapshot.replica_racks.get(topic) if snapshot.replica_racks is not None
                     else None)
            sets: list[frozenset[str]] = []
            for p in range(count):
                fs = frozenset(r for r in racks[p] if r is not None) if racks else _NO_RACKS
                sets.append(interned.setdefault(fs, fs))
            per_topic[topic] = sets
        every_rack: set[str] = set()
        for fs in interned:
            every_rack |= fs
        if every_rack.isdisjoint(members_by_rack):
            return
        if not prefer_rack_aware_logic and all(fs == every_rack for fs in interned):
            return
        self.rack_mode = True
        self.replica_racks = per_topic
        self.member_rack = {m.member_id: m.rack for m in members_in_order if m.rack}
        self._members_on = {fs: sum(members_by_rack.get(r, 0) for r in fs) for fs in interned}

    def racks_of(self, tp: TopicPartition) -> frozenset[str]:
        """The racks holding a replica of ``tp``."""
        return self.replica_racks[tp[0]][tp[1]]

    def mismatch(self, member_id: str, tp: TopicPartition) -> bool:
        """Kafka's ``racksMismatch``: the member has a rack (in rack mode) holding no replica of
        tp."""
        rack = self.member_rack.get(member_id)
        return rack is not None and rack not in self.replica_racks[tp[0]][tp[1]]

    def members_on_racks_of(self, tp: TopicPartition) -> int:
        """How many members sit on a rack holding a replica of ``tp`` (the rare partitions go
        first)."""
        return self._members_on[self.replica_racks[tp[0]][tp[1]]]

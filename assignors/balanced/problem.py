"""The group as the balanced assignor sees it: partitions and members as indices, and the cost rule.

:class:`Problem` turns a :class:`~assignors.model.GroupSnapshot` into arrays every phase shares:
partitions are numbered topic by topic (``part_topic``, ``part_load``), members are sorted by member
id (so the result does not depend on the order they are listed in), and a partition may only go to a
member of its *eligibility group* (the members subscribed to its topic; topics with the same
subscribers share one group). Members with identical subscriptions form a *class*: the count bound
applies within a class.

The one cost rule lives here too: a partition costs ``cross_rack_cost`` when it sits on a member
whose rack holds none of its replicas (the member has a rack and the partition has replica racks),
plus ``move_cost`` when it has a current owner and sits elsewhere. :meth:`Problem.cost` is that rule
for one partition (for the phases' Python loops), :meth:`Problem.costs` the same rule over arrays;
everything else (a state's total, the least cost any assignment can have) is built on them.

With ``snapshot.capacity`` the members are unlike: member ``m`` finishes a load ``w`` in ``w / c_m``
seconds. Loads are then kept in the fastest member's records: ``w * scale[m]``, ``scale[m] = c_max /
c_m`` (>= 1), so minimising the max scaled load minimises the max time. Equal or absent capacities
give ``scale`` = 1.0 exactly, and ``x * 1.0`` is ``x``: every phase then computes bit for bit what
it computes without them.
"""

from __future__ import annotations

import zlib

import numpy as np

from assignors import metrics
from assignors.model import Assignment, GroupSnapshot, Member

from .options import BalancedOptions


def tiebreak(member_id: str) -> int:
    """A fixed, platform-independent hash: fair but stable tie-breaking between members."""
    return zlib.crc32(member_id.encode("utf-8"))


class Problem:
    """One rebalance, indexed. Arrays are per partition (``part_*``) or per member
    (``member_*``)."""

    def __init__(self, snapshot: GroupSnapshot, opts: BalancedOptions,
                 stuck_weigh_production: bool = False) -> None:
        self.snapshot = snapshot
        self.opts = opts
        self.stuck_weigh_production = stuck_weigh_production
        self.members: list[Member] = sorted(snapshot.members, key=lambda m: m.member_id)
        self.n_members = len(self.members)
        self.tiebreak = np.array([tiebreak(m.member_id) for m in self.members], dtype=np.int64)
        self.tiebreak_list: list[int] = self.tiebreak.tolist()
        self.scale = self._scale()
        self.scale_list: list[float] = self.scale.tolist()
        # Members alike: the least-loaded member is the one a partition ends least loaded on.
        self.alike = bool(np.all(self.scale == 1.0))
        self._index_topics()
        self._index_groups()
        self._index_racks()
        self._index_owners()
        self.cross_rack_cost = float(opts.cross_rack_cost)
        self.move_cost = float(opts.move_cost)
        self.lower_bound = self._lower_bound()

    # -- indexing ----------------------------------------------------------------------------------

    def _scale(self) -> np.ndarray:
        """Per member, the fastest capacity over its own (1.0 for all without capacities)."""
        scales = metrics.capacity_scales(self.snapshot)
        if scales is None:
            return np.ones(self.n_members)
        return np.array([scales[m.member_id] for m in self.members])

    def _index_topics(self) -> None:
        """Subscribed topics (in metadata order), the subscription matrix and each partition's
        load."""
        snapshot, opts = self.snapshot, self.opts
        wanted = {t for m in self.members for t in m.topics}
        self.topics = [t for t in snapshot.topics if t in wanted]
        self.topic_index = {t: i for i, t in enumerate(self.topics)}
        n_topics = len(self.topics)
        # subscribed[m, t]: member m subscribes to topic t.
        self.subscribed = np.zeros((self.n_members, max(n_topics, 1)), dtype=bool)
        for i, m in enumerate(self.members):
            for t in m.topics:
                j = self.topic_index.get(t)
                if j is not None:
                    self.subscribed[i, j] = True
        self.topic_sizes = [snapshot.topics[t] for t in self.topics]
        self.n_parts = int(sum(self.topic_sizes))
        # Partition p of topic j is number topic_start[j] + p.
        ends = np.cumsum(self.topic_sizes, dtype=np.int64)
        self.topic_start = np.concatenate([[0], ends]).astype(np.int64)
        self.part_topic = (np.repeat(np.arange(n_topics, dtype=np.int64), self.topic_sizes)
                           if n_topics else np.zeros(0, np.int64))
        self.part_topic_list: list[int] = self.part_topic.tolist()
        load = np.zeros(self.n_parts, dtype=np.float64)
        # production over the horizon alone: what a stuck partition weighs when asked to
        self._production = np.zeros(self.n_parts, dtype=np.float64)
        for j, t in enumerate(self.topics):
            lo, hi = int(self.topic_start[j]), int(self.topic_start[j + 1])
            if hi == lo:
                continue
            lag = snapshot.lag.get(t)
            if lag is not None:
                load[lo:hi] = np.asarray(lag, dtype=np.float64)
            rate = snapshot.produce_rate.get(t)
            if rate is not None and opts.horizon_s > 0:
                self._production[lo:hi] = np.asarray(rate, dtype=np.float64) * opts.horizon_s
                load[lo:hi] += self._production[lo:hi]
        self.part_load = np.where(np.isfinite(load) & (load > 0), load, 0.0)
        self.part_load_list: list[float] = self.part_load.tolist()

    def _index_groups(self) -> None:
        """Eligibility groups (topics with one subscriber set) and classes (members with one
        subscription)."""
        n_topics = len(self.topics)
        group_of_key: dict[bytes, int] = {}
        topic_group = np.zeros(n_topics, dtype=np.int64)
        # group_members[g]: the members that may take a partition of group g.
        self.group_members: list[np.ndarray] = []
        for j in range(n_topics):
            key = np.packbits(self.subscribed[:, j]).tobytes()
            g = group_of_key.get(key)
            if g is None:
                g = len(self.group_members)
                group_of_key[key] = g
                self.group_members.append(np.flatnonzero(self.subscribed[:, j]))
            topic_group[j] = g
        self.part_group = topic_group[self.part_topic] if self.n_parts else np.zeros(0, np.int64)
        self.part_group_list: list[int] = self.part_group.tolist()
        self.group_members_list: list[list[int]] = [ms.tolist() for ms in self.group_members]

        class_of_key: dict[bytes, int] = {}
        self.member_class = np.zeros(self.n_members, dtype=np.int64)
        for i in range(self.n_members):
            key = np.packbits(self.subscribed[i]).tobytes()
            self.member_class[i] = class_of_key.setdefault(key, len(class_of_key))
        self.n_classes = len(class_of_key)
        self.class_members = [np.flatnonzero(self.member_class == c) for c in range(self.n_classes)]

    def _index_racks(self) -> None:
        """Member racks as indices (-1: none) and, per partition, the member racks holding a
        replica."""
        racks = sorted({m.rack for m in self.members if m.rack})
        rack_index = {r: i for i, r in enumerate(racks)}
        self.n_racks = len(racks)
        self.member_rack = np.array([rack_index.get(m.rack, -1) if m.rack else -1
                                     for m in self.members],
                                    dtype=np.int64)
        self.member_rack_list: list[int] = self.member_rack.tolist()
        # replica_on[p, r]: partition p has a replica on member rack r.
        self.replica_on = np.zeros((self.n_parts, max(self.n_racks, 1)), dtype=bool)
        # has_replica_racks[p]: some replica of p has a rack (else p is never cross-rack).
        self.has_replica_racks = np.zeros(self.n_parts, dtype=bool)
        replica_racks = self.snapshot.replica_racks
        if racks and replica_racks is not None:
            for j, t in enumerate(self.topics):
                per_partition = replica_racks.get(t)
                if per_partition is None:
                    continue
                base = int(self.topic_start[j])
                for p, replicas in enumerate(per_partition):
                    for r in replicas:
                        if r is not None:
                            self.has_replica_racks[base + p] = True
                            k = rack_index.get(r)
                            if k is not None:
                                self.replica_on[base + p, k] = True
        self.rack_aware = bool(racks) and bool(self.has_replica_racks.any())
        self.rack_mask = self._rack_masks()

    def _rack_masks(self) -> list[int]:
        """Per partition, bit r = a replica on member rack r, bit n_racks = the partition has
        replica racks at all (0 = never cross-rack): the cost rule as integer tests in Python
        loops."""
        n_racks = self.n_racks
        if not self.rack_aware:
            return [0] * self.n_parts
        if n_racks < 62:
            on = self.replica_on[:, :n_racks].astype(np.int64)
            bits = (on << np.arange(n_racks, dtype=np.int64)).sum(1)
            return np.where(self.has_replica_racks, bits | (1 << n_racks), 0).tolist()
        return [
            (sum(1 << r for r in np.flatnonzero(self.replica_on[p]).tolist()) | (1 << n_racks))
            if self.has_replica_racks[p] else 0
            for p in range(self.n_parts)
        ]

    def _index_owners(self) -> None:
        """Current owners (the highest generation wins a partition claimed twice, as Kafka's sticky
        does), whether the current assignment is complete, and the stuck partitions pinned to them
        (load 0)."""
        n_parts, sizes, start = self.n_parts, self.topic_sizes, self.topic_start
        owner = np.full(n_parts, -1, dtype=np.int64)
        owner_generation = np.full(n_parts, -(2**62), dtype=np.int64)
        # Claims per partition: 1 by a subscriber, 2 by a member not subscribed to its topic.
        claims = np.zeros(n_parts, dtype=np.int64)
        owned_elsewhere = False
        for i, m in enumerate(self.members):
            generation = m.generation if m.generation is not None else -1
            for t, p in m.owned:
                j = self.topic_index.get(t)
                if j is None or not (0 <= p < sizes[j]):
                    owned_elsewhere = True
                    continue
                q = int(start[j]) + p
                claims[q] += 1 if self.subscribed[i, j] else 2
                if self.subscribed[i, j] and generation > owner_generation[q]:
                    owner[q] = i
                    owner_generation[q] = generation
        self.owner = owner
        self.owner_list: list[int] = owner.tolist()
        # Complete and valid: every partition owned exactly once, by a subscriber.
        self.current_complete = n_parts > 0 and bool((claims == 1).all()) and not owned_elsewhere
        self.pinned = np.zeros(n_parts, dtype=bool)
        for t, p in metrics.held_stuck(self.snapshot):
            self.pinned[int(start[self.topic_index[t]]) + p] = True
        # A pinned partition weighs nothing on its owner (the rule:
        # assignors.metrics.partition_loads); its production alone when planning to a target
        # utilisation (.utilisation: it may only be starved).
        if self.pinned.any():
            production = self._production[self.pinned]
            self.part_load[self.pinned] = (
                np.where(np.isfinite(production) & (production > 0), production, 0.0)
                if self.stuck_weigh_production else 0.0)
            self.part_load_list = self.part_load.tolist()
        self.pinned_list: list[bool] = self.pinned.tolist()

    def _lower_bound(self) -> float:
        """A valid lower bound of the max member load (the search stops when it reaches it)."""
        load, n_members, scale = self.part_load, self.n_members, self.scale
        if self.n_parts == 0 or n_members == 0:
            return 0.0
        # the least scale a partition can get: its group's fastest member
        fastest = np.array([scale[ms].min() for ms in self.group_members])
        bound = float((load * fastest[self.part_group]).max())
        # Partitions of group g can only go to g's members (their speeds add up: 1 / scale each).
        group_load = np.bincount(self.part_group, weights=load, minlength=len(self.group_members))
        for g, ms in enumerate(self.group_members):
            bound = max(bound, float(group_load[g]) / float((1.0 / scale[ms]).sum()))
        # With one group of k members, two of the k + 1 heaviest partitions share a member.
        if len(self.group_members) == 1:
            k = len(self.group_members[0])
            if self.n_parts > k:
                top = np.sort(load)[::-1]
                bound = max(bound, float(top[k - 1] + top[k]) * float(fastest[0]))
        return bound

    # -- the cost rule -----------------------------------------------------------------------------

    def cost(self, p: int, m: int) -> float:
        """Cost of partition ``p`` on member ``m``: cross-rack cost if cross-rack, plus move cost if
        moved."""
        c = 0.0
        r = self.member_rack_list[m]
        mask = self.rack_mask[p]
        if r >= 0 and mask and not (mask >> r) & 1:
            c = self.cross_rack_cost
        o = self.owner_list[p]
        if o >= 0 and o != m:
            c += self.move_cost
        return c

    def cross_rack(self, parts: np.ndarray, members: np.ndarray | int) -> np.ndarray:
        """Whether each partition of ``parts`` is cross-rack on the matching member (or on one
        member)."""
        if not self.rack_aware:
            return np.zeros(len(parts), dtype=bool)
        r = self.member_rack[members]
        return (r >= 0) & self.has_replica_racks[parts] & ~self.replica_on[parts, np.maximum(r, 0)]

    def moved(self, parts: np.ndarray, members: np.ndarray | int) -> np.ndarray:
        """Whether each partition of ``parts`` has an owner other than the matching member."""
        o = self.owner[parts]
        return (o >= 0) & (o != members)

    def costs(self, parts: np.ndarray, members: np.ndarray | int) -> np.ndarray:
        """:meth:`cost` over arrays: ``parts[i]`` on ``members[i]`` (or every one on member
        ``members``)."""
        return (self.cross_rack_cost * self.cross_rack(parts, members)
                + self.move_cost * self.moved(parts, members))

    def costs_in(self, member_of: np.ndarray) -> np.ndarray:
        """Cost of every partition where ``member_of`` puts it."""
        return self.costs(np.arange(self.n_parts), member_of)

    def total_cost(self, member_of: np.ndarray) -> float:
        """Cost of a whole assignment (from the counts, so equal totals compare equal)."""
        everything = np.arange(self.n_parts)
        n_cross = float(self.cross_rack(everything, member_of).sum())
        n_moved = float(self.moved(everything, member_of).sum())
        return self.cross_rack_cost * n_cross + self.move_cost * n_moved

    def costs_at_owner(self) -> np.ndarray:
        """Cost of every partition at its current owner (0 for an unowned one: only cross-rack
        counts)."""
        return np.where(self.owner >= 0, self.costs_in(np.maximum(self.owner, 0)), 0.0)

    def least_costs(self) -> np.ndarray:
        """Per partition, the lowest cost any subscriber could give it (the polish skips the
        others)."""
        owned = self.owner >= 0
        at_owner = np.where(owned, self.costs_at_owner(), np.inf)
        cross_at_owner = owned & self.cross_rack(np.arange(self.n_parts), np.maximum(self.owner, 0))
        group_size = np.array([len(g) for g in self.group_members], dtype=np.int64)[self.part_group]
        others = group_size - owned  # subscribers other than the owner
        if self.rack_aware:
            # Subscribers on a rack with a replica, or without a rack; minus the owner if it is one.
            n_per_rack = np.zeros((len(self.group_members), self.n_racks), dtype=np.int64)
            n_rackless = np.zeros(len(self.group_members), dtype=np.int64)
            for g, ms in enumerate(self.group_members):
                r = self.member_rack[ms]
                n_rackless[g] = int((r < 0).sum())
                n_per_rack[g] = np.bincount(r[r >= 0], minlength=self.n_racks)
            n_local = ((self.replica_on[:, : self.n_racks] * n_per_rack[self.part_group]).sum(1)
                       + n_rackless[self.part_group])
            n_local = np.where(self.has_replica_racks, n_local, group_size)
            n_local = n_local - (owned & ~cross_at_owner)
            elsewhere = np.where(n_local > 0, 0.0, self.cross_rack_cost) + self.move_cost * owned
        else:
            elsewhere = self.move_cost * owned
        elsewhere = np.where(others > 0, elsewhere, np.inf)
        return np.minimum(at_owner, elsewhere)

    # -- output ------------------------------------------------------------------------------------

    def output(self, held: list[set[int]] | None) -> Assignment:
        """The assignment in the snapshot's terms: member id -> sorted ``(topic, partition)`` list,
        from ``held[m]``, the partitions member ``m`` holds (``None``: nobody holds any)."""
        out: Assignment = {m.member_id: [] for m in self.snapshot.members}
        if held is None:
            return out
        for i, m in enumerate(self.members):
            tps = out[m.member_id]
            for p in sorted(held[i]):
                j = int(self.part_topic[p])
                tps.append((self.topics[j], p - int(self.topic_start[j])))
        return out

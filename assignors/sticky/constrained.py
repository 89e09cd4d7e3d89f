"""Kafka's ConstrainedAssignmentBuilder: the sticky assignment when every member subscribes alike.

With ``T`` partitions and ``N`` members each member ends with ``min_quota = floor(T/N)`` or
``max_quota = ceil(T/N)`` partitions, and exactly ``T mod N`` of them with ``max_quota``. The steps:

1. :meth:`~ConstrainedBuilder.keep_owned`: members in Java order keep their owned partitions (sorted
   by partition number, then topic) up to a quota: the first ones visited may keep ``max_quota``
   while members above ``min_quota`` are still wanted, later ones ``min_quota``. What they give up
   "may be revoked"; in rack mode a partition on a member whose rack holds none of its replicas is
   given up.
2. :meth:`~ConstrainedBuilder.free_partitions`: the partitions nobody kept, by topic name then
   number, made as the next steps hand them out.
3. :meth:`~ConstrainedBuilder.assign_same_rack` (rack mode): each free partition, rarest racks
   first, to the next member below quota on one of its replicas' racks, round robin.
4. :meth:`~ConstrainedBuilder.assign_round_robin`: the rest round robin over members below quota
   (sorted by member id), then one each to members at ``min_quota``, earliest to reach it first.
   Whole passes over the members below quota are dealt in bulk (:meth:`~ConstrainedBuilder._deal`).
5. :meth:`~ConstrainedBuilder.verify_unfilled`: Kafka's final consistency checks.

A free partition given to a member other than the one that gave it up (or claimed twice) is
"transferring ownership": the cooperative assignor withholds it for a round.
"""

from __future__ import annotations

from collections import deque
from contextlib import nullcontext
from itertools import cycle
from operator import itemgetter

import numpy as np

from assignors.model import TopicPartition
from assignors.sticky.errors import StickyAssignmentError
from assignors.sticky.gc_hold import young_collections_only
from assignors.sticky.inputs import GroupInput, OwnedPartitions
from assignors.sticky.partition_ids import FreeRuns

TP = TopicPartition
_topic = itemgetter(0)
_partition = itemgetter(1)


class ConstrainedBuilder:
    """One run of the constrained builder; :meth:`build` returns (assignment, transferring)."""

    ROWS_MIN_WIDTH = 128
    """Passes at least this wide are dealt row by row (:meth:`_deal`), narrower ones one partition
    at a time: about where the steps per row stop costing more than they save."""
    ROWS_PER_BLOCK = 16
    """Rows dealt together: a member's share of them is made and placed in one step. On a million
    partitions 16 rows took ~6% less CPU a call than 8 (page faults included: a warm call faults in
    12-30 MiB of fresh pages, 8 rows ~2 MiB) and 32 rows no less; 4 rows ~4% more."""
    HOLD_FROM = 1 << 16
    """Deals of at least this many partitions run with generation-1 collections held off
    (:func:`~assignors.sticky.gc_hold.young_collections_only`): they would run ~9 of them and
    more."""

    def __init__(self, group: GroupInput, reconciled: OwnedPartitions) -> None:
        self.group = group
        owned = self.owned = reconciled.owned
        self.claimed_twice = reconciled.claimed_twice
        self.claimed = reconciled.claimed
        total, members = group.total_partitions, len(owned)
        self.min_quota = total // members
        self.max_quota = -(-total // members)
        self.expected_at_max = total % members
        """How many members end with ``max_quota``."""
        self.at_max = 0
        # the lists made in member id order, the order the round robin appends to them in: its
        # appends then walk memory forwards rather than hop between list headers made in Java's
        # HashMap order
        in_id_order = sorted(owned, key=group.member_rank.__getitem__)
        self.assignment: dict[str, list[TP]] = {mid: [] for mid in in_id_order}
        self.given_up_by: dict[TP, str] = {}
        """Owned partitions their owner may have to revoke, and by whom."""
        self.transferring: dict[TP, str] = {}
        self.below_min: list[str] = []
        """Members still below ``min_quota`` (Kafka's
        unfilledMembersWithUnderMinQuotaPartitions)."""
        self.at_min: list[str] = []
        """Members at ``min_quota`` that may take one more
        (unfilledMembersWithExactlyMinQuotaPartitions)."""

    def build(self) -> tuple[dict[str, list[TP]], dict[TP, str]]:
        self.keep_owned()
        free = self.free_partitions()
        rank = self.group.member_rank
        self.below_min.sort(key=rank.__getitem__)
        self.at_min.sort(key=rank.__getitem__)
        if self.group.racks.rack_mode:
            free = FreeRuns([(None, self.assign_same_rack(list(free)))])
        self.assign_round_robin(free)
        self.verify_unfilled()
        return self.assignment, self.transferring

    def keep_owned(self) -> None:
        group = self.group
        racks = group.racks
        topic_rank = group.topic_rank
        min_quota, max_quota = self.min_quota, self.max_quota
        for mid in group.member_order:
            mine = self.owned[mid]
            if racks.rack_mode:
                kept = []
                for tp in mine:
                    if racks.mismatch(mid, tp):
                        self.given_up_by[tp] = mid
                    else:
                        kept.append(tp)
            else:
                kept = list(mine)
            if len(kept) > 1:
                if group.topics_in_str_order:  # two stable sorts on plain keys beat one on pairs
                    kept.sort(key=_topic)
                    kept.sort(key=_partition)
                else:
                    kept.sort(key=lambda tp: (tp[1], topic_rank[tp[0]]))
            if self.claimed_twice:
                kept = [tp for tp in kept if tp not in self.claimed_twice]
            target = self.assignment[mid]
            if len(kept) < min_quota:
                target.extend(kept)
                self.below_min.append(mid)
                continue
            if len(kept) >= max_quota and self.at_max < self.expected_at_max:
                self.at_max += 1
                if self.at_max == self.expected_at_max:
                    self.at_min.clear()
                keep = max_quota
            else:
                keep = min_quota
                if self.at_max < self.expected_at_max:
                    self.at_min.append(mid)
            target.extend(kept[:keep])
            for tp in kept[keep:]:
                self.given_up_by[tp] = mid

    def free_partitions(self) -> FreeRuns:
        """Partitions nobody kept: unclaimed, given up or claimed twice; by topic, then number, made
        as they are handed out."""
        ids = self.group.ids
        dropped = [*self.given_up_by, *self.claimed_twice]
        if not dropped and not self.claimed.any():  # nothing kept: every partition, no index needed
            return ids.all_partitions()
        kept = self.claimed.copy()
        if dropped:
            kept[ids.ids(dropped)[0]] = False
        return ids.partitions(np.flatnonzero(~kept))

    def _give(self, tp: TP, mid: str) -> int:
        """Hand a free partition to a member; its new partition count."""
        partitions = self.assignment[mid]
        partitions.append(tp)
        self._note_transfer(tp, mid)
        return len(partitions)

    def _note_transfer(self, tp: TP, mid: str) -> None:
        gave_up = self.given_up_by.get(tp)
        if (gave_up is not None and gave_up != mid) or tp in self.claimed_twice:
            self.transferring[tp] = mid

    def assign_same_rack(self, free: list[TP]) -> list[TP]:
        """Free partitions to members on a rack of theirs; returns those no such member could
        take."""
        racks = self.group.racks
        free.sort(key=racks.members_on_racks_of)
        below_min, at_min = self.below_min, self.at_min

        def next_on_rack(tp: TP, members: list[str], start: int) -> int:
            on = racks.racks_of(tp)
            if not on:
                return -1
            n = len(members)
            for i in range(n):
                idx = (start + i) % n
                r = racks.member_rack.get(members[idx])
                if r is not None and r in on:
                    return idx
            return -1

        cursor = 0
        remaining: list[TP] = []
        for tp in free:
            chosen = None
            i = next_on_rack(tp, below_min, cursor)
            if i >= 0:
                chosen = below_min[i]
                count = len(self.assignment[chosen]) + 1
                if count >= self.min_quota:
                    del below_min[i]
                    if count < self.max_quota and self.at_max < self.expected_at_max:
                        at_min.append(chosen)
                else:
                    i += 1
                cursor = i % len(below_min) if below_min else 0
            elif at_min:
                j = next_on_rack(tp, at_min, 0)
                if j >= 0:
                    chosen = at_min[j]
                    if len(self.assignment[chosen]) + 1 == self.max_quota:
                        del at_min[j]
                        self.at_max += 1
                        if self.at_max == self.expected_at_max:
                            at_min.clear()
            if chosen is not None:
                self._give(tp, chosen)
            else:
                remaining.append(tp)
        return remaining

    def assign_round_robin(self, free: FreeRuns) -> None:
        """Round robin over members below quota (a Java Iterator over a LinkedList that members
        leave as they reach ``min_quota``), then one each to members at ``min_quota``."""
        below_min, at_min = self.below_min, self.at_min
        min_quota, max_quota = self.min_quota, self.max_quota
        self._whole_passes(free)
        pos = 0
        last = -1
        at_min_head = 0  # at_min is only appended to and polled from the head from here on
        for tp in free:
            if pos < len(below_min):
                mid = below_min[pos]
                last = pos
                pos += 1
            elif not below_min and at_min_head >= len(at_min):
                raise StickyAssignmentError("No more unfilled consumers to be assigned.")
            elif not below_min:
                mid = at_min[at_min_head]
                at_min_head += 1
                last = -1
            else:
                mid = below_min[0]
                last = 0
                pos = 1
            count = self._give(tp, mid)
            if count == min_quota:
                if last < 0:
                    raise StickyAssignmentError("iterator state: member reached minQuota outside "
                                                "the iteration")
                del below_min[last]
                pos -= 1
                last = -1
                at_min.append(mid)
            elif count == max_quota:
                self.at_max += 1

    def _whole_passes(self, free: FreeRuns) -> None:
        """The round robin's whole passes over the members below quota, done in bulk: while every
        member of the pass stays below ``min_quota``, each pass hands the next ``width`` partitions
        of ``free`` one to each member in order. Members reaching ``min_quota`` in the last pass
        leave for ``at_min`` in pass order; ``free`` is left at the first partition not handed out,
        where the iteration goes on from the first member left."""
        below_min, assignment, min_quota = self.below_min, self.assignment, self.min_quota
        while below_min and len(free) >= len(below_min):
            width = len(below_min)
            lists = [assignment[mid] for mid in below_min]
            had = [len(partitions) for partitions in lists]
            need = min_quota - max(had)
            passes = min(need, len(free) // width)
            self._deal(free, lists, passes)
            if self.given_up_by or self.claimed_twice:
                for j in range(passes):  # in the order they were handed out
                    for mid, partitions, n in zip(below_min, lists, had, strict=True):
                        self._note_transfer(partitions[n + j], mid)
            if passes < need:
                break
            self.at_min.extend(mid for mid in below_min if len(assignment[mid]) == min_quota)
            below_min[:] = [mid for mid in below_min if len(assignment[mid]) < min_quota]

    def _deal(self, free: FreeRuns, lists: list[list[TP]], passes: int) -> None:
        """Hand ``passes`` rows of ``len(lists)`` partitions of ``free``, element ``j`` of each row
        to ``lists[j]``, each partition made as it is placed. The member lists are older than the
        partitions and leave the young generation before they fill (a large deal moves them to the
        oldest first, :attr:`HOLD_FROM`): young collections then see only the new tuples, and no
        young list of them is left to the caller.

        Narrow rows: one append per partition. Wide rows (a many-member group): ``zip`` over a block
        of rows makes each member's share of the block, member after member, and one ``extend``
        places it. Python steps are then per row and per block, not per partition, and the tuples
        are made in the order they sit in their lists (the one-append way makes them in Kafka's
        order, member after member within a row, for the same result)."""
        width = len(lists)
        with young_collections_only() if passes * width >= self.HOLD_FROM else nullcontext():
            if width < self.ROWS_MIN_WIDTH:
                deque(map(list.append, cycle(lists), free.take(passes * width)), maxlen=0)
                return
            for start in range(0, passes, self.ROWS_PER_BLOCK):
                rows = [free.take(width) for _ in range(min(self.ROWS_PER_BLOCK, passes - start))]
                deque(map(list.extend, lists, zip(*rows, strict=True)), maxlen=0)

    def verify_unfilled(self) -> None:
        """Kafka's verifyUnfilledMembers."""
        if not self.below_min:
            return
        if self.at_max != self.expected_at_max:
            raise StickyAssignmentError(
                "We haven't reached the expected number of members with more than the minQuota "
                "partitions, but no more partitions to be assigned")
        for mid in self.below_min:
            if len(self.assignment[mid]) != self.min_quota:
                raise StickyAssignmentError(
                    f"Consumer: [{mid}] doesn't reach minQuota partitions, "
                    "and no more partitions to be assigned")

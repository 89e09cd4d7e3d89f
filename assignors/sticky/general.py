"""Kafka's GeneralAssignmentBuilder: the sticky assignment when subscriptions differ.

1. Owned partitions are kept while their member still subscribes to the topic (and, in rack mode,
   sits on a rack holding a replica); anything else "requires revocation".
2. Free partitions, topics with the fewest subscribers first, each go to the subscriber with the
   fewest partitions (ties: the lowest member id), a same-rack one first in rack mode
   (:meth:`GeneralBuilder._fill`, Kafka's ``maybeAssign``).
3. Members that cannot change (they hold every partition they can, none of a topic another member
   could take) are set aside.
4. Balancing: walking the partitions, one moves from its owner to the least loaded subscriber of its
   topic whenever the owner holds at least two more, preferring the member that had it in an older
   generation, until the assignment is "balanced" (no subscriber of a topic holds two fewer than an
   owner of one of its partitions). Moves back and forth are cancelled through
   :class:`~assignors.sticky.movements.PartitionMovements`. If the result scores no better than
   before the moves (Kafka's balance score), the moves are undone.

Java's ``TreeSet`` of members ordered by (partition count, member id) becomes one heap of
``(count, rank, id)`` per group of members with the same subscription (and rack), so "least loaded
subscriber of topic t" is a look at a few heap tops; stale heap entries are dropped when they surface.
The "is it balanced" verdict is cached between moves, and a histogram of member sizes answers it at
once when every size is within one, so nothing is quadratic in partitions.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from assignors.model import TopicPartition
from assignors.sticky.errors import StickyAssignmentError
from assignors.sticky.inputs import GroupInput, generation
from assignors.sticky.movements import PartitionMovements

TP = TopicPartition


class GeneralBuilder:
    """Kafka's GeneralAssignmentBuilder.

    With ``kafka_bugs`` it makes exactly Kafka's moves, including handing a partition back to its
    older-generation owner when that member no longer subscribes to the topic (a later move may take
    it on again, or not: then the result is invalid), and failing where Kafka throws a
    NullPointerException. Without it such owners are skipped, which always gives a valid assignment
    but may take another path than Kafka even where Kafka's own result ends up valid.
    ``foreign`` counts the partitions currently held by a member that does not subscribe to their topic.
    """

    def __init__(self, group: GroupInput, owned: dict[str, list[TP]], max_generation: int,
                 kafka_bugs: bool = False) -> None:
        self.group = group
        self.kafka_bugs = kafka_bugs
        self.foreign = 0
        ppt = group.partitions_per_topic
        self.current: dict[str, list[TP]] = owned
        # members by java rank; (size, rank) is the order of Kafka's sortedCurrentSubscriptions
        self.rank = group.member_rank
        self.by_rank: list[str] = sorted(group.member_rank, key=group.member_rank.__getitem__)
        self.potential: dict[str, frozenset[str]] = {}
        self.topic_consumers: dict[str, list[str]] = {t: [] for t in ppt}
        tc = self.topic_consumers
        for mid in group.member_order:
            topics = frozenset(t for t in group.members[mid].topics if t in ppt)
            for t in topics:
                tc[t].append(mid)
            self.potential[mid] = topics
        trank = group.topic_rank
        self.sorted_topics = sorted(ppt, key=lambda t: (len(self.topic_consumers[t]), trank[t]))
        self.max_gen = max_generation

    # -- previous owners (older generations) -------------------------------------------------------

    def _prev_assignment(self) -> dict[TP, tuple[str, int]]:
        prev: dict[TP, tuple[str, int]] = {}
        max_gen = self.max_gen
        for mid in self.group.member_order:
            m = self.group.members[mid]
            gen = generation(m)
            if gen is not None and gen < max_gen:
                g = gen
            elif gen is None and max_gen > -1:
                g = -1
            else:
                continue
            for tp in m.owned:
                cur = prev.get(tp)
                if cur is None or g > cur[1]:
                    prev[tp] = (mid, g)
        return prev

    # -- sorted-set emulation -----------------------------------------------------------------------

    def _push(self, mid: str) -> None:
        heapq.heappush(self.heaps[self.group_of[mid]], (self.size[mid], self.rank[mid], mid))

    def _top(self, g: int):
        heap = self.heaps[g]
        size = self.size
        active = self.active
        while heap:
            s, _r, mid = heap[0]
            if mid in active and size[mid] == s:
                return heap[0]
            heapq.heappop(heap)
        return None

    def _first_subscriber(self, topic: str, tp: TP | None = None) -> str | None:
        """First member of the (size, id) ordered set subscribed to topic (and not on a mismatching
        rack when tp is given)."""
        best = None
        groups = self.topic_groups[topic]
        if tp is not None:
            racks = self.group.racks.racks_of(tp)
            for g in groups:
                r = self.group_rack[g]
                if r is not None and r not in racks:
                    continue
                top = self._top(g)
                if top is not None and (best is None or top < best):
                    best = top
        else:
            for g in groups:
                top = self._top(g)
                if top is not None and (best is None or top < best):
                    best = top
        return None if best is None else best[2]

    def _set_size(self, mid: str, delta: int) -> None:
        old = self.size[mid]
        new = old + delta
        self.size[mid] = new
        if mid in self.active:
            hist = self.hist
            hist[old] -= 1
            hist[new] = hist.get(new, 0) + 1
            self._push(mid)
        self.dirty = True

    # -- the algorithm ------------------------------------------------------------------------------

    def build(self) -> dict[str, list[TP]]:
        group = self.group
        racks = group.racks
        ppt = group.partitions_per_topic
        current = self.current
        prev = self._prev_assignment()
        rack_mode = racks.rack_mode

        # keep owned partitions that are still subscribed (and rack-aligned)
        revocation_required = False
        assigned: set[TP] = set()
        for mid, lst in current.items():
            pot = self.potential[mid]
            keep = []
            for tp in lst:
                if tp[0] not in pot or (rack_mode and racks.mismatch(mid, tp)):
                    revocation_required = True
                else:
                    keep.append(tp)
            if len(keep) != len(lst):
                current[mid] = keep
            assigned.update(keep)
        owner: dict[TP, str] = {tp: mid for mid, lst in current.items() for tp in lst}
        self.owner = owner

        sorted_all: list[TP] = [(t, p) for t in self.sorted_topics for p in range(ppt[t])]
        unassigned = [tp for tp in sorted_all if tp not in assigned] if assigned else sorted_all

        # sorted-set state
        self.size = {mid: len(current[mid]) for mid in current}
        self.active = set(current)
        self.hist: dict[int, int] = {}
        for s in self.size.values():
            self.hist[s] = self.hist.get(s, 0) + 1
        group_index: dict[tuple[frozenset[str], str | None], int] = {}
        self.group_of: dict[str, int] = {}
        self.group_rack: list[str | None] = []
        self.heaps: list[list] = []
        self.topic_groups: dict[str, list[int]] = {t: [] for t in ppt}
        for mid in self.by_rank:
            key = (self.potential[mid], racks.member_rack.get(mid) if rack_mode else None)
            g = group_index.get(key)
            if g is None:
                g = group_index[key] = len(self.heaps)
                self.heaps.append([])
                self.group_rack.append(key[1])
                for t in key[0]:
                    self.topic_groups[t].append(g)
            self.group_of[mid] = g
            self.heaps[g].append((self.size[mid], self.rank[mid], mid))
        for h in self.heaps:
            heapq.heapify(h)
        self.dirty = True
        self._balanced = False

        initializing = max(self.size.values(), default=0) == 0

        # free partitions to the least loaded eligible member (same-rack first in rack mode); every
        # heap entry is valid here, so the chosen member's entry is replaced in place
        rest = self._fill(unassigned, rack_mode) if rack_mode else unassigned
        self._fill(rest, False)
        self.hist = {}
        for mid in self.active:
            sz = self.size[mid]
            self.hist[sz] = self.hist.get(sz, 0) + 1

        # narrow down to partitions and members that can move
        movable_topics = {t for t, cs in self.topic_consumers.items() if len(cs) >= 2}
        if len(movable_topics) != len(ppt):
            sorted_all = [tp for tp in sorted_all if tp[0] in movable_topics]
            unassigned = [tp for tp in unassigned if tp[0] in movable_topics]
        fixed: dict[str, list[TP]] = {}
        for mid in group.member_order:
            lst = current[mid]
            max_size = sum(ppt[t] for t in self.potential[mid])
            if len(lst) < max_size or any(tp[0] in movable_topics for tp in lst):
                continue
            fixed[mid] = current.pop(mid)
            self.active.discard(mid)
            self.hist[self.size[mid]] -= 1
        self.dirty = True

        # per-topic owner counts for the balance check
        self.topic_owners: dict[str, dict[str, int]] = {t: {} for t in movable_topics}
        for mid, lst in current.items():
            for tp in lst:
                d = self.topic_owners.get(tp[0])
                if d is not None:
                    d[mid] = d.get(mid, 0) + 1

        pre_assignment = {mid: list(lst) for mid, lst in current.items()}
        pre_owner = dict(owner)

        self.movements = PartitionMovements()
        self.prev = prev
        if not revocation_required:
            self._perform_reassignments(unassigned)
        performed = self._perform_reassignments(sorted_all)

        if not initializing and performed and balance_score(current) >= balance_score(pre_assignment):
            current.clear()
            current.update(pre_assignment)
            owner.clear()
            owner.update(pre_owner)
            self.foreign = 0  # the snapshot precedes every move

        current.update(fixed)
        return current

    def _fill(self, partitions: list[TP], rack_filter: bool) -> list[TP]:
        """Kafka's maybeAssign: each partition to the first member of the (size, id) order that
        subscribes to its topic (and, with ``rack_filter``, is not on a rack without a replica).
        Returns the partitions no member could take."""
        heaps = self.heaps
        size = self.size
        current = self.current
        owner = self.owner
        topic_groups = self.topic_groups
        group_rack = self.group_rack
        racks_of = self.group.racks.racks_of
        heapreplace = heapq.heapreplace
        left: list[TP] = []
        for tp in partitions:
            groups = topic_groups[tp[0]]
            best = None
            if rack_filter:
                racks = racks_of(tp)
                for g in groups:
                    r = group_rack[g]
                    if r is None or r in racks:
                        h = heaps[g]
                        if h and (best is None or h[0] < best[0]):
                            best = h
            elif len(groups) == 1:
                best = heaps[groups[0]]
            else:
                for g in groups:
                    h = heaps[g]
                    if h and (best is None or h[0] < best[0]):
                        best = h
            if not best:
                left.append(tp)
                continue
            s, r, mid = best[0]
            heapreplace(best, (s + 1, r, mid))
            size[mid] = s + 1
            current[mid].append(tp)
            owner[tp] = mid
        return left

    def _is_balanced(self) -> bool:
        if not self.dirty:
            return self._balanced
        self.dirty = False
        hist = self.hist
        sizes = [s for s, c in hist.items() if c > 0]
        if not sizes or min(sizes) >= max(sizes) - 1:
            self._balanced = True
            return True
        size = self.size
        if self.foreign:
            self._balanced = self._is_balanced_literal()
            return self._balanced
        for t, owners in self.topic_owners.items():
            if not owners:
                continue
            min_sub = None
            for g in self.topic_groups[t]:
                top = self._top(g)
                if top is not None and (min_sub is None or top[0] < min_sub):
                    min_sub = top[0]
            if min_sub is None:
                continue
            limit = min_sub + 1
            for o in owners:
                if size[o] > limit:
                    self._balanced = False
                    return False
        self._balanced = True
        return True

    def _is_balanced_literal(self) -> bool:
        """Kafka's isBalanced word for word; needed only while some member holds a partition of a
        topic it does not subscribe to (``foreign``), where the quick check above is not equivalent."""
        size = self.size
        owner = self.owner
        ppt = self.group.partitions_per_topic
        for mid in sorted(self.active, key=lambda m: (size[m], self.rank[m])):
            topics = self.potential[mid]
            if size[mid] == sum(ppt[t] for t in topics):
                continue
            for t in topics:
                for p in range(ppt[t]):
                    o = owner[(t, p)]
                    if o != mid and size[mid] + 1 < size[o]:
                        return False
        return True

    def _perform_reassignments(self, partitions: Sequence[TP]) -> bool:
        performed = False
        owner = self.owner
        size = self.size
        prev = self.prev
        active = self.active
        while True:
            modified = False
            for tp in partitions:
                if self._is_balanced():
                    break
                mid = owner[tp]
                p = prev.get(tp)
                if p is not None:
                    q = p[0]
                    # Kafka hands the partition back to its older-generation owner even when that
                    # member no longer subscribes to the topic (an invalid assignment), and fails
                    # with a NullPointerException when that member was set aside as unmovable. The
                    # kafka_bugs pass does the same; the fallback pass skips such owners.
                    if q not in active:
                        if self.kafka_bugs:
                            raise StickyAssignmentError(f"previous owner {q} of {tp} is not movable (Kafka NPE)")
                    elif (self.kafka_bugs or tp[0] in self.potential[q]) and size[mid] > size[q] + 1:
                        self._reassign(tp, q)
                        performed = modified = True
                        continue
                target = self._first_subscriber(tp[0])
                if target is not None and size[mid] > size[target] + 1:
                    self._reassign(tp, target)
                    performed = modified = True
            if not modified:
                return performed

    def _reassign(self, tp: TP, new: str) -> None:
        old = self.owner[tp]
        actual = self.movements.actual_partition(tp, old, new)
        self._process_movement(actual, new)

    def _process_movement(self, tp: TP, new: str) -> None:
        old = self.owner[tp]
        self.movements.move(tp, old, new)
        self.current[old].remove(tp)
        self.current[new].append(tp)
        self.owner[tp] = new
        potential = self.potential
        if tp[0] not in potential[old]:
            self.foreign -= 1
        if tp[0] not in potential[new]:
            self.foreign += 1
        owners = self.topic_owners.get(tp[0])
        if owners is not None:
            c = owners[old] - 1
            if c:
                owners[old] = c
            else:
                del owners[old]
            owners[new] = owners.get(new, 0) + 1
        self._set_size(old, -1)
        self._set_size(new, 1)


def balance_score(assignment: dict[str, list[TP]]) -> int:
    """Kafka's ``getBalanceScore``: the sum of the pairwise differences of member sizes (0: all equal)."""
    sizes = sorted(len(v) for v in assignment.values())
    n = len(sizes)
    return sum(s * (2 * i - n + 1) for i, s in enumerate(sizes))

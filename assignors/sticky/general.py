"""Kafka's GeneralAssignmentBuilder: the sticky assignment when subscriptions differ.

:meth:`GeneralBuilder.build` takes Kafka's steps, each a method:

1. :meth:`~GeneralBuilder.previous_owners`: for every owned partition, the member that held it in
   the most recent generation older than the current one (Kafka's ``prevAssignment``).
2. :meth:`~GeneralBuilder.keep_owned`: owned partitions are kept while their member still subscribes
   to the topic (and, in rack mode, sits on a rack holding a replica); anything else "requires
   revocation".
3. :meth:`~GeneralBuilder.unassigned`: the partitions nobody kept, topics with the fewest
   subscribers first, then by topic rank and number.
4. :meth:`~GeneralBuilder.order_members`: members ordered by (partition count, member id)
   (:class:`~assignors.sticky.load_order.MembersByLoad`, Kafka's ``sortedCurrentSubscriptions``).
5. :meth:`~GeneralBuilder.balance`: free partitions each go to the least loaded subscriber, a
   same-rack one first in rack mode (Kafka's ``maybeAssign``); members that cannot change (they hold
   every partition they can, none of a topic another member could take) are set aside; then, walking
   the partitions, one moves from its owner to the least loaded subscriber of its topic whenever the
   owner holds at least two more, preferring the member that had it in an older generation, until
   the assignment is "balanced" (no subscriber of a topic holds two fewer than an owner of one of
   its partitions). Moves back and forth cancel out through
   :class:`~assignors.sticky.movements.PartitionMovements`. If the result scores no better than
   before the moves (Kafka's balance score), the moves are undone.

Worked example: C0 subscribes to t0 (1 partition), C1 to t0, t1 (2 partitions), C2 to t0, t1, t2
(3 partitions); nobody owns anything. Topics by fewest subscribers: t2, t1, t0. The three t2
partitions go to C2, its only subscriber; t1p0 and t1p1 to C1 (0, then 1 partition, against C2's 3);
t0p0 to C0. No owner holds two more than a subscriber of its topic with fewer, so nothing moves:
C0 [t0p0], C1 [t1p0, t1p1], C2 [t2p0, t2p1, t2p2]. If C0 leaves, C1 and C2 keep theirs and t0p0 goes
to C1 (2 partitions against C2's 3).

The "is it balanced" verdict is cached between moves, and the histogram of member counts answers it
at once when every count is within one, so nothing is quadratic in partitions.
"""

from __future__ import annotations

from collections.abc import Sequence

from assignors.model import TopicPartition
from assignors.sticky.errors import StickyAssignmentError
from assignors.sticky.inputs import GroupInput, generation
from assignors.sticky.load_order import MembersByLoad
from assignors.sticky.movements import PartitionMovements

TP = TopicPartition


class GeneralBuilder:
    """Kafka's GeneralAssignmentBuilder; :meth:`build` returns the assignment.

    With ``kafka_bugs`` it makes exactly Kafka's moves, including handing a partition back to its
    older-generation owner when that member no longer subscribes to the topic (a later move may take
    it on again, or not: then the result is invalid), and failing where Kafka throws a
    NullPointerException. Without it such owners are skipped, which always gives a valid assignment
    but may take another path than Kafka even where Kafka's own result ends up valid. ``foreign``
    counts the partitions currently held by a member that does not subscribe to their topic.
    """

    def __init__(self, group: GroupInput, owned: dict[str, list[TP]], max_generation: int,
                 kafka_bugs: bool = False) -> None:
        self.group = group
        self.kafka_bugs = kafka_bugs
        self.max_gen = max_generation
        self.foreign = 0
        ppt = group.partitions_per_topic
        self.current: dict[str, list[TP]] = owned
        """Member id -> its partitions; the build works on (and returns) the caller's dict."""
        self.owner: dict[TP, str] = {}
        self.prev: dict[TP, tuple[str, int]] = {}
        """Partition -> (member, generation) that held it in the latest older generation."""
        self.revocation_required = False
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
        self.sorted_all: list[TP] = [(t, p) for t in self.sorted_topics for p in range(ppt[t])]
        self.movable_topics = {t for t, cs in tc.items() if len(cs) >= 2}
        """Topics with two or more subscribers: only their partitions can move."""
        self.load = MembersByLoad(self.rank, ppt)
        self.topic_owners: dict[str, dict[str, int]] = {}
        """Topic -> member -> how many of its partitions the member holds (topics that can move)."""
        self.fixed: dict[str, list[TP]] = {}
        """Members set aside because they cannot change, with their partitions."""
        self.movements = PartitionMovements()
        self.dirty = True  # something moved since the last balance verdict
        self._balanced = False

    # -- the steps ---------------------------------------------------------------------------------

    def build(self) -> dict[str, list[TP]]:
        self.prev = self.previous_owners()
        assigned = self.keep_owned()
        unassigned = self.unassigned(assigned)
        self.order_members()
        self.balance(unassigned)
        return self.current

    def previous_owners(self) -> dict[TP, tuple[str, int]]:
        """Kafka's prepopulateCurrentAssignments: members reporting an older generation than the
        newest (or none, while some member reports one) are previous owners of what they own."""
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

    def keep_owned(self) -> set[TP]:
        """Kafka's assignOwnedPartitions: drop owned partitions of topics the member no longer
        subscribes to (or on a mismatching rack); those require revocation. Returns the kept
        ones."""
        racks = self.group.racks
        rack_mode = racks.rack_mode
        current = self.current
        assigned: set[TP] = set()
        for mid, lst in current.items():
            pot = self.potential[mid]
            keep = []
            for tp in lst:
                if tp[0] not in pot or (rack_mode and racks.mismatch(mid, tp)):
                    self.revocation_required = True
                else:
                    keep.append(tp)
            if len(keep) != len(lst):
                current[mid] = keep
            assigned.update(keep)
        self.owner = {tp: mid for mid, lst in current.items() for tp in lst}
        return assigned

    def unassigned(self, assigned: set[TP]) -> list[TP]:
        """Kafka's getUnassignedPartitions: every partition not kept, in the sorted-topics order."""
        return [tp for tp in self.sorted_all if tp not in assigned] if assigned else self.sorted_all

    def order_members(self) -> None:
        """Members into the (count, id) order, grouped by subscription (and rack in rack mode)."""
        racks = self.group.racks
        member_rack = racks.member_rack if racks.rack_mode else {}
        potential = self.potential
        self.load.add_members(self.by_rank, {mid: len(lst) for mid, lst in self.current.items()},
                              lambda mid: (potential[mid], member_rack.get(mid)))

    def balance(self, unassigned: list[TP]) -> None:
        """Kafka's balance: hand out the free partitions, set aside the members that cannot change,
        move partitions until balanced, and keep the moves only if they improved the balance
        score."""
        initializing = max(self.load.size.values(), default=0) == 0
        self.assign_free(unassigned)
        reassignable, unassigned = self.set_aside_fixed(unassigned)
        self.count_topic_owners()
        pre_assignment = {mid: list(lst) for mid, lst in self.current.items()}
        pre_owner = dict(self.owner)
        if not self.revocation_required:
            self._perform_reassignments(unassigned)
        performed = self._perform_reassignments(reassignable)
        if (not initializing and performed
                and balance_score(self.current) >= balance_score(pre_assignment)):
            self.current.clear()
            self.current.update(pre_assignment)
            self.owner.clear()
            self.owner.update(pre_owner)
            self.foreign = 0  # the snapshot precedes every move
        self.current.update(self.fixed)

    def assign_free(self, unassigned: list[TP]) -> None:
        """Each free partition to the least loaded eligible member, same-rack ones first in rack
        mode."""
        racks = self.group.racks
        load = self.load
        rest = (load.fill(unassigned, self.current, self.owner, racks.racks_of) if racks.rack_mode
                else unassigned)
        load.fill(rest, self.current, self.owner, None)
        load.recount()

    def set_aside_fixed(self, unassigned: list[TP]) -> tuple[list[TP], list[TP]]:
        """Narrow down to what can move: partitions of topics with two or more subscribers, and
        members other than those holding every partition they can, none of such a topic. Returns
        (all partitions, the free ones), both narrowed down."""
        ppt = self.group.partitions_per_topic
        movable_topics = self.movable_topics
        reassignable = self.sorted_all
        if len(movable_topics) != len(ppt):
            reassignable = [tp for tp in reassignable if tp[0] in movable_topics]
            unassigned = [tp for tp in unassigned if tp[0] in movable_topics]
        current = self.current
        for mid in self.group.member_order:
            lst = current[mid]
            max_size = sum(ppt[t] for t in self.potential[mid])
            if len(lst) < max_size or any(tp[0] in movable_topics for tp in lst):
                continue
            self.fixed[mid] = current.pop(mid)
            self.load.set_aside(mid)
        self.dirty = True
        return reassignable, unassigned

    def count_topic_owners(self) -> None:
        """Per topic that can move, how many of its partitions each member holds (the balance
        check)."""
        self.topic_owners = {t: {} for t in self.movable_topics}
        for mid, lst in self.current.items():
            for tp in lst:
                d = self.topic_owners.get(tp[0])
                if d is not None:
                    d[mid] = d.get(mid, 0) + 1

    # -- moves and the balance check ---------------------------------------------------------------

    def _is_balanced(self) -> bool:
        """Kafka's isBalanced, cached until something moves."""
        if not self.dirty:
            return self._balanced
        self.dirty = False
        load = self.load
        if load.counts_within_one():
            self._balanced = True
        elif self.foreign:
            self._balanced = self._is_balanced_literal()
        else:
            self._balanced = self._no_owner_above_subscriber()
        return self._balanced

    def _no_owner_above_subscriber(self) -> bool:
        """No member holds a partition of a topic while some subscriber of it holds two fewer."""
        load = self.load
        size = load.size
        for t, owners in self.topic_owners.items():
            if not owners:
                continue
            least = load.least_loaded(t)
            if least is None:
                continue
            limit = least[0] + 1
            for o in owners:
                if size[o] > limit:
                    return False
        return True

    def _is_balanced_literal(self) -> bool:
        """Kafka's isBalanced word for word; needed only while some member holds a partition of a
        topic it does not subscribe to (``foreign``), where the quick check above is not
        equivalent."""
        size = self.load.size
        owner = self.owner
        ppt = self.group.partitions_per_topic
        for mid in sorted(self.load.active, key=lambda m: (size[m], self.rank[m])):
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
        """Kafka's performReassignments: passes over ``partitions`` until one moves nothing."""
        performed = False
        owner = self.owner
        size = self.load.size
        prev = self.prev
        active = self.load.active
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
                            raise StickyAssignmentError(f"previous owner {q} of {tp} is not "
                                                        "movable (Kafka NPE)")
                    elif ((self.kafka_bugs or tp[0] in self.potential[q])
                          and size[mid] > size[q] + 1):
                        self._reassign(tp, q)
                        performed = modified = True
                        continue
                least = self.load.least_loaded(tp[0])
                if least is not None and size[mid] > size[least[2]] + 1:
                    self._reassign(tp, least[2])
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
        self.load.change(old, -1)
        self.load.change(new, 1)
        self.dirty = True


def balance_score(assignment: dict[str, list[TP]]) -> int:
    """Kafka's ``getBalanceScore``: the sum of the pairwise differences of member sizes (0: all
    equal)."""
    sizes = sorted(len(v) for v in assignment.values())
    n = len(sizes)
    return sum(s * (2 * i - n + 1) for i, s in enumerate(sizes))

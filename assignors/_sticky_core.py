"""The algorithm shared by ``sticky`` and ``cooperative-sticky`` (Kafka's AbstractStickyAssignor).

Goals, in order: (1) balance — partition counts of members differ by at most one where subscriptions
allow it; (2) stickiness — a member keeps as many of the partitions it owned as balance permits;
(3) rack locality (KIP-881) where racks are known, without giving up balance.

Steps, as Kafka 4.3 does them:

1. **Members in Java order.** Kafka walks the members in the iteration order of the ``HashMap`` that
   holds the subscriptions. We rebuild that order from the member ids (see :mod:`assignors._java`).
2. **Who owned what.** Walking the members in that order, each owned partition of a topic that still
   exists is kept by its first claimant. A later claimant with a higher generation takes it over; one
   with a lower generation does not get it; one with the *same* generation makes the partition
   "claimed twice": nobody keeps it and it is handed out afresh.
3. **Rack mode** is on when some member has a rack, that rack holds replicas, and either some
   partition is not on every rack or ``prefer_rack_aware_logic`` is set. Then an owned partition on a
   member whose rack holds no replica of it is given up, and new partitions go to same-rack members
   first.
4. **Equal subscriptions: the constrained builder.** With ``T`` partitions and ``N`` members each
   member gets ``floor(T/N)`` or ``ceil(T/N)``, and exactly ``T mod N`` get the larger number. Members
   keep their owned partitions (sorted by partition number, then topic) up to their quota — the
   first ones visited may keep ``ceil``, later ones ``floor`` — then the free partitions (sorted by
   topic, then partition) go round-robin to the members below quota (sorted by member id), same-rack
   members first in rack mode; members at ``floor`` take the leftovers one each.
5. **Unequal subscriptions: the general builder.** Owned partitions are kept when still subscribed
   (and rack-aligned). Free partitions are taken in order of topics with the fewest subscribers, and
   each goes to the subscriber with the fewest partitions (ties: lowest member id), a same-rack one
   first in rack mode. Then partitions are moved, one at a time, from a member to the least loaded
   subscriber of the topic whenever the member holds at least two more, preferring to move a
   partition back to the member that had it in an older generation, until no such move is possible
   ("balanced"). If the result is no more balanced than before the moves, the moves are undone.
   Kafka hands a partition back to its older-generation owner even when that member no longer
   subscribes to the topic; a later move usually takes it on, and we follow that path to the same
   result. Only where it would stay there (or Kafka would crash) do we rebuild skipping such owners.
6. **Cooperative transfers.** A partition assigned to a member other than the one that owned it must
   first be revoked: Kafka's cooperative assignor leaves it out of the new owner's list for this
   round and reports it as transferring (see :mod:`assignors.cooperative_sticky`).

Worked example (equal subscriptions): members C0, C1, C2 subscribe to t0 (3 partitions) and t1
(3 partitions); C0 owned [t0p0, t0p1, t1p0, t1p1], C1 owned [t0p2, t1p2], C2 is new, all in
generation 1. Quotas are 2 each. Java's HashMap order is C0, C1, C2. C0 keeps its first two owned
partitions sorted by (partition, topic) — t0p0, t1p0 — and gives up t0p1, t1p1; C1 keeps t0p2, t1p2.
The free partitions t0p1, t1p1 go to C2. Result C0 [t0p0, t1p0], C1 [t0p2, t1p2], C2 [t0p1, t1p1],
and with the cooperative protocol t0p1 and t1p1 transfer from C0 to C2 (withheld this round).

Implementation notes: partitions are ``(topic, partition)`` tuples; members are ranked by
``String.compareTo`` of their ids so that Java's ``TreeSet`` of members ordered by (partition count,
id) becomes a heap of ``(count, rank)``. The general builder groups members with the same
subscription (and rack) so that "least loaded subscriber of topic t" is a look at a few heap tops,
and it caches the "is it balanced" verdict between moves, so nothing is quadratic in partitions.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from assignors._java import JavaHashSet, hashmap_order, java_ranks, string_hash, topic_partition_hash
from assignors.errors import AssignorError
from assignors.model import GroupSnapshot, Member, TopicPartition

TP = TopicPartition
_EMPTY: frozenset[str] = frozenset()


class StickyAssignmentError(AssignorError):
    """The sticky algorithm reached a state Kafka reports with ``IllegalStateException``."""


# ---------------------------------------------------------------------------------------------------
# Inputs common to both builders
# ---------------------------------------------------------------------------------------------------


class _Input:
    """What Kafka's AbstractStickyAssignor derives from the subscriptions and metadata."""

    def __init__(self, snapshot: GroupSnapshot, prefer_rack_aware_logic: bool) -> None:
        self.snapshot = snapshot
        self.members: dict[str, Member] = {m.member_id: m for m in snapshot.members}
        # java HashMap<String, Subscription> iteration order, members inserted in snapshot order
        self.order: list[str] = hashmap_order(m.member_id for m in snapshot.members)
        self.rank: dict[str, int] = java_ranks(self.members)
        subscribed = {t for m in snapshot.members for t in m.topics}
        # partitionsPerTopic: subscribed topics that exist with at least one partition
        self.ppt: dict[str, int] = {t: n for t, n in snapshot.topics.items() if t in subscribed and n > 0}
        self.topic_rank: dict[str, int] = java_ranks(self.ppt)
        self.total = sum(self.ppt.values())
        self._init_racks(prefer_rack_aware_logic)

    # -- generations and owned partitions ----------------------------------------------------------

    @staticmethod
    def generation(m: Member) -> int | None:
        g = m.generation
        return g if g is not None and g >= 0 else None

    def owned_valid(self, m: Member) -> list[TP]:
        """Owned partitions of topics in the metadata (and within the partition count)."""
        ppt = self.ppt
        return [tp for tp in m.owned if 0 <= tp[1] < ppt.get(tp[0], 0)]

    def reconcile_owned(self) -> tuple[bool, dict[str, list[TP]], set[TP], int]:
        """Kafka's ``allSubscriptionsEqual``: equal-subscription flag, surviving owned partitions per
        member, partitions claimed by two members of one generation, and the highest generation."""
        equal = True
        first: set[str] | None = None
        owned: dict[str, list[TP]] = {}
        multi: set[TP] = set()
        owner_of: dict[TP, str] = {}
        gen_of: dict[str, int] = {}
        max_gen = -1
        for mid in self.order:
            m = self.members[mid]
            if first is None:
                first = set(m.topics)
            elif equal and not (len(m.topics) == len(first) and first.issuperset(m.topics)):
                equal = False
            gen = self.generation(m)
            g = -1 if gen is None else gen
            gen_of[mid] = g
            if g > max_gen:
                max_gen = g
            mine: list[TP] = []
            owned[mid] = mine
            for tp in self.owned_valid(m):
                other = owner_of.get(tp)
                if other is None:
                    mine.append(tp)
                    owner_of[tp] = mid
                    continue
                other_gen = gen_of[other]
                if g == other_gen:
                    multi.add(tp)
                    _remove_first(owned[other], tp)
                    owner_of[tp] = mid
                elif g > other_gen:
                    mine.append(tp)
                    _remove_first(owned[other], tp)
                    owner_of[tp] = mid
        return equal, owned, multi, max_gen

    # -- racks -------------------------------------------------------------------------------------

    def _init_racks(self, prefer: bool) -> None:
        snap = self.snapshot
        self.consumer_rack: dict[str, str] = {}
        self.rack_mode = False
        self.partition_racks: dict[str, list[frozenset[str]]] = {}
        by_rack: dict[str, int] = {}
        for mid in self.order:
            r = self.members[mid].rack
            if r:
                by_rack[r] = by_rack.get(r, 0) + 1
        if not by_rack:
            return
        interned: dict[frozenset[str], frozenset[str]] = {}
        union: set[str] = set()
        per_topic: dict[str, list[frozenset[str]]] = {}
        for t, n in self.ppt.items():
            replica_racks = snap.replica_racks.get(t) if snap.replica_racks is not None else None
            sets: list[frozenset[str]] = []
            for p in range(n):
                fs = frozenset(r for r in replica_racks[p] if r is not None) if replica_racks else _EMPTY
                fs = interned.setdefault(fs, fs)
                sets.append(fs)
            per_topic[t] = sets
        for fs in interned:
            union |= fs
        if union.isdisjoint(by_rack):
            return
        if not prefer and all(fs == union for fs in interned):
            return
        self.rack_mode = True
        self.partition_racks = per_topic
        self.consumer_rack = {mid: self.members[mid].rack for mid in self.order if self.members[mid].rack}
        self._count_by_rackset = {fs: sum(by_rack.get(r, 0) for r in fs) for fs in interned}

    def racks_of(self, tp: TP) -> frozenset[str]:
        return self.partition_racks[tp[0]][tp[1]]

    def mismatch(self, mid: str, tp: TP) -> bool:
        """Kafka's ``racksMismatch``: the member has a rack (in rack mode) holding no replica of tp."""
        rack = self.consumer_rack.get(mid)
        return rack is not None and rack not in self.partition_racks[tp[0]][tp[1]]

    def num_rack_consumers(self, tp: TP) -> int:
        return self._count_by_rackset[self.partition_racks[tp[0]][tp[1]]]


def _remove_first(lst: list, item) -> None:
    if item in lst:
        lst.remove(item)


# ---------------------------------------------------------------------------------------------------
# Constrained builder (all subscriptions equal)
# ---------------------------------------------------------------------------------------------------


def _constrained(inp: _Input, owned: dict[str, list[TP]], multi: set[TP]
                 ) -> tuple[dict[str, list[TP]], dict[TP, str]]:
    n_members = len(owned)
    total = inp.total
    min_q = total // n_members
    max_q = -(-total // n_members)
    expected_over = total % n_members
    over = 0
    assignment: dict[str, list[TP]] = {mid: [] for mid in owned}
    maybe_revoked: dict[TP, str] = {}
    transferring: dict[TP, str] = {}
    under: list[str] = []
    exact_min: list[str] = []
    assigned: set[TP] = set()
    trank = inp.topic_rank
    rack_mode = inp.rack_mode

    # 1. keep owned partitions up to quota, members in java HashMap order
    for mid in inp.order:
        mine = owned[mid]
        if rack_mode:
            kept = []
            for tp in mine:
                if inp.mismatch(mid, tp):
                    maybe_revoked[tp] = mid
                else:
                    kept.append(tp)
        else:
            kept = list(mine)
        if len(kept) > 1:
            kept.sort(key=lambda tp: (tp[1], trank[tp[0]]))
        if multi:
            kept = [tp for tp in kept if tp not in multi]
        k = len(kept)
        target = assignment[mid]
        if k < min_q:
            target.extend(kept)
            assigned.update(kept)
            under.append(mid)
            continue
        if k >= max_q and over < expected_over:
            over += 1
            if over == expected_over:
                exact_min.clear()
            keep = max_q
        else:
            keep = min_q
            if over < expected_over:
                exact_min.append(mid)
        target.extend(kept[:keep])
        assigned.update(kept[:keep])
        for tp in kept[keep:]:
            maybe_revoked[tp] = mid

    # 2. free partitions, topics by name then partition number
    unassigned: list[TP] = []
    for t in sorted(inp.ppt, key=trank.__getitem__):
        n = inp.ppt[t]
        if assigned:
            unassigned.extend(tp for tp in ((t, p) for p in range(n)) if tp not in assigned)
        else:
            unassigned.extend((t, p) for p in range(n))
    rank = inp.rank
    under.sort(key=rank.__getitem__)
    exact_min.sort(key=rank.__getitem__)

    def assign_new(tp: TP, mid: str) -> int:
        lst = assignment[mid]
        lst.append(tp)
        prev = maybe_revoked.get(tp)
        if (prev is not None and prev != mid) or tp in multi:
            transferring[tp] = mid
        return len(lst)

    # 3. rack-aware round robin
    if rack_mode:
        unassigned.sort(key=inp.num_rack_consumers)
        crack = inp.consumer_rack

        def next_rack_consumer(tp: TP, lst: list[str], start: int) -> int:
            racks = inp.racks_of(tp)
            if not racks:
                return -1
            size = len(lst)
            for i in range(size):
                idx = (start + i) % size
                r = crack.get(lst[idx])
                if r is not None and r in racks:
                    return idx
            return -1

        cursor = 0
        remaining: list[TP] = []
        for tp in unassigned:
            chosen = None
            i = next_rack_consumer(tp, under, cursor)
            if i >= 0:
                chosen = under[i]
                cnt = len(assignment[chosen]) + 1
                if cnt >= min_q:
                    del under[i]
                    if cnt < max_q and over < expected_over:
                        exact_min.append(chosen)
                else:
                    i += 1
                cursor = i % len(under) if under else 0
            elif exact_min:
                j = next_rack_consumer(tp, exact_min, 0)
                if j >= 0:
                    chosen = exact_min[j]
                    if len(assignment[chosen]) + 1 == max_q:
                        del exact_min[j]
                        over += 1
                        if over == expected_over:
                            exact_min.clear()
            if chosen is not None:
                assign_new(tp, chosen)
            else:
                remaining.append(tp)
        unassigned = remaining

    # 4. plain round robin over members below quota (a java Iterator over a LinkedList), then one
    #    extra partition each to members at minQuota, earliest to reach minQuota first
    pos = 0
    last = -1
    exact_head = 0  # exact_min is only appended to and polled from the head from here on
    for tp in unassigned:
        if pos < len(under):
            mid = under[pos]
            last = pos
            pos += 1
        elif not under and exact_head >= len(exact_min):
            raise StickyAssignmentError("No more unfilled consumers to be assigned.")
        elif not under:
            mid = exact_min[exact_head]
            exact_head += 1
            last = -1
        else:
            mid = under[0]
            last = 0
            pos = 1
        cnt = assign_new(tp, mid)
        if cnt == min_q:
            if last < 0:
                raise StickyAssignmentError("iterator state: member reached minQuota outside the iteration")
            del under[last]
            pos -= 1
            last = -1
            exact_min.append(mid)
        elif cnt == max_q:
            over += 1

    # 5. Kafka's verifyUnfilledMembers
    if under:
        if over != expected_over:
            raise StickyAssignmentError(
                "We haven't reached the expected number of members with more than the minQuota partitions, "
                "but no more partitions to be assigned")
        for mid in under:
            if len(assignment[mid]) != min_q:
                raise StickyAssignmentError(
                    f"Consumer: [{mid}] doesn't reach minQuota partitions, "
                    "and no more partitions to be assigned")
    return assignment, transferring


# ---------------------------------------------------------------------------------------------------
# General builder (subscriptions differ)
# ---------------------------------------------------------------------------------------------------


class _Movements:
    """Kafka's PartitionMovements: partition moves recorded per topic and (source, destination)."""

    __slots__ = ("by_topic", "moves")

    def __init__(self) -> None:
        self.by_topic: dict[str, dict[tuple[str, str], JavaHashSet]] = {}
        self.moves: dict[TP, tuple[str, str]] = {}

    def _remove(self, tp: TP) -> tuple[str, str]:
        pair = self.moves.pop(tp)
        per_topic = self.by_topic[tp[0]]
        s = per_topic[pair]
        s.discard(tp)
        if not len(s):
            del per_topic[pair]
        if not per_topic:
            del self.by_topic[tp[0]]
        return pair

    def _add(self, tp: TP, pair: tuple[str, str]) -> None:
        self.moves[tp] = pair
        per_topic = self.by_topic.setdefault(tp[0], {})
        s = per_topic.get(pair)
        if s is None:
            s = per_topic[pair] = JavaHashSet(_tp_hash)
        s.add(tp)

    def move(self, tp: TP, old: str, new: str) -> None:
        if tp in self.moves:
            src, _dst = self._remove(tp)
            if src != new:
                self._add(tp, (src, new))
        else:
            self._add(tp, (old, new))

    def actual_partition(self, tp: TP, old: str, new: str) -> TP:
        per_topic = self.by_topic.get(tp[0])
        if per_topic is None:
            return tp
        rec = self.moves.get(tp)
        if rec is not None:
            old = rec[0]
        s = per_topic.get((new, old))
        if s is None:
            return tp
        return s.first()


_TOPIC_HASH: dict[str, int] = {}


def _tp_hash(tp: TP) -> int:
    h = _TOPIC_HASH.get(tp[0])
    if h is None:
        if len(_TOPIC_HASH) > 100_000:
            _TOPIC_HASH.clear()
        h = _TOPIC_HASH[tp[0]] = string_hash(tp[0])
    return topic_partition_hash_fast(h, tp[1])


def topic_partition_hash_fast(topic_hash: int, partition: int) -> int:
    x = (31 * (31 + partition) + topic_hash) & 0xFFFFFFFF
    return x - 0x100000000 if x & 0x80000000 else x


assert topic_partition_hash_fast(string_hash("t"), 3) == topic_partition_hash("t", 3)


class _General:
    """Kafka's GeneralAssignmentBuilder.

    With ``kafka_bugs`` it makes exactly Kafka's moves, including handing a partition back to its
    older-generation owner when that member no longer subscribes to the topic (a later move may take
    it on again, or not: then the result is invalid), and failing where Kafka throws a
    NullPointerException. Without it such owners are skipped, which always gives a valid assignment
    but may take another path than Kafka even where Kafka's own result ends up valid.
    ``foreign`` counts the partitions currently held by a member that does not subscribe to their topic.
    """

    def __init__(self, inp: _Input, owned: dict[str, list[TP]], max_gen: int, kafka_bugs: bool = False) -> None:
        self.inp = inp
        self.kafka_bugs = kafka_bugs
        self.foreign = 0
        ppt = inp.ppt
        self.current: dict[str, list[TP]] = owned
        # members by java rank; (size, rank) is the order of Kafka's sortedCurrentSubscriptions
        self.rank = inp.rank
        self.by_rank: list[str] = sorted(inp.rank, key=inp.rank.__getitem__)
        self.potential: dict[str, frozenset[str]] = {}
        self.topic_consumers: dict[str, list[str]] = {t: [] for t in ppt}
        tc = self.topic_consumers
        for mid in inp.order:
            topics = frozenset(t for t in inp.members[mid].topics if t in ppt)
            for t in topics:
                tc[t].append(mid)
            self.potential[mid] = topics
        trank = inp.topic_rank
        self.sorted_topics = sorted(ppt, key=lambda t: (len(self.topic_consumers[t]), trank[t]))
        self.max_gen = max_gen

    # -- previous owners (older generations) -------------------------------------------------------

    def _prev_assignment(self) -> dict[TP, tuple[str, int]]:
        prev: dict[TP, tuple[str, int]] = {}
        max_gen = self.max_gen
        for mid in self.inp.order:
            m = self.inp.members[mid]
            gen = _Input.generation(m)
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
            racks = self.inp.racks_of(tp)
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
        inp = self.inp
        ppt = inp.ppt
        current = self.current
        prev = self._prev_assignment()
        rack_mode = inp.rack_mode

        # keep owned partitions that are still subscribed (and rack-aligned)
        revocation_required = False
        assigned: set[TP] = set()
        for mid, lst in current.items():
            pot = self.potential[mid]
            keep = []
            for tp in lst:
                if tp[0] not in pot or (rack_mode and inp.mismatch(mid, tp)):
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
            key = (self.potential[mid], inp.consumer_rack.get(mid) if rack_mode else None)
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
        for mid in inp.order:
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

        self.movements = _Movements()
        self.prev = prev
        if not revocation_required:
            self._perform_reassignments(unassigned)
        performed = self._perform_reassignments(sorted_all)

        if not initializing and performed and _balance_score(current) >= _balance_score(pre_assignment):
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
        racks_of = self.inp.racks_of
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
        ppt = self.inp.ppt
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


def _balance_score(assignment: dict[str, list[TP]]) -> int:
    sizes = sorted(len(v) for v in assignment.values())
    n = len(sizes)
    return sum(s * (2 * i - n + 1) for i, s in enumerate(sizes))


# ---------------------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------------------


def sticky_assign(snapshot: GroupSnapshot, prefer_rack_aware_logic: bool = False, kafka_bugs: bool = False
                  ) -> tuple[dict[str, list[TP]], dict[TP, str] | None]:
    """Kafka's AbstractStickyAssignor on ``snapshot``.

    Returns the assignment (every member, in snapshot order) before any cooperative adjustment, and
    the partitions transferring ownership as the constrained builder records them (``None`` when the
    general builder ran: Kafka leaves that map to the cooperative assignor to work out).

    The general builder always follows Kafka's moves first, including Kafka's one known defect: a
    partition goes back to the member that owned it in an older generation even when that member no
    longer subscribes to its topic. Usually a later move takes it on to a subscriber and the result
    is Kafka's, bit for bit. When it stays with the non-subscriber (an invalid assignment), or Kafka
    would fail (that member holds only unmovable partitions: a NullPointerException), the builder
    runs again skipping such owners, which keeps the assignment valid. ``kafka_bugs=True`` returns
    Kafka's outcome instead, invalid or failing.
    """
    if not snapshot.members:
        return {}, {}
    inp = _Input(snapshot, prefer_rack_aware_logic)
    equal, owned, multi, max_gen = inp.reconcile_owned()
    if equal:
        result, transferring = _constrained(inp, owned, multi)
    else:
        transferring = None
        try:
            builder = _General(inp, owned, max_gen, kafka_bugs=True)
            result = builder.build()
            valid = builder.foreign == 0
        except StickyAssignmentError:
            if kafka_bugs:
                raise
            valid = False
        if not valid and not kafka_bugs:
            # the build consumed ``owned``: reconcile again (rare, so cheaper than copying up front)
            _equal, owned, _multi, max_gen = inp.reconcile_owned()
            result = _General(inp, owned, max_gen, kafka_bugs=False).build()
    return {m.member_id: result[m.member_id] for m in snapshot.members}, transferring

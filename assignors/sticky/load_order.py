"""Members ordered by load: the general builder's stand-in for Kafka's
``sortedCurrentSubscriptions``.

Kafka keeps every member in a ``TreeSet`` ordered by (partition count, member id) and, for each
partition, walks it from the least loaded member to the first one subscribed to the partition's
topic. Here members with the same subscription (and, in rack mode, the same rack) form a group with
one heap of ``(count, rank, id)`` entries, ``rank`` being the member id's place in
``String.compareTo`` order. "The least loaded subscriber of topic t" is then the least of a few heap
tops: those of the groups subscribed to t. A count change pushes a new entry; stale ones are dropped
when they surface.

Example: members A (ids rank 0) and B (rank 1) subscribe to t0, C (rank 2) to t0 and t1. That is two
groups, {A, B} for (t0,) and {C} for (t0, t1). With counts A 3, B 1, C 1 the least loaded subscriber
of t0 is the lesser of the tops (1, 1, B) and (1, 2, C): B; of t1, C.

A histogram of the active members' counts says at once when every count is within one of the others,
the usual way the general builder's balance check ends.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable

from assignors.model import TopicPartition

TP = TopicPartition
Entry = tuple[int, int, str]  # (partition count, rank, member id)


class MembersByLoad:
    """Members in (partition count, rank) order, grouped by subscription (and rack)."""

    def __init__(self, rank: dict[str, int], topics: Iterable[str]) -> None:
        self.rank = rank
        self.size: dict[str, int] = {}
        """Member id -> partitions it holds now."""
        self.active: set[str] = set()
        """Members that may still take or give partitions (the fixed ones are set aside)."""
        self.hist: dict[int, int] = {}
        """Partition count -> how many active members hold that many."""
        self.group_of: dict[str, int] = {}
        self.group_rack: list[str | None] = []
        self.heaps: list[list[Entry]] = []
        self.topic_groups: dict[str, list[int]] = {t: [] for t in topics}
        """Topic -> the groups subscribed to it."""

    def add_members(self, members_by_rank: Iterable[str], sizes: dict[str, int],
                    key_of: Callable[[str], tuple[frozenset[str], str | None]]) -> None:
        """Index members (in rank order) by ``key_of``: their topics and their rack (or
        ``None``)."""
        group_index: dict[tuple[frozenset[str], str | None], int] = {}
        self.size = sizes
        self.active = set(sizes)
        for mid in members_by_rank:
            key = key_of(mid)
            g = group_index.get(key)
            if g is None:
                g = group_index[key] = len(self.heaps)
                self.heaps.append([])
                self.group_rack.append(key[1])
                for t in key[0]:
                    self.topic_groups[t].append(g)
            self.group_of[mid] = g
            self.heaps[g].append((sizes[mid], self.rank[mid], mid))
        for h in self.heaps:
            heapq.heapify(h)
        self.recount()

    def recount(self) -> None:
        """Rebuild the histogram of the active members' counts."""
        hist: dict[int, int] = {}
        for mid in self.active:
            s = self.size[mid]
            hist[s] = hist.get(s, 0) + 1
        self.hist = hist

    def set_aside(self, mid: str) -> None:
        """The member takes no further part (Kafka's fixed assignments)."""
        self.active.discard(mid)
        self.hist[self.size[mid]] -= 1

    def counts_within_one(self) -> bool:
        """Every active member holds as many partitions as any other, or one fewer or more."""
        sizes = [s for s, c in self.hist.items() if c > 0]
        return not sizes or min(sizes) >= max(sizes) - 1

    def top(self, g: int) -> Entry | None:
        """The least loaded active member of group ``g``, dropping stale entries on the way."""
        heap = self.heaps[g]
        size = self.size
        active = self.active
        while heap:
            s, _r, mid = heap[0]
            if mid in active and size[mid] == s:
                return heap[0]
            heapq.heappop(heap)
        return None

    def least_loaded(self, topic: str) -> Entry | None:
        """The first member of the (count, id) order subscribed to ``topic``."""
        best = None
        for g in self.topic_groups[topic]:
            top = self.top(g)
            if top is not None and (best is None or top < best):
                best = top
        return best

    def change(self, mid: str, delta: int) -> None:
        """The member's count moves by ``delta``."""
        old = self.size[mid]
        new = old + delta
        self.size[mid] = new
        if mid in self.active:
            hist = self.hist
            hist[old] -= 1
            hist[new] = hist.get(new, 0) + 1
            heapq.heappush(self.heaps[self.group_of[mid]], (new, self.rank[mid], mid))

    def fill(self, partitions: list[TP], current: dict[str, list[TP]], owner: dict[TP, str],
             racks_of: Callable[[TP], frozenset[str]] | None) -> list[TP]:
        """Kafka's maybeAssign: each partition to the first member of the (count, id) order that
        subscribes to its topic (with ``racks_of``: and is not on a rack without a replica). Every
        heap entry is valid while filling, so the chosen member's entry is replaced in place. The
        histogram is not kept up to date (:meth:`recount` afterwards). Returns the partitions no
        member could take."""
        heaps = self.heaps
        size = self.size
        topic_groups = self.topic_groups
        group_rack = self.group_rack
        heapreplace = heapq.heapreplace
        left: list[TP] = []
        for tp in partitions:
            groups = topic_groups[tp[0]]
            best = None
            if racks_of is not None:
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
            s, rank, mid = best[0]
            heapreplace(best, (s + 1, rank, mid))
            size[mid] = s + 1
            current[mid].append(tp)
            owner[tp] = mid
        return left

"""The ``balanced`` assignor: load-, rack- and movement-aware, across all topics of the group.

What it optimises, in this order (lexicographic):

1. every subscribed partition goes to exactly one member subscribed to its topic (hard);
2. the partition-count bound, when ``max_count_skew`` is set: among members with identical
   subscriptions, counts differ by at most ``1 + max_count_skew`` (hard; best effort only when stuck
   partitions pinned to one member make it impossible);
3. the **max member load**, summed over all topics (not per topic). The load of a partition is
   ``lag + produce_rate * horizon_s`` (lag alone without rates or with ``horizon_s = 0``);
4. ``cross_rack_cost * cross-rack partitions + move_cost * partitions moved`` (KIP-925's traffic and
   non-overlap costs; only their ratio matters), spending at most ``load_tolerance`` of the best max
   load found; then the lower max load, then even partition counts, then the least load moved.

Partitions with zero load are spread by count (fewest partitions first, the owner keeping its own up
to its fair share), so a zero-lag group comes out as count-balanced as Kafka's assignors, then
rack-local, then sticky. Loaded partitions go where load says: without ``max_count_skew`` a member
holding one hot partition may get few others.

A partition listed in ``snapshot.stuck`` stays with its current owner when that owner is present and
subscribed: it counts in the owner's load but is never moved for balance's sake (moving it would not
make it progress). A cross-rack partition is one assigned to a member that has a rack while the
partition has replicas with racks, none on the member's rack (KIP-881's ``racksMismatch``, as
:func:`assignors.metrics.cross_rack_partitions` counts it); a member without a rack, or a partition
without replica racks, is never cross-rack.

The algorithm
-------------

*Candidates.* Several starting assignments are built, then each is improved the same way:

- ``preferring``: LPT, heaviest partition first; each goes to the cheapest (cross-rack/move cost) of
  its current owner, the least-loaded same-rack subscriber and the least-loaded subscriber whose load
  stays within ``(1 + load_tolerance) x lower bound``, else to the least-loaded subscriber.
- ``lpt``: plain LPT, no preference (up to ``LARGE`` partitions).
- ``sticky``: every partition stays with its current owner, the others go by ``preferring``'s rule.
  When the current assignment is complete this *is* the current assignment, so the result can never
  have a higher max load than the group has now (up to ``LARGE`` partitions).
- ``sticky-shed``: the same, but every member above ``min((1 + load_tolerance) x best max so far,
  current max)`` first gives up the lightest single partition that covers its excess (else its
  heaviest, and again): few partitions move, and light ones when one suffices.
- for groups of at most ``PEER_SEED_MAX_PARTITIONS`` partitions, the results of ``range``,
  ``roundrobin``, ``lag`` and ``sticky`` (without and with racks), when those modules are installed:
  cheap at that size, and "never worse than the peers" then holds by construction.

With ``max_count_skew``, a member stops taking partitions at its class's ceiling inside the greedy
(one class of subscriptions), and any count still outside its window is fixed in bulk: members above
it give their lightest partitions, which go heaviest first to the least-loaded members below it.

*Balance (local search).* Repeatedly take the member with the highest load and apply the best
single move (one of its partitions to the least-loaded eligible member) or swap (one of its
partitions against a lighter one of another member) that lowers the pair's max, until neither
helps or the lower bound is reached. Moves respect the count bound; swaps keep counts.

*Count balance.* Within each class of identical subscriptions, zero-load partitions move from
members above the class mean to members below it (costly ones first, to their owner or a same-rack
member when possible). No load changes.

*Polish.* ``cap = (1 + load_tolerance) x best max``, lowered to the current assignment's max load
(when complete and within the count bound) and to every peer seed's. Each candidate whose max is
within ``cap`` then gets moves, then swaps, that lower its cross-rack/move cost while every load
stays within ``cap`` and every count within its class's range. The finalist with the lowest (cost,
max load, count skew, load moved) wins; full ties go to the earliest candidate in the list above.

*Size.* Up to ``SMALL`` partitions the search is exhaustive (every member is a swap partner). Above
it, swap partners, iterations and swap searches are bounded by counts (never by time, so the result
stays deterministic), and once one finalist reaches the least cost any assignment can have, the
others are not polished. Above ``LARGE`` only ``preferring`` and ``sticky-shed`` are built.

Ties go by a fixed hash of the member id (CRC-32), not by the member id itself, so the same
low-sorting client id is not always the one that gets the heaviest partition (grantneale #4). Members
are sorted by member id first, so the result does not depend on the order members are listed in.

Worked example
--------------

Topic ``t`` with lags p0=100, p1=60, p2=50, p3=10; topic ``u`` with one partition, lag 40.
``C0`` (rack a) and ``C1`` (rack b) both subscribe to both topics; ``C0`` owns t-0, t-1, t-2 and ``C1``
owns t-3, u-0. Replicas: t-0, t-2 on rack a; t-1, t-3, u-0 on rack b.

Total load 260, so the lower bound is 130. The current assignment has C0 = 210, C1 = 50.

- ``sticky`` starts from it. Local search on C0 (210): the best step swaps t-0 (100) for t-3 (10)
  (120/140; moving t-1 would give 150/110). Then C1 = {t-0, u-0} = 140 can go no lower.
- ``preferring`` (cap 1.02 x 130 = 132.6) places t-0 (100) on its owner C0; t-1 (60): owner C0 would
  reach 160 > cap, so same-rack C1 takes it; t-2 (50): C0 would reach 150 and no same-rack member
  fits, so the least loaded (C1, 110) takes it; u-0 (40): its owner C1 would reach 150, so C0 takes
  it (140); t-3 (10): owner C1 (120). Max 140 too; local search finds nothing better: 140 is optimal
  here ({100, 40} / {60, 50, 10}; no split reaches 130).
- ``sticky-shed`` (target min(1.02 x 140, 210) = 142.8): C0's excess is 67.2, and t-0 (100) is the
  lightest partition that covers it; it goes to C1 (150), and local search ends where ``sticky`` did.
- ``lpt`` and the peers end at 140 or above.

All the finalists reach 140; the cap is 1.02 x 140 = 142.8 and polish finds no move or swap within it. Costs:
``sticky`` leaves t-0, t-1 and t-3 cross-rack and moves two (3 x 10 + 2 = 32); ``preferring`` has
u-0 and t-2 cross-rack and moves three (2 x 10 + 3 = 23), so it wins::

    C0 -> [t-0, u-0]             load 140   (was 210)
    C1 -> [t-1, t-2, t-3]        load 120   (was 50)

grantneale's lag assignor, per topic, gives C0 = {t-0, t-3, u-0} = 150.
"""

from __future__ import annotations

import dataclasses
import heapq
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from assignors.model import Assignment, GroupSnapshot, TopicPartition

NAME = "balanced"

# Up to this many partitions, the peers' own results (range, roundrobin, lag, sticky) are added as
# starting candidates. Above it the local search alone is relied upon (it is also what keeps speed).
PEER_SEED_MAX_PARTITIONS = 2000
# Above this many partitions the search is cut to what keeps 100,000 partitions under a few seconds:
# no plain-LPT candidate, bounded local search and polish (bounded by counts, so still deterministic).
LARGE = 20000
# Up to this many partitions the local search is exhaustive (every member a swap partner).
SMALL = 2000
# (assignor, its options, whether it sees the members' racks): sticky as kafka-python clients run it
# (no client.rack sent) and rack-aware.
_PEER_SEEDS: tuple[tuple[str, dict[str, Any], bool], ...] = (
    ("range", {}, True),
    ("roundrobin", {}, True),
    ("lag", {}, True),
    ("sticky", {}, False),
    ("sticky", {"prefer_rack_aware_logic": True}, True),
)


@dataclass(frozen=True, slots=True)
class BalancedOptions:
    """Settings of the balanced assignor. Every field can also be passed to :func:`assign` as a keyword.

    ``max_count_skew``: bound on the partition-count skew between members with identical
    subscriptions. ``0`` = counts differ by at most one, as balanced as Kafka's assignors; ``k`` =
    they differ by at most ``1 + k``; ``None`` (default) = no hard bound: load decides, and counts
    are then evened out only as far as it costs no max load.

    ``load_tolerance``: fraction above the best max load found that rack locality and stickiness may
    cost (default 0.02, i.e. 2 %). ``0`` = balance strictly first.

    ``cross_rack_cost``, ``move_cost``: relative costs of one cross-rack partition and of one moved
    partition, as KIP-925's ``traffic_cost`` and ``non_overlap_cost``. Only their ratio matters. The
    default 10 : 1 (Kafka Streams' high-availability default) prefers fewer cross-rack reads over
    fewer moves; 1 : 10 (its sticky default) prefers fewer moves.

    ``horizon_s``: seconds of production to add to the lag: load = ``lag + produce_rate *
    horizon_s`` (default 0: lag alone; a topic without rates contributes lag alone).
    """

    max_count_skew: int | None = None
    load_tolerance: float = 0.02
    cross_rack_cost: float = 10.0
    move_cost: float = 1.0
    horizon_s: float = 0.0

    def __post_init__(self) -> None:
        k = self.max_count_skew
        if k is not None and (not isinstance(k, int) or isinstance(k, bool) or k < 0):
            raise ValueError(f"max_count_skew must be None or an integer >= 0, got {k!r}")
        for name in ("load_tolerance", "cross_rack_cost", "move_cost", "horizon_s"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | float) or not np.isfinite(v) or v < 0:
                raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")

    @classmethod
    def of(cls, options: BalancedOptions | None = None, **kwargs: Any) -> BalancedOptions:
        base = options if options is not None else cls()
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(kwargs) - known)
        if unknown:
            raise TypeError(f"unknown option(s) for the balanced assignor: {', '.join(unknown)}; "
                            f"it takes {', '.join(sorted(known))}")
        return dataclasses.replace(base, **kwargs) if kwargs else base


def assign(snapshot: GroupSnapshot, options: BalancedOptions | None = None, **kwargs: Any) -> Assignment:
    """Assign ``snapshot``'s partitions; see the module docstring. Options as :class:`BalancedOptions`."""
    opts = BalancedOptions.of(options, **kwargs)
    problem = _Problem(snapshot, opts)
    return problem.solve()


# ---------------------------------------------------------------------------------------------------
# Internals


def _tiebreak(member_id: str) -> int:
    """A fixed, platform-independent hash: fair but stable tie-breaking between members."""
    return zlib.crc32(member_id.encode("utf-8"))


class _State:
    """One assignment under construction: owner per partition, load and count per member."""

    __slots__ = ("a", "count", "load", "name", "parts")

    def __init__(self, name: str, n_members: int, n_parts: int) -> None:
        self.name = name
        self.a = np.full(n_parts, -1, dtype=np.int64)
        self.load = np.zeros(n_members, dtype=np.float64)
        self.count = np.zeros(n_members, dtype=np.int64)
        self.parts: list[set[int]] = [set() for _ in range(n_members)]

    def put(self, p: int, m: int, w: float) -> None:
        self.a[p] = m
        self.load[m] += w
        self.count[m] += 1
        self.parts[m].add(p)

    def move(self, p: int, b: int, w: float) -> None:
        a = int(self.a[p])
        self.parts[a].discard(p)
        self.load[a] -= w
        self.count[a] -= 1
        self.put(p, b, w)

    def copy(self, name: str) -> _State:
        s = _State.__new__(_State)
        s.name = name
        s.a = self.a.copy()
        s.load = self.load.copy()
        s.count = self.count.copy()
        s.parts = [set(x) for x in self.parts]
        return s


class _Problem:
    def __init__(self, snapshot: GroupSnapshot, opts: BalancedOptions) -> None:
        self.snapshot = snapshot
        self.opts = opts
        members = sorted(snapshot.members, key=lambda m: m.member_id)
        self.members = members
        n_m = len(members)
        self.n_m = n_m
        midx = {m.member_id: i for i, m in enumerate(members)}
        self.hash = np.array([_tiebreak(m.member_id) for m in members], dtype=np.int64)

        # Topics: those in the metadata that someone subscribes to, in metadata order.
        wanted = {t for m in members for t in m.topics}
        topics = [t for t in snapshot.topics if t in wanted]
        self.topics = topics
        tidx = {t: i for i, t in enumerate(topics)}
        n_t = len(topics)
        sub = np.zeros((n_m, max(n_t, 1)), dtype=bool)
        for i, m in enumerate(members):
            for t in m.topics:
                j = tidx.get(t)
                if j is not None:
                    sub[i, j] = True
        self.sub = sub

        # Partitions, topic by topic.
        counts = [snapshot.topics[t] for t in topics]
        n_p = int(sum(counts))
        self.n_p = n_p
        self.offset = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)]).astype(np.int64)
        ptopic = np.repeat(np.arange(n_t, dtype=np.int64), counts) if n_t else np.zeros(0, np.int64)
        self.ptopic = ptopic
        w = np.zeros(n_p, dtype=np.float64)
        for j, t in enumerate(topics):
            lo, hi = int(self.offset[j]), int(self.offset[j + 1])
            if hi == lo:
                continue
            lag = snapshot.lag.get(t)
            if lag is not None:
                w[lo:hi] = np.asarray(lag, dtype=np.float64)
            rate = snapshot.produce_rate.get(t)
            if rate is not None and opts.horizon_s > 0:
                w[lo:hi] += np.asarray(rate, dtype=np.float64) * opts.horizon_s
        w = np.where(np.isfinite(w) & (w > 0), w, 0.0)
        self.w = w
        self.wl = w.tolist()

        # Eligibility groups: topics with the same subscriber set share one group.
        group_of_key: dict[bytes, int] = {}
        tgroup = np.zeros(n_t, dtype=np.int64)
        self.groups: list[np.ndarray] = []
        for j in range(n_t):
            key = np.packbits(sub[:, j]).tobytes()
            g = group_of_key.get(key)
            if g is None:
                g = len(self.groups)
                group_of_key[key] = g
                self.groups.append(np.flatnonzero(sub[:, j]))
            tgroup[j] = g
        self.pgroup = tgroup[ptopic] if n_p else np.zeros(0, np.int64)
        self.member_groups = self._member_groups()

        # Classes of identical subscriptions (the count bound applies within a class).
        cls_of_key: dict[bytes, int] = {}
        self.mclass = np.zeros(n_m, dtype=np.int64)
        for i in range(n_m):
            key = np.packbits(sub[i]).tobytes()
            self.mclass[i] = cls_of_key.setdefault(key, len(cls_of_key))
        self.n_cls = len(cls_of_key)
        self.class_members = [np.flatnonzero(self.mclass == c) for c in range(self.n_cls)]

        # Racks: member rack index (-1 = none); local[p, r] = partition p has a replica on member rack r.
        racks = sorted({m.rack for m in members if m.rack})
        ridx = {r: i for i, r in enumerate(racks)}
        self.mrack = np.array([ridx.get(m.rack, -1) if m.rack else -1 for m in members], dtype=np.int64)
        self.n_racks = len(racks)
        self.local = np.zeros((n_p, max(len(racks), 1)), dtype=bool)
        self.has_racks = np.zeros(n_p, dtype=bool)
        if racks and snapshot.replica_racks is not None:
            for j, t in enumerate(topics):
                rr = snapshot.replica_racks.get(t)
                if rr is None:
                    continue
                base = int(self.offset[j])
                for p, reps in enumerate(rr):
                    any_rack = False
                    for r in reps:
                        if r is not None:
                            any_rack = True
                            k = ridx.get(r)
                            if k is not None:
                                self.local[base + p, k] = True
                    if any_rack:
                        self.has_racks[base + p] = True
        self.rack_aware = bool(racks) and bool(self.has_racks.any())
        self.mrack_l = self.mrack.tolist()
        # localmask[p]: bit r = a replica on member rack r; bit n_racks = p has replica racks at all
        # (0 = no racks: never cross-rack).
        if self.rack_aware and len(racks) < 62:
            bits = (self.local[:, : len(racks)].astype(np.int64) << np.arange(len(racks), dtype=np.int64)).sum(1)
            self.localmask = np.where(self.has_racks, bits | (1 << len(racks)), 0).tolist()
        elif self.rack_aware:
            self.localmask = [
                (sum(1 << r for r in np.flatnonzero(self.local[p]).tolist()) | (1 << len(racks)))
                if self.has_racks[p] else 0
                for p in range(n_p)
            ]
        else:
            self.localmask = [0] * n_p

        # Current owners: highest generation wins a partition claimed twice (as Kafka's sticky does).
        owner = np.full(n_p, -1, dtype=np.int64)
        owner_gen = np.full(n_p, -(2**62), dtype=np.int64)
        for i, m in enumerate(members):
            gen = m.generation if m.generation is not None else -1
            for t, p in m.owned:
                j = tidx.get(t)
                if j is None or not (0 <= p < counts[j]) or not sub[i, j]:
                    continue
                q = int(self.offset[j]) + p
                if gen > owner_gen[q]:
                    owner[q] = i
                    owner_gen[q] = gen
        self.owner = owner
        # Is the current assignment complete and valid (every partition owned exactly once)?
        claims = np.zeros(n_p, dtype=np.int64)
        for i, m in enumerate(members):
            for t, p in m.owned:
                j = tidx.get(t)
                if j is not None and 0 <= p < counts[j]:
                    claims[int(self.offset[j]) + p] += 1 if sub[i, j] else 2
        owned_elsewhere = any(
            tidx.get(t) is None or not (0 <= p < counts[tidx[t]]) for m in members for t, p in m.owned
        )
        self.current_valid = n_p > 0 and bool((claims == 1).all()) and not owned_elsewhere

        pinned = np.zeros(n_p, dtype=bool)
        for t, p in snapshot.stuck:
            j = tidx.get(t)
            if j is not None and 0 <= p < counts[j]:
                q = int(self.offset[j]) + p
                if owner[q] >= 0:
                    pinned[q] = True
        self.pinned = pinned
        self.owner_l = owner.tolist()
        self.pgroup_l = self.pgroup.tolist()
        _ = midx

        # Cost of each partition on each member is cross_rack_cost * cross + move_cost * moved.
        self.ccost = float(opts.cross_rack_cost)
        self.mcost = float(opts.move_cost)
        self.lb = self._lower_bound()

    def _member_groups(self) -> list[list[int]]:
        out: list[list[int]] = [[] for _ in range(self.n_m)]
        for g, ms in enumerate(self.groups):
            for i in ms.tolist():
                out[i].append(g)
        return out

    # -- bounds and costs ---------------------------------------------------------------------------

    def _lower_bound(self) -> float:
        """A valid lower bound of the max member load (used to stop the search early)."""
        w, n_m = self.w, self.n_m
        if self.n_p == 0 or n_m == 0:
            return 0.0
        lb = float(w.max())
        pinned_load = np.zeros(n_m)
        if self.pinned.any():
            np.add.at(pinned_load, self.owner[self.pinned], w[self.pinned])
            lb = max(lb, float(pinned_load.max()))
        # Partitions of group g can only go to g's members.
        gl = np.bincount(self.pgroup, weights=w, minlength=len(self.groups))
        for g, ms in enumerate(self.groups):
            lb = max(lb, float(gl[g]) / len(ms))
            # Among the |g|+1 heaviest partitions only g's members can take, two share a member.
        if len(self.groups) == 1:
            k = len(self.groups[0])
            if self.n_p > k:
                top = np.sort(w)[::-1]
                lb = max(lb, float(top[k - 1] + top[k]))
        return lb

    def cross(self, p: int, m: int) -> bool:
        r = self.mrack[m]
        return bool(r >= 0 and self.has_racks[p] and not self.local[p, r])

    def cost(self, p: int, m: int) -> float:
        c = 0.0
        if self.rack_aware and self.cross(p, m):
            c += self.ccost
        o = self.owner[p]
        if o >= 0 and o != m:
            c += self.mcost
        return c

    def costs_vec(self, ps: np.ndarray, m: int) -> np.ndarray:
        c = np.zeros(len(ps))
        if self.rack_aware and self.mrack[m] >= 0:
            c += self.ccost * (self.has_racks[ps] & ~self.local[ps, self.mrack[m]])
        o = self.owner[ps]
        c += self.mcost * ((o >= 0) & (o != m))
        return c

    def total_cost(self, st: _State) -> float:
        a = st.a
        c = 0.0
        if self.rack_aware:
            r = self.mrack[a]
            cross = (r >= 0) & self.has_racks & ~self.local[np.arange(self.n_p), np.maximum(r, 0)]
            c += self.ccost * float(cross.sum())
        moved = (self.owner >= 0) & (self.owner != a)
        c += self.mcost * float(moved.sum())
        return c

    def load_moved(self, st: _State) -> float:
        moved = (self.owner >= 0) & (self.owner != st.a)
        return float(self.w[moved].sum())

    # -- solve --------------------------------------------------------------------------------------

    def solve(self) -> Assignment:
        if self.n_m == 0:
            return {}
        if self.n_p == 0:
            return self._output(None)
        tol = self.opts.load_tolerance
        large = self.n_p > LARGE
        cands = [self._greedy("preferring", sticky=False, cap=(1 + tol) * self.lb, prefer=True)]
        if not large:
            cands.append(self._greedy("lpt", sticky=False, cap=0.0, prefer=False))
        peer_max = np.inf
        if self.n_p <= PEER_SEED_MAX_PARTITIONS:
            for st in self._peer_seeds():
                if not self.pinned_moved(st) and self.count_ok(st):
                    peer_max = min(peer_max, float(st.load.max()))
                cands.append(st)
        windows = [self._windows(st) for st in cands]
        for st, win in zip(cands, windows, strict=True):
            self._enforce_count_bound(st, win)
            self._balance(st, win)
        best = min(float(st.load.max()) for st in cands)

        # The current assignment, completed: kept as is (when small), and shed down to the cap.
        sticky = self._greedy("sticky", sticky=True, cap=np.inf, prefer=True)
        current_max = np.inf
        if self.current_valid and self.count_ok(sticky):
            current_max = float(sticky.load.max())
        shed = sticky.copy("sticky-shed")
        self._shed(shed, min((1 + tol) * best, current_max))
        extra = [shed] if large else [sticky, shed]
        for st in extra:
            win = self._windows(st)
            self._enforce_count_bound(st, win)
            self._balance(st, win)
            cands.append(st)
            windows.append(win)
        best = min(best, *(float(st.load.max()) for st in extra))
        cap = min((1 + tol) * best, max(current_max, best), max(peer_max, best))

        finalists = []
        seen: set[bytes] = set()
        floor = float(self._achievable_cost().sum())  # no assignment costs less
        for st, win in zip(cands, windows, strict=True):
            if float(st.load.max()) > cap * (1 + 1e-12):
                continue
            key = st.a.tobytes()
            if key in seen:
                continue
            seen.add(key)
            self._count_balance(st)
            if self.n_p > SMALL and any(self.total_cost(f) <= floor + 1e-9 for f in finalists):
                # One finalist already has the least possible cost: at this size, polishing the
                # others could only win a tie-break, for seconds of work.
                finalists.append(st)
                continue
            self._polish(st, win, cap)
            finalists.append(st)
        chosen = min(finalists, key=self._final_key)
        return self._output(chosen)

    def _shed(self, st: _State, target: float) -> None:
        """Bring every member down to ``target`` with few moves, then place what was taken off.

        A member above target gives up the lightest single partition that covers its excess, else
        its heaviest one, and repeats (few partitions moved, the light ones when one suffices). The
        partitions taken off go, heaviest first, to the cheapest member (owner, same rack) that stays
        within target, else to the least loaded (local search then takes over).
        """
        if not np.isfinite(target):
            return
        limit = target * (1 + 1e-12)
        over = np.flatnonzero(st.load > limit)
        if len(over) == 0:
            return
        taken: list[int] = []
        for m in over.tolist():
            ps = np.fromiter((p for p in st.parts[m] if not self.pinned[p]), dtype=np.int64)
            if len(ps) == 0:
                continue
            ps.sort()
            ws = self.w[ps]
            o = np.lexsort((ps, ws))
            ps, ws = ps[o], ws[o]
            alive = np.ones(len(ps), dtype=bool)
            excess = float(st.load[m]) - target
            while excess > target * 1e-12 and alive.any():
                cover = np.flatnonzero(alive & (ws >= excess))
                i = int(cover[0]) if len(cover) else int(np.flatnonzero(alive)[-1])
                alive[i] = False
                excess -= float(ws[i])
            for p in ps[~alive].tolist():
                m_ = int(st.a[p])
                st.parts[m_].discard(p)
                st.load[m_] -= self.wl[p]
                st.count[m_] -= 1
                st.a[p] = -1
                taken.append(p)
        taken.sort(key=lambda p: (-self.wl[p], p))
        pos = [p for p in taken if self.wl[p] > 0]
        zero = [p for p in taken if self.wl[p] <= 0]
        full = self._count_caps()
        self._lpt(st, pos, target, True, by_count=False, full=full)
        self._lpt(st, zero, target, True, by_count=True, full=full)

    def _final_key(self, st: _State) -> tuple:
        # Full ties go to the earliest candidate (min is stable): ``preferring``, whose ties follow
        # the member hash, comes before the peers, whose ties follow member ids.
        return (round(self.total_cost(st), 9), float(st.load.max()), self.count_excess(st),
                self.load_moved(st))

    def pinned_moved(self, st: _State) -> bool:
        return bool((st.a[self.pinned] != self.owner[self.pinned]).any())

    def count_ok(self, st: _State) -> bool:
        k = self.opts.max_count_skew
        if k is None:
            return True
        for ms in self.class_members:
            c = st.count[ms]
            if int(c.max() - c.min()) > 1 + k:
                return False
        return True

    def count_excess(self, st: _State) -> int:
        ex = 0
        for ms in self.class_members:
            c = st.count[ms]
            ex += max(0, int(c.max() - c.min()) - 1)
        return ex

    def _output(self, st: _State | None) -> Assignment:
        out: Assignment = {m.member_id: [] for m in self.snapshot.members}
        if st is None:
            return out
        for i, m in enumerate(self.members):
            ps = sorted(st.parts[i])
            lst = out[m.member_id]
            for p in ps:
                j = int(self.ptopic[p])
                lst.append((self.topics[j], p - int(self.offset[j])))
        return out

    # -- candidates -----------------------------------------------------------------------------------

    def _greedy(self, name: str, *, sticky: bool, cap: float, prefer: bool) -> _State:
        """LPT over the loaded partitions, then fewest-partitions-first over the zero-load ones.

        ``sticky``: every owned partition stays with its owner (the current assignment, completed).
        ``prefer``: among the owner, the least-loaded same-rack subscriber and the least-loaded
        subscriber, the cheapest (cross-rack/move cost) whose load stays within ``cap`` takes the
        partition; the least-loaded subscriber when none fits.
        """
        st = _State(name, self.n_m, self.n_p)
        keep = self.pinned | (self.owner >= 0) if sticky else self.pinned
        kept = np.flatnonzero(keep)
        if len(kept):
            m = self.owner[kept]
            st.a[kept] = m
            st.load[:] = np.bincount(m, weights=self.w[kept], minlength=self.n_m)
            st.count[:] = np.bincount(m, minlength=self.n_m)
            for p, mm in zip(kept.tolist(), m.tolist(), strict=True):
                st.parts[mm].add(p)
        order = np.flatnonzero(~keep)
        order = order[np.argsort(-self.w[order], kind="stable")]
        positive = order[self.w[order] > 0]
        zero = order[self.w[order] <= 0]
        if prefer and len(zero):
            # Zero-load partitions can go in any order: first those whose owner is a free (same-rack)
            # home, so they keep it, then those that must leave a cross-rack owner, then the unowned.
            o = self.owner[zero]
            at_owner = np.where(o >= 0, self.costs_of_owner()[zero], np.inf)
            rank = np.where(at_owner <= 0, 0, np.where(np.isfinite(at_owner), 1, 2))
            zero = zero[np.argsort(rank, kind="stable")]
        full = self._count_caps()
        self._lpt(st, positive.tolist(), cap, prefer, by_count=False, full=full)
        self._lpt(st, zero.tolist(), cap, prefer, by_count=True, full=full)
        return st

    def costs_of_owner(self) -> np.ndarray:
        """Cost of every partition at its current owner (0 for an unowned one)."""
        st = _State.__new__(_State)
        st.a = np.maximum(self.owner, 0)
        return np.where(self.owner >= 0, self.costs_of(st), 0.0)

    def _count_caps(self) -> list[int] | None:
        """With a count bound and one class of subscriptions, the most partitions a member may get."""
        k = self.opts.max_count_skew
        if k is None or self.n_cls != 1:
            return None
        ceil = -(-self.n_p // self.n_m)
        return [ceil + k - k // 2] * self.n_m

    def _lpt(self, st: _State, order: list[int], cap: float, prefer: bool, by_count: bool,
             full: list[int] | None = None) -> None:
        """Place ``order`` one by one (see :meth:`_greedy`); a member holding ``full[m]`` partitions
        takes no more (unless it is the only subscriber left)."""
        if not order:
            return
        w = self.wl
        owner = self.owner_l
        hashes = self.hash.tolist()
        load = st.load.tolist()
        count = st.count.tolist()
        mrack = self.mrack_l
        localmask = self.localmask
        cc, mc = self.ccost, self.mcost
        rack = prefer and self.rack_aware
        quota = -(-self.n_p // self.n_m) if self.n_cls == 1 else 0

        # Keys only grow while partitions are added, so a heap entry is never above its member's
        # true key: at the top, a stale entry is replaced by the true key and the top looked at
        # again. No update has to visit the other heaps the member is in.
        if by_count:
            def key(m: int) -> tuple:
                return (count[m], load[m], hashes[m], m)
        else:
            def key(m: int) -> tuple:
                return (load[m], count[m], hashes[m], m)

        # With many overlapping subscriber sets (heterogeneous subscriptions) the heaps go stale
        # too often; a vectorised argmin over the set (ordered by tie-break hash) is cheaper then.
        use_np = sum(len(ms) for ms in self.groups) > 4 * self.n_m + 64
        pools: list = []
        rpools: dict[tuple[int, int], Any] = {}
        if use_np:
            vals = np.array(count if by_count else load, dtype=np.float64)

            def arrange(ms: np.ndarray) -> np.ndarray:
                return ms[np.lexsort((ms, self.hash[ms]))]

            pools = [arrange(ms) for ms in self.groups]
            if rack:
                mr = self.mrack
                for g, ms in enumerate(self.groups):
                    for r in np.unique(mr[ms]).tolist():
                        if r >= 0:
                            rpools[(g, r)] = arrange(ms[mr[ms] == r])

            def top(pool: np.ndarray) -> int:
                return int(pool[np.argmin(vals[pool])])

            def retire(m: int) -> None:
                vals[m] = np.inf
        else:
            pools = [[key(m) for m in ms.tolist()] for ms in self.groups]
            for h in pools:
                heapq.heapify(h)
            if rack:
                for g, ms in enumerate(self.groups):
                    for m in ms.tolist():
                        r = mrack[m]
                        if r >= 0:
                            rpools.setdefault((g, r), []).append(key(m))
                for h in rpools.values():
                    heapq.heapify(h)

            def top(pool: list[tuple]) -> int:
                while True:
                    e = pool[0]
                    m = e[-1]
                    if full is not None and count[m] >= full[m] and len(pool) > 1:
                        heapq.heappop(pool)  # full for good: counts only grow here
                        continue
                    k = key(m)
                    if e == k:
                        return m
                    heapq.heapreplace(pool, k)

            def retire(m: int) -> None:
                pass

        racks_of_group = [[r for r in range(self.n_racks) if (g, r) in rpools] for g in range(len(self.groups))]

        def cost(p: int, m: int) -> float:
            c = 0.0
            r = mrack[m]
            if r >= 0 and localmask[p] and not (localmask[p] >> r) & 1:
                c = cc
            o = owner[p]
            if o >= 0 and o != m:
                c += mc
            return c

        pg = self.pgroup_l
        for p in order:
            wp = w[p]
            g = pg[p]
            m = top(pools[g])
            if prefer:
                c_m = cost(p, m)
                if c_m > 0:
                    if by_count:
                        # Up to the fair share (one class), or as few as the emptiest member.
                        limit = max(count[m], quota - 1)
                        cur = count
                    else:
                        limit = cap - wp
                        cur = load
                    best_k = (c_m, key(m))
                    o = owner[p]
                    if o >= 0 and o != m and cur[o] <= limit and (full is None or count[o] < full[o]):
                        k = (cost(p, o), key(o))
                        if k < best_k:
                            best_k, m2 = k, o
                            m = m2
                    if rack and localmask[p]:
                        lm = localmask[p]
                        for r in racks_of_group[g]:
                            if (lm >> r) & 1:
                                c = top(rpools[(g, r)])
                                if c != m and cur[c] <= limit and (full is None or count[c] < full[c]):
                                    k = (cost(p, c), key(c))
                                    if k < best_k:
                                        best_k = k
                                        m = c
            load[m] += wp
            count[m] += 1
            if use_np:
                vals[m] = count[m] if by_count else load[m]
                if full is not None and count[m] >= full[m]:
                    retire(m)
            st.a[p] = m
            st.parts[m].add(p)
        st.load[:] = load
        st.count[:] = count

    def _peer_seeds(self) -> Iterable[_State]:
        from assignors import registry

        available = set(registry.names())
        canonical = dataclasses.replace(self.snapshot, members=tuple(self.members))
        rackless = dataclasses.replace(
            canonical, members=tuple(dataclasses.replace(m, rack=None) for m in self.members))
        tidx = {t: j for j, t in enumerate(self.topics)}
        for name, kw, racks in _PEER_SEEDS:
            if name not in available:
                continue
            try:
                result = registry.get(name)(canonical if racks else rackless, **kw)
            except Exception:  # a peer that fails is only a missing seed
                continue
            st = self._from_assignment(f"{name}{'-rack' if kw else ''}", result, tidx)
            if st is not None:
                yield st

    def _from_assignment(self, name: str, result: Mapping[str, list[TopicPartition]],
                         tidx: Mapping[str, int]) -> _State | None:
        st = _State(name, self.n_m, self.n_p)
        midx = {m.member_id: i for i, m in enumerate(self.members)}
        for mid, tps in result.items():
            i = midx.get(mid)
            if i is None:
                return None
            for t, p in tps:
                j = tidx.get(t)
                if j is None or not (0 <= p < self.snapshot.topics[t]) or not self.sub[i, j]:
                    return None
                q = int(self.offset[j]) + p
                if st.a[q] >= 0:
                    return None
                st.put(q, i, self.wl[q])
        if (st.a < 0).any():
            return None
        # A stuck partition goes back to its owner, whatever the peer did.
        for p in np.flatnonzero(self.pinned & (st.a != self.owner)).tolist():
            st.move(p, int(self.owner[p]), self.wl[p])
        return st

    # -- count bound ----------------------------------------------------------------------------------

    def _windows(self, st: _State) -> tuple[np.ndarray, np.ndarray]:
        """Per-member count range [lo, hi] that moves must respect (from the hard bound, if any)."""
        lo = np.zeros(self.n_m, dtype=np.int64)
        hi = np.full(self.n_m, np.iinfo(np.int64).max // 4, dtype=np.int64)
        k = self.opts.max_count_skew
        if k is None:
            return lo, hi
        pinned_count = np.bincount(self.owner[self.pinned], minlength=self.n_m) if self.pinned.any() \
            else np.zeros(self.n_m, dtype=np.int64)
        for ms in self.class_members:
            total = int(st.count[ms].sum())
            n = len(ms)
            floor = total // n
            ceil = -(-total // n)
            c_lo = floor - (k // 2)
            c_hi = max(ceil + k - (k // 2), int(pinned_count[ms].max()))
            c_lo = max(0, min(c_lo, c_hi - 1 - k))
            lo[ms] = c_lo
            hi[ms] = c_hi
        return lo, hi

    def _enforce_count_bound(self, st: _State, win: tuple[np.ndarray, np.ndarray]) -> None:
        """Bring every count into its window: members above it give their lightest partitions, which
        go heaviest first to the least-loaded member below it (or with room, when none is below)."""
        if self.opts.max_count_skew is None:
            return
        lo, hi = win
        for ms in self.class_members:
            c = st.count[ms]
            l_, h_ = lo[ms], hi[ms]
            if bool(((c <= h_) & (c >= l_)).all()):
                continue
            give = np.maximum(c - h_, 0)
            take = np.maximum(l_ - c, 0)
            e, d = int(give.sum()), int(take.sum())
            if e > d:  # more to give than to fill: the emptiest members with room take the rest
                room = np.where(give > 0, 0, h_ - c - take)
                for i in np.lexsort((self.hash[ms], st.load[ms], c)).tolist():
                    if e == d:
                        break
                    extra = min(int(room[i]), e - d)
                    take[i] += extra
                    d += extra
            elif d > e:  # more to fill than to give: the fullest members with spare give the rest
                spare = np.where(take > 0, 0, c - l_ - give)
                for i in np.lexsort((self.hash[ms], -st.load[ms], -c)).tolist():
                    if e == d:
                        break
                    extra = min(int(spare[i]), d - e)
                    give[i] += extra
                    e += extra
            moving: list[int] = []
            for i in np.flatnonzero(give).tolist():
                m = int(ms[i])
                ps = np.fromiter((p for p in st.parts[m] if not self.pinned[p]), dtype=np.int64)
                ps.sort()
                ps = ps[np.argsort(self.w[ps], kind="stable")][: int(give[i])]
                moving += ps.tolist()
            heap = [(float(st.load[int(ms[i])]), int(self.hash[int(ms[i])]), int(ms[i]), int(take[i]))
                    for i in np.flatnonzero(take).tolist()]
            heapq.heapify(heap)
            moving.sort(key=lambda p: (-self.wl[p], p))
            for p in moving:
                if not heap:
                    break
                load, h, m, left = heapq.heappop(heap)
                st.move(p, m, self.wl[p])
                if left > 1:
                    heapq.heappush(heap, (load + self.wl[p], h, m, left - 1))

    # -- balance: local search on the max member -----------------------------------------------------

    def _balance(self, st: _State, win: tuple[np.ndarray, np.ndarray]) -> None:
        lo, hi = win
        w = self.w
        ptopic = self.ptopic
        sub = self.sub
        lb = self.lb
        n_m = self.n_m
        small = self.n_p <= SMALL
        max_iter = 50 + 4 * self.n_p if small else min(4 * self.n_p, 1500)
        partner_limit = n_m if small else 12
        for _ in range(max_iter):
            load = st.load
            order = np.lexsort((self.hash, -load))
            a = int(order[0])
            la = float(load[a])
            if la <= lb * (1 + 1e-12) or la <= 0:
                return
            eps = la * 1e-12
            pa = np.fromiter((p for p in st.parts[a] if not self.pinned[p]), dtype=np.int64)
            if len(pa) == 0:
                return
            pa.sort()
            best_val = la - eps
            best: tuple | None = None
            wa = w[pa]
            # Moves: each of a's partitions to the least-loaded eligible member of its group.
            if st.count[a] - 1 >= lo[a]:
                ga = self.pgroup[pa]
                for g in np.unique(ga).tolist():
                    ms = self.groups[g]
                    ms = ms[(ms != a) & (st.count[ms] + 1 <= hi[ms])]
                    if len(ms) == 0:
                        continue
                    lm = load[ms]
                    b = int(ms[np.lexsort((self.hash[ms], lm))[0]])
                    lb_ = float(load[b])
                    sel = ga == g
                    cand_w = wa[sel]
                    vals = np.maximum(la - cand_w, lb_ + cand_w)
                    i = int(np.argmin(vals))
                    if vals[i] < best_val:
                        best_val = float(vals[i])
                        best = ("move", int(pa[sel][i]), b)
            # Swaps: one of a's partitions against a lighter one of b's (unless a move already brings
            # a down to the next member's load).
            if best is not None and best_val <= max(float(load[order[1]]) if n_m > 1 else 0.0, lb):
                partners = order[:0]
            else:
                partners = order[1:][load[order[1:]] < la - eps][::-1][:partner_limit]
            pa_topic = ptopic[pa]
            for b in partners.tolist():
                lb_ = float(load[b])
                gap = la - lb_
                if gap / 2 + lb_ >= best_val:
                    break  # partners come lightest first; no later one can do better
                ok_a = sub[b, pa_topic]
                if not ok_a.any():
                    continue
                pb = np.fromiter((p for p in st.parts[b] if not self.pinned[p]), dtype=np.int64)
                if len(pb) == 0:
                    continue
                pb = pb[sub[a, ptopic[pb]]]
                if len(pb) == 0:
                    continue
                pb.sort()
                wb = w[pb]
                ob = np.argsort(wb, kind="stable")
                wbs = wb[ob]
                pas = pa[ok_a]
                was = wa[ok_a]
                # For each p, the q whose weight is closest to w_p - gap/2 (and lighter than w_p).
                target = was - gap / 2
                idx = np.searchsorted(wbs, target)
                for off in (0, -1):
                    j = np.clip(idx + off, 0, len(wbs) - 1)
                    d = was - wbs[j]
                    valid = (d > 0) & (d < gap)
                    if not valid.any():
                        continue
                    vals = np.where(valid, np.maximum(la - d, lb_ + d), np.inf)
                    i = int(np.argmin(vals))
                    if vals[i] < best_val:
                        best_val = float(vals[i])
                        best = ("swap", int(pas[i]), b, int(pb[ob[j[i]]]))
            if best is None:
                return
            if best[0] == "move":
                st.move(best[1], best[2], self.wl[best[1]])
            else:
                _, p, b, q = best
                st.move(p, b, self.wl[p])
                st.move(q, a, self.wl[q])

    # -- count balance ---------------------------------------------------------------------------------

    def _count_balance(self, st: _State) -> None:
        """Even out counts within each class of identical subscriptions with zero-load partitions.

        Moving a partition without load changes no load, so this costs no balance. Targets: the
        members holding most keep ``ceil``, the others ``floor`` of the class mean; the cheapest
        partitions to move (already cross-rack or moved ones first) go preferably to their owner,
        else to a same-rack member short of its target.
        """
        free = (self.w <= 0) & ~self.pinned
        if not free.any():
            return
        for ms in self.class_members:
            if len(ms) < 2:
                continue
            c = st.count[ms]
            if int(c.max() - c.min()) <= 1:
                continue
            n, total = len(ms), int(c.sum())
            base, extra = divmod(total, n)
            order = np.lexsort((self.hash[ms], -c))
            target = np.full(n, base, dtype=np.int64)
            target[order[:extra]] += 1
            deficit: dict[int, int] = {}
            shed: list[int] = []
            for i in order.tolist():
                m = int(ms[i])
                d = int(target[i] - c[i])
                if d > 0:
                    deficit[m] = d
                elif d < 0:
                    ps = np.fromiter((p for p in st.parts[m] if free[p]), dtype=np.int64)
                    if len(ps) == 0:
                        continue
                    ps.sort()
                    cst = self.costs_vec(ps, m)
                    ps = ps[np.lexsort((ps, -cst))][: -d]
                    shed.extend(ps.tolist())
            if not deficit or not shed:
                continue
            receivers = sorted(deficit, key=lambda m: (int(self.hash[m]), m))
            by_rack: dict[int, list[int]] = {}
            for m in receivers:
                by_rack.setdefault(self.mrack_l[m], []).append(m)
            pos: dict[int, int] = dict.fromkeys(by_rack, 0)
            any_pos = 0

            def take(pool: list[int], key: int, pos: dict[int, int] = pos,
                     deficit: dict[int, int] = deficit) -> int:
                i = pos[key]
                while i < len(pool) and deficit[pool[i]] <= 0:
                    i += 1
                pos[key] = i
                return pool[i] if i < len(pool) else -1

            for p in shed:
                b = -1
                o = self.owner_l[p]
                if o >= 0 and deficit.get(o, 0) > 0:
                    b = o
                lm = self.localmask[p]
                if b < 0 and lm:
                    for r, pool in by_rack.items():
                        if r >= 0 and (lm >> r) & 1:
                            b = take(pool, r)
                            if b >= 0:
                                break
                if b < 0:
                    while any_pos < len(receivers) and deficit[receivers[any_pos]] <= 0:
                        any_pos += 1
                    if any_pos == len(receivers):
                        break
                    b = receivers[any_pos]
                deficit[b] -= 1
                st.move(p, b, 0.0)

    # -- polish: racks and stickiness within the cap ---------------------------------------------------

    def _achievable_cost(self) -> np.ndarray:
        """Per partition, the lowest cost any subscriber could give it (to skip hopeless ones)."""
        n_p = self.n_p
        owner = self.owner
        has_owner = owner >= 0
        c_owner = np.full(n_p, np.inf)
        if self.rack_aware:
            ro = self.mrack[np.maximum(owner, 0)]
            cross_o = (ro >= 0) & self.has_racks & ~self.local[np.arange(n_p), np.maximum(ro, 0)]
        else:
            cross_o = np.zeros(n_p, dtype=bool)
        c_owner[has_owner] = self.ccost * cross_o[has_owner]
        n_g = len(self.groups)
        size = np.array([len(g) for g in self.groups], dtype=np.int64)[self.pgroup]
        if self.rack_aware:
            n_gr = np.zeros((n_g, self.n_racks), dtype=np.int64)
            n_norack = np.zeros(n_g, dtype=np.int64)
            for g, ms in enumerate(self.groups):
                r = self.mrack[ms]
                n_norack[g] = int((r < 0).sum())
                n_gr[g] = np.bincount(r[r >= 0], minlength=self.n_racks)
            n_local = (self.local[:, : self.n_racks] * n_gr[self.pgroup]).sum(1) + n_norack[self.pgroup]
            n_local = np.where(self.has_racks, n_local, size)
            n_local = n_local - (has_owner & ~cross_o)
            others = size - has_owner
            c_other = np.where(n_local > 0, 0.0, self.ccost) + self.mcost * has_owner
            c_other = np.where(others > 0, c_other, np.inf)
        else:
            others = size - has_owner
            c_other = np.where(others > 0, self.mcost * has_owner, np.inf)
        return np.minimum(c_owner, c_other)

    def _polish(self, st: _State, win: tuple[np.ndarray, np.ndarray], cap: float) -> None:
        """Moves, then swaps, that lower the cross-rack/move cost while loads stay within cap."""
        if self.ccost == 0 and self.mcost == 0:
            return
        lo, hi = win
        cap = cap * (1 + 1e-12)
        w = self.w
        wl = self.wl
        sub = self.sub
        ptopic = self.ptopic
        large = self.n_p > LARGE
        k_targets = 16 if self.n_p <= SMALL else 4
        # Swap searches scan k_targets members' partitions each: bound the total scanned.
        swap_budget = max(50, int(300_000 / (k_targets * (self.n_p / self.n_m + 1))))
        achievable = self._achievable_cost()
        ach = achievable.tolist()
        pairs = {}
        if self.rack_aware:
            for g, ms in enumerate(self.groups):
                for r in range(self.n_racks):
                    sel = ms[self.mrack[ms] == r]
                    if len(sel):
                        pairs[(g, r)] = sel
        owner_l, localmask, mrack, pgroup = self.owner_l, self.localmask, self.mrack_l, self.pgroup_l
        hashes = self.hash.tolist()
        n_racks = self.n_racks
        cc, mc = self.ccost, self.mcost
        rack_aware = self.rack_aware

        def cost(p: int, m: int) -> float:
            c = 0.0
            if rack_aware:
                r = mrack[m]
                lm = localmask[p]
                if r >= 0 and lm and not (lm >> r) & 1:
                    c = cc
            o = owner_l[p]
            if o >= 0 and o != m:
                c += mc
            return c

        # Count spread per class: moves may shift counts inside it, never widen it (beyond one).
        mclass = self.mclass.tolist()
        c_min = [int(st.count[ms].min()) for ms in self.class_members]
        c_max = [int(st.count[ms].max()) for ms in self.class_members]
        spread = [max(hi_ - lo_, 1) for lo_, hi_ in zip(c_min, c_max, strict=True)]
        hist: list[dict[int, int]] = []
        for ms in self.class_members:
            vals, freq = np.unique(st.count[ms], return_counts=True)
            hist.append(dict(zip(vals.tolist(), freq.tolist(), strict=True)))

        def shift(n: int, old: int, new: int) -> None:
            """One member of class n goes from old to new partitions: keep c_min/c_max exact."""
            h = hist[n]
            h[old] -= 1
            h[new] = h.get(new, 0) + 1
            if h[old] == 0:
                del h[old]
            c_min[n] = min(c_min[n], new)
            c_max[n] = max(c_max[n], new)
            while c_min[n] not in h:
                c_min[n] += 1
            while c_max[n] not in h:
                c_max[n] -= 1
        for _ in range(2 if large else 4):
            improved = False
            cur = self.costs_of(st)
            cand = np.flatnonzero((cur > achievable + 1e-9) & ~self.pinned)
            if len(cand) == 0:
                return
            # Lighter partitions first: they fit more easily and move less load.
            cand = cand[np.argsort(w[cand], kind="stable")]
            order_gr = {key: ms[np.lexsort((self.hash[ms], st.load[ms]))].tolist()
                        for key, ms in pairs.items()}
            # Python mirrors of the hot arrays (numpy scalar access is slow in this loop).
            loads = st.load.tolist()
            counts = st.count.tolist()
            where = st.a.tolist()
            lo_l, hi_l = lo.tolist(), hi.tolist()

            def move(p: int, b: int, wp: float, where: list[int] = where, loads: list[float] = loads,
                     counts: list[int] = counts) -> None:
                a = where[p]
                loads[a] -= wp
                counts[a] -= 1
                loads[b] += wp
                counts[b] += 1
                where[p] = b
                st.move(p, b, wp)
            for p in cand.tolist():
                a = where[p]
                c_here = cost(p, a)
                if c_here <= ach[p] + 1e-9:
                    continue
                g = pgroup[p]
                o = owner_l[p]
                targets = [o] if o >= 0 and o != a else []
                lm = localmask[p]
                if lm and (mrack[a] >= 0 and not (lm >> mrack[a]) & 1):
                    for r in range(n_racks):
                        if (lm >> r) & 1:
                            ms = order_gr.get((g, r))
                            if ms:
                                n = 0
                                for b in ms:
                                    if b != a and b != o:
                                        targets.append(b)
                                        n += 1
                                        if n >= k_targets:
                                            break
                wp = wl[p]
                gains = []
                for b in targets:
                    gn = c_here - cost(p, b)
                    if gn > 1e-9:
                        gains.append((-gn, loads[b], hashes[b], b))
                gains.sort()
                done = False
                ca, na = counts[a] - 1, mclass[a]
                if ca >= lo_l[a]:
                    for _g, lb_, _h, b in gains:
                        if lb_ + wp > cap or counts[b] + 1 > hi_l[b]:
                            continue
                        # The move must not widen a class's count spread (past one).
                        cb, nb = counts[b] + 1, mclass[b]
                        if na == nb:
                            ok = max(c_max[na], cb) - min(c_min[na], ca) <= spread[na]
                        else:
                            ok = (c_max[na] - min(c_min[na], ca) <= spread[na]
                                  and max(c_max[nb], cb) - c_min[nb] <= spread[nb])
                        if ok:
                            shift(na, ca + 1, ca)
                            shift(nb, cb - 1, cb)
                            move(p, b, wp)
                            done = improved = True
                            break
                if done or swap_budget <= 0:
                    continue
                swap_budget -= 1
                best = None
                for neg_gn, _l, _h, b in gains[:k_targets]:
                    gn = -neg_gn
                    pb = np.fromiter((q for q in st.parts[b] if not self.pinned[q]), dtype=np.int64)
                    if len(pb) == 0:
                        continue
                    pb = pb[sub[a, ptopic[pb]]]
                    if len(pb) == 0:
                        continue
                    pb.sort()
                    wq = w[pb]
                    ok = (loads[a] - wp + wq <= cap) & (loads[b] + wp - wq <= cap)
                    if not ok.any():
                        continue
                    total = gn - (self.costs_vec(pb, a) - self.costs_vec(pb, b))
                    ok &= total > 1e-9
                    if not ok.any():
                        continue
                    idx = np.flatnonzero(ok)
                    k = idx[np.lexsort((pb[idx], wq[idx], -total[idx]))[0]]
                    cand_t = (-float(total[k]), float(wq[k]), b, int(pb[k]))
                    if best is None or cand_t < best:
                        best = cand_t
                if best is not None:
                    _, _, b, q = best
                    move(p, b, wp)
                    move(q, a, wl[q])
                    improved = True
            if not improved:
                return

    def costs_of(self, st: _State) -> np.ndarray:
        """Cost of every partition where it is now."""
        a = st.a
        c = np.zeros(self.n_p)
        if self.rack_aware:
            r = self.mrack[a]
            c += self.ccost * ((r >= 0) & self.has_racks & ~self.local[np.arange(self.n_p), np.maximum(r, 0)])
        c += self.mcost * ((self.owner >= 0) & (self.owner != a))
        return c

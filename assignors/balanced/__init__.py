"""The ``balanced`` assignor: load-, rack- and movement-aware, across all topics of the group.

What it optimises, in this order (lexicographic):

1. every subscribed partition goes to exactly one member subscribed to its topic (hard);
2. the partition-count bound, when ``max_count_skew`` is set: among members with identical
   subscriptions, counts differ by at most ``1 + max_count_skew`` (hard; best effort only when stuck
   partitions pinned to one member make it impossible);
3. the **max member load**, summed over all topics (not per topic). The load of a partition is
   ``lag + produce_rate * horizon_s`` (lag alone without rates or with ``horizon_s = 0``). With
   ``snapshot.capacity`` (records/s per member) the max member *time*, load / capacity, instead: a
   member three times as fast takes three times the load; equal capacities give exactly the
   assignment without them (:mod:`.problem` keeps loads scaled to the fastest member's records);
4. ``cross_rack_cost * cross-rack partitions + move_cost * partitions moved`` (KIP-925's traffic and
   non-overlap costs; only their ratio matters), spending at most ``load_tolerance`` of the best max
   load found; then the lower max load, then even partition counts, then the least load moved.

Partitions with zero load are spread by count (fewest partitions first, the owner keeping its own up
to its fair share), so a zero-lag group comes out as count-balanced as Kafka's assignors, then
rack-local, then sticky. Loaded partitions go where load says: without ``max_count_skew`` a member
holding one hot partition may get few others.

A partition listed in ``snapshot.stuck`` stays with its current owner when that owner is present and
subscribed (moving it would not make it progress), and weighs 0 there: the owner gets through none
of its records, so it spends no capacity on it, and it takes its full share of the rest (counting
the ever-growing lag would leave it nothing else; :func:`assignors.metrics.partition_loads` has the
rule). It still counts in the owner's partition count. A stuck partition whose owner left weighs its
load: its next owner may well get through it. A cross-rack partition is one assigned to a member
that has a rack while the partition has replicas with racks, none on the member's rack (KIP-881's
``racksMismatch``, as :func:`assignors.metrics.cross_rack_partitions` counts it); a member without a
rack, or a partition without replica racks, is never cross-rack.

The algorithm
-------------

*Candidates.* Several starting assignments are built, then each is improved the same way:

- ``preferring``: LPT, heaviest partition first; each goes to the cheapest (cross-rack/move cost) of
  its current owner, the least-loaded same-rack subscriber and the least-loaded subscriber whose
  load stays within ``(1 + load_tolerance) x lower bound``, else to the least-loaded subscriber.
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
single move (one of its partitions to the eligible member it ends least loaded on: with unlike
capacities not always the least-loaded one) or swap (one of its partitions against a lighter one of
another member) that lowers the pair's max, until neither helps or the lower bound is reached.
Moves respect the count bound; swaps keep counts.

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
low-sorting client id is not always the one that gets the heaviest partition (grantneale #4).
Members are sorted by member id first, so the result does not depend on the order members are listed
in.

Modules
-------

``options`` (:class:`BalancedOptions`, the size thresholds), ``problem`` (the group indexed as
arrays, and the one cost rule), ``state`` (an assignment under construction), ``start`` and ``lpt``
(the starting candidates), ``search`` (balance; ``steps``: its steps in plain Python for members
holding few partitions), ``counts`` (count bound and count balance), ``polish``, and ``solve`` (the
run: candidates, finalists, the pick).

Worked example
--------------

Topic ``t`` with lags p0=100, p1=60, p2=50, p3=10; topic ``u`` with one partition, lag 40. ``C0``
(rack a) and ``C1`` (rack b) both subscribe to both topics; ``C0`` owns t-0, t-1, t-2 and ``C1``
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
  lightest partition that covers it; it goes to C1 (150), and local search ends where ``sticky``
  did.
- ``lpt`` and the peers end at 140 or above.

All the finalists reach 140; the cap is 1.02 x 140 = 142.8 and polish finds no move or swap within
it. Costs: ``sticky`` leaves t-0, t-1 and t-3 cross-rack and moves two (3 x 10 + 2 = 32);
``preferring`` has u-0 and t-2 cross-rack and moves three (2 x 10 + 3 = 23), so it wins::

    C0 -> [t-0, u-0]             load 140   (was 210)
    C1 -> [t-1, t-2, t-3]        load 120   (was 50)

grantneale's lag assignor, per topic, gives C0 = {t-0, t-3, u-0} = 150.
"""

from __future__ import annotations

from typing import Any

from assignors.model import Assignment, GroupSnapshot

from .options import LARGE, PEER_SEED_MAX_PARTITIONS, SMALL, BalancedOptions
from .utilisation import plan

__all__ = ["LARGE", "NAME", "PEER_SEED_MAX_PARTITIONS", "SMALL", "BalancedOptions", "assign"]

NAME = "balanced"


# Defined here, not in a submodule: the registry finds an assignor's options by
# ``assign.__module__``.
def assign(snapshot: GroupSnapshot, options: BalancedOptions | None = None,
           **kwargs: Any) -> Assignment:
    """Assign ``snapshot``'s partitions; see the package docstring. Options as
    :class:`BalancedOptions`."""
    return plan(snapshot, BalancedOptions.of(options, **kwargs))

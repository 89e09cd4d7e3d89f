"""Kafka's sticky assignors (``sticky``, ``cooperative-sticky``): the algorithm they share
(AbstractStickyAssignor).

Goals, in order: (1) balance — partition counts of members differ by at most one where
subscriptions allow it; (2) stickiness — a member keeps as many of the partitions it owned as
balance permits; (3) rack locality (KIP-881) where racks are known, without giving up balance.

Steps, as Kafka 4.3 does them:

1. **Members in Java order.** Kafka walks the members in the iteration order of the ``HashMap`` that
   holds the subscriptions. We rebuild that order from the member ids (see :mod:`assignors._java`).
2. **Who owned what.** Walking the members in that order, each owned partition of a topic that still
   exists is kept by its first claimant. A later claimant with a higher generation takes it over;
   one with a lower generation does not get it; one with the *same* generation makes the partition
   "claimed twice": nobody keeps it and it is handed out afresh.
3. **Rack mode** is on when some member has a rack, that rack holds replicas, and either some
   partition is not on every rack or ``prefer_rack_aware_logic`` is set. Then an owned partition on
   a member whose rack holds no replica of it is given up, and new partitions go to same-rack
   members first.
4. **Equal subscriptions: the constrained builder.** With ``T`` partitions and ``N`` members each
   member gets ``floor(T/N)`` or ``ceil(T/N)``, and exactly ``T mod N`` get the larger number.
   Members keep their owned partitions (sorted by partition number, then topic) up to their
   quota — the first ones visited may keep ``ceil``, later ones ``floor`` — then the free
   partitions (sorted by topic, then partition) go round-robin to the members below quota (sorted
   by member id), same-rack members first in rack mode; members at ``floor`` take the leftovers
   one each.
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
   round and reports it as transferring (see :mod:`assignors.sticky.cooperative`).

Worked example (equal subscriptions): members C0, C1, C2 subscribe to t0 (3 partitions) and t1
(3 partitions); C0 owned [t0p0, t0p1, t1p0, t1p1], C1 owned [t0p2, t1p2], C2 is new, all in
generation 1. Quotas are 2 each. Java's HashMap order is C0, C1, C2. C0 keeps its first two owned
partitions sorted by (partition, topic) — t0p0, t1p0 — and gives up t0p1, t1p1; C1 keeps t0p2,
t1p2. The free partitions t0p1, t1p1 go to C2. Result C0 [t0p0, t1p0], C1 [t0p2, t1p2], C2 [t0p1,
t1p1], and with the cooperative protocol t0p1 and t1p1 transfer from C0 to C2 (withheld this round).

Modules, split as Kafka's AbstractStickyAssignor (with its ConstrainedAssignmentBuilder and
GeneralAssignmentBuilder) and kafka-python's ``sticky`` package split theirs:

* :mod:`~assignors.sticky.inputs`: member order and ranks, subscribed topics, owned partitions
  reconciled by generation (steps 1-2); :mod:`~assignors.sticky.racks`: rack mode (step 3);
* :mod:`~assignors.sticky.constrained`: the constrained builder (step 4);
* :mod:`~assignors.sticky.general`: the general builder (step 5), with
  :mod:`~assignors.sticky.load_order` (members by load, Kafka's sortedCurrentSubscriptions) and
  :mod:`~assignors.sticky.movements` (Kafka's PartitionMovements);
* :mod:`~assignors.sticky.algorithm`: :func:`sticky_assign`, which picks the builder;
* :mod:`~assignors.sticky.eager` and :mod:`~assignors.sticky.cooperative`: the two assignors' entry
  points (``NAME``, ``assign``), which :mod:`assignors.registry` names (step 6 is in the latter).

Implementation notes: partitions are ``(topic, partition)`` tuples; members are ranked by
``String.compareTo`` of their ids so that Java's ``TreeSet`` of members ordered by (partition count,
id) becomes a heap of ``(count, rank)``. The general builder groups members with the same
subscription (and rack) so that "least loaded subscriber of topic t" is a look at a few heap tops,
and it caches the "is it balanced" verdict between moves, so nothing is quadratic in partitions.
"""

from __future__ import annotations

from assignors.model import TopicPartition as TP
from assignors.sticky.algorithm import sticky_assign
from assignors.sticky.errors import StickyAssignmentError

__all__ = ["TP", "StickyAssignmentError", "sticky_assign"]

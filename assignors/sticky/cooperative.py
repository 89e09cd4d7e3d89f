"""Kafka's CooperativeStickyAssignor (``cooperative-sticky``), bit for bit with kafka-clients 4.3:
the entry point.

It computes the same assignment as the sticky assignor (:mod:`assignors.sticky.eager`, algorithm in
:mod:`assignors.sticky`) from what each member reports in its subscription (owned partitions
and generation), then follows the cooperative protocol: a partition may not go straight from one
member to another in a single rebalance. Every partition whose owner changes is left out of the new
owner's list this round (the old owner revokes it; the follow-up rebalance hands it over). Those are
Kafka's "partitions transferring ownership":

* with equal subscriptions, the partitions the constrained builder hands to a member other than the
  one that owned them (an owner over its quota, a rack-misaligned owner, or two same-generation
  claimants);
* otherwise, the partitions assigned to a member that did not own them while some member that did
  own them does not get them back.

A partition whose owner left the group is not transferring: it is handed out at once.

Worked example: C0 owns [t0p0, t0p1, t0p2] in generation 1 and C1 joins. Quotas are 2 and 1, so
sticky gives C0 [t0p0, t0p1] and C1 [t0p2]. Cooperative returns C0 [t0p0, t0p1], C1 [] with
t0p2 transferring to C1: C0 revokes t0p2, rejoins, and the next rebalance gives it to C1.
"""

from __future__ import annotations

from typing import Any

from assignors.model import Assignment, GroupSnapshot
from assignors.sticky.algorithm import TP, sticky_assign

NAME = "cooperative-sticky"
WITHHOLDS = True
"""Its assignment may leave a partition to nobody for a round (read by
:func:`assignors.registry.withholds`)."""


def _transfers(snapshot: GroupSnapshot, base: dict[str, list[TP]]) -> dict[TP, str]:
    """Partitions assigned to a member that did not own them and owned by a member that loses
    them."""
    added: dict[TP, str] = {}
    revoked: set[TP] = set()
    for m in snapshot.members:
        owned = set(m.owned)
        assigned = base[m.member_id]
        for tp in assigned:
            if tp not in owned:
                added[tp] = m.member_id
        if owned:
            assigned_set = set(assigned)
            revoked.update(tp for tp in m.owned if tp not in assigned_set)
    return {tp: mid for tp, mid in added.items() if tp in revoked}


def assign_with_transfers(snapshot: GroupSnapshot, *, prefer_rack_aware_logic: bool = False,
                          kafka_bugs: bool = False,
                          **_options: Any) -> tuple[Assignment, dict[str, str]]:
    """The first-round assignment and the partitions transferring ownership as ``"topic-p" -> new
    owner``.

    ``kafka_bugs`` reproduces a Kafka defect that can assign a partition to a member no longer
    subscribed to its topic (see :func:`assignors.sticky.algorithm.sticky_assign`); off by default.
    """
    base, transferring = sticky_assign(snapshot, prefer_rack_aware_logic=prefer_rack_aware_logic,
                                       kafka_bugs=kafka_bugs)
    if transferring is None:
        transferring = _transfers(snapshot, base)
    if transferring:
        withheld: dict[str, set[TP]] = {}
        for tp, mid in transferring.items():
            withheld.setdefault(mid, set()).add(tp)
        for mid, tps in withheld.items():
            base[mid] = [tp for tp in base[mid] if tp not in tps]
    return base, {f"{t}-{p}": mid for (t, p), mid in transferring.items()}


def assign(snapshot: GroupSnapshot, *, prefer_rack_aware_logic: bool = False,
           **options: Any) -> Assignment:
    """Member id -> partitions for this round, transferring partitions withheld."""
    return assign_with_transfers(snapshot, prefer_rack_aware_logic=prefer_rack_aware_logic,
                                 **options)[0]

"""Giving load back to a member that recovered: one bounded step from the current assignment.

A member shed while it was slow keeps what it was left once it is back to speed: nothing is over
its capacity, so nothing moves, and its peers carry its share with less headroom than the group
should have. This step moves partitions to it (the *recipient*), one at a time, each from the peer
busiest by its figure (the produce rate it holds over its capacity; a peer with nothing that fits
passes to the next): of that peer's partitions, the one with the highest rate that fits, ties to
the lowest ``(topic, partition)``. A partition fits when

- the recipient subscribes to its topic, it is not stuck, and something is produced to it;
- the recipient stays within ``target`` utilisation with it;
- the recipient takes, over the step, at most ``share`` times the load it held before the step
  (always at least one partition): load goes back in bounded steps, so a member that only looked
  recovered is not handed everything at once;
- the donor is busier than the recipient would be after the move: each move levels, none overshoots.

Nothing else moves, and every tie is broken by member id, then ``(topic, partition)``: the step is
deterministic.

Worked example. Twelve partitions of 20/s. ``m0`` (capacity 121/s) holds p0 and p1 (40/s, 0.33 of
its capacity); ``m1`` and ``m2`` (120/s) hold five each (100/s, 0.83). Target 0.8, share 1: ``m0``
may take up to 40/s more, and up to 96.8/s in all. Move 1: the busiest peer is ``m1`` (0.83, ties
by id); its partitions all carry 20/s, so its lowest, p2, goes: ``m0`` at 60/s (0.5), ``m1`` at
80/s (0.67). Move 2: ``m2`` (0.83) gives p7: ``m0`` at 80/s (0.66). ``m0`` has taken its 40/s: the
step ends at four partitions each.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from assignors.model import Assignment, GroupSnapshot, TopicPartition

SLACK = 1e-9
"""Loads are sums of rates: equal ones may differ in the last bit."""


def give_back(snapshot: GroupSnapshot, current: Assignment, recipient: str, target: float,
              share: float) -> Assignment:
    """``current`` after one step of giving load back to ``recipient`` (the module's rule); a new
    assignment, ``current`` as it was when nothing fits (or the capacities are unknown)."""
    out = {mid: list(tps) for mid, tps in current.items()}
    capacity = snapshot.capacity
    member = next((m for m in snapshot.members if m.member_id == recipient), None)
    if capacity is None or member is None:
        return out
    rates = _rates(snapshot)
    load = {m.member_id: sum(rates.get(tp, 0.0) for tp in out.get(m.member_id, ()))
            for m in snapshot.members}
    budget, taken = share * load[recipient], 0.0
    out.setdefault(recipient, [])
    while True:
        move = _next_move(snapshot, out, load, rates, recipient, target, budget - taken,
                          first=not taken)
        if move is None:
            return out
        donor, tp = move
        out[donor].remove(tp)
        out[recipient].append(tp)
        load[donor] -= rates[tp]
        load[recipient] += rates[tp]
        taken += rates[tp]


def _rates(snapshot: GroupSnapshot) -> dict[TopicPartition, float]:
    """Each partition's produce rate (an unknown or broken one brings nothing)."""
    return {(t, p): float(r) for t, values in snapshot.produce_rate.items()
            for p, r in enumerate(values) if math.isfinite(r) and r > 0}


def _next_move(snapshot: GroupSnapshot, out: Assignment, load: Mapping[str, float],
               rates: Mapping[TopicPartition, float], recipient: str, target: float,
               allowance: float, first: bool) -> tuple[str, TopicPartition] | None:
    """The next (donor, partition) of the step, or None: nothing fits."""
    capacity = snapshot.capacity
    assert capacity is not None
    topics = next(set(m.topics) for m in snapshot.members if m.member_id == recipient)
    room = target * capacity[recipient] - load[recipient]
    donors = sorted((mid for mid in load if mid != recipient),
                    key=lambda mid: (-load[mid] / capacity[mid], mid))
    for donor in donors:
        busy = load[donor] / capacity[donor]
        fits = [tp for tp in out.get(donor, ())
                if tp[0] in topics and tp not in snapshot.stuck and tp in rates
                and rates[tp] <= room + SLACK and (first or rates[tp] <= allowance + SLACK)
                and busy > (load[recipient] + rates[tp]) / capacity[recipient] + SLACK]
        if fits:
            return donor, min(fits, key=lambda tp: (-rates[tp], tp))
    return None

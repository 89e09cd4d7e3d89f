"""The ``retention_risk`` trigger: load moves off a member about to lose records to retention,
without waiting.

At a lag observation, a member owning a partition whose committed offset falls below the log start
within ``policy.retention_risk_s`` seconds at current rates, or already did
(:mod:`streaming.lag.loss_risk`), triggers ``retention_risk`` at once: none of lag skew's streak,
imbalance threshold or ``min_total_lag``, and not its cooldown either. It has a cooldown of its own
(``cooldown_s`` since the group's previous ``retention_risk`` recommendation,
``GroupState.risk_ts``), so a risk that stays is recommended against once per cooldown, not at every
poll. It stands only when the proposal lowers the load of a member at risk: with less else to
consume, that member spends more of its rate on the partition at risk. One partition is never split
between members, so a member at risk on the only partition it owns gets nothing from a rebalance
(the trigger does not stand; the partition is named in ``describe`` and the metrics).

Example (threshold 1,800 s): C0 owns p0 and p1; p0's log start rises 50/s, C0 consumes it at 20/s
and is 3,000 records above it: 100 s to loss, so ``retention_risk`` fires on this very observation,
while lag skew (an imbalance of 1.3 under a threshold of 1.5) would wait. ``balanced`` gives p1 to
C1; C0's load drops and the recommendation stands, its trigger naming C0, p0, 100 s and the headroom
of 3,000 records.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from streaming.config import PolicySettings
from streaming.contracts.recommendation import records
from streaming.lag import loss_risk
from streaming.lag.owners import Owners
from streaming.lag.rules import finite_or_none
from streaming.state.group_state import GroupState


def members_at_risk(state: GroupState, owners: Owners, threshold_s: float) -> dict[str, dict]:
    """member id -> its soonest partition at risk (topic, partition, seconds, headroom) and its
    records lost, for the members at risk under the current assignment."""
    ids = owners.ids
    soonest: dict[str, dict] = {}
    lost: dict[str, int] = {}
    for topic, (parts, who) in owners.by_topic.items():
        hist = state.lag.get(topic)
        if hist is None or not (hist.start >= 0).any():
            continue
        rows, found = hist.lookup(parts)
        risk = hist.retention()
        hit = np.flatnonzero(found & loss_risk.at_risk(risk.seconds[rows], threshold_s))
        for j in hit.tolist():
            member, row = ids[int(who[j])], int(rows[j])
            seconds = float(risk.seconds[row])
            lost[member] = lost.get(member, 0) + int(risk.lost[row])
            if member not in soonest or seconds < soonest[member]["seconds"]:
                soonest[member] = {"topic": topic, "partition": int(parts[j]), "seconds": seconds,
                                   "headroom": int(risk.headroom[row])}
    return {m: f | {"seconds": finite_or_none(f["seconds"]), "lost": lost[m]}
            for m, f in sorted(soonest.items())}


def trigger(state: GroupState, ts: int, policy: PolicySettings,
            owners: Owners | None) -> dict | None:
    """The trigger's figures at this observation, or None (off, in its cooldown, or
    nobody at risk)."""
    if not may_trigger(state, ts, policy) or owners is None or not owners.count:
        return None
    members = members_at_risk(state, owners, policy.retention_risk_s)
    return {"members": members, "threshold_s": policy.retention_risk_s} if members else None


def may_trigger(state: GroupState, ts: int, policy: PolicySettings) -> bool:
    """Whether the trigger is on and out of its cooldown at ``ts`` (whoever is at risk)."""
    if policy.retention_risk_s <= 0:
        return False
    return state.risk_ts is None or not ts - state.risk_ts < policy.cooldown_s * 1000


def stands(figures: dict, before: Mapping[str, float], after: Mapping[str, float]) -> bool:
    """Whether the proposal lowers the load of a member at risk (``before``/``after``: member id ->
    load); each member's loads join its figures."""
    lowered = False
    for member, f in figures["members"].items():
        f["load_before"], f["load_after"] = (records(x[member]) if member in x else None
                                             for x in (before, after))
        lowered |= member in before and member in after and after[member] < before[member]
    return lowered

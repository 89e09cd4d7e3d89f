"""The ``utilisation`` trigger: a member that says how busy it is, and is over its target.

A slow consumer is the commonest cause of lag, and lag alone finds it late: its backlog must build
and hold for most of a minute before its capacity is known (:mod:`streaming.lag.capacity`). A
consumer that reports its own load (:mod:`streaming.contracts.member_load`) has a capacity at once:
records/s over its busy fraction. A member's *utilisation* is what arrives on the partitions it owns
(their produce rates over the lag window, stuck ones left out) over that capacity; above 1 its lag
grows without end.

At an observation with lag, a member with a load report of its own above the target utilisation, 1 -
``policy.capacity_headroom``, triggers ``utilisation`` at once: none of lag skew's streak, imbalance
or ``min_total_lag``. It waits out ``cooldown_s`` since the group's previous recommendation, as lag
skew does. The proposal stands only when it brings every member within the target, or, where no plan
can, a group with a member that cannot keep up (above 1) to one where every member can: so a group
where every consumer is slow (a shared downstream: no assignment keeps up) gets no recommendation,
and a member that is back to speed gets its share again as soon as the others are over the target.

Example (headroom 0.2, target 0.8): 12 partitions of 20/s, range gives each of C0, C1, C2 four.
C0 reports 60/s at busy 1.0 (capacity 60/s), C1 and C2 80/s at busy 0.67 (capacity 120/s). C0 is
at 80 / 60 = 1.33: the trigger fires, naming C0 (``{"member_id": "C0", "client_id": "c-0",
"utilisation": 1.3333, "records_per_s": 60.0, "arriving_per_s": 80.0}``). ``balanced`` plans C0
two partitions (0.67) and C1, C2 five (0.83): nobody is within 0.8, but C0 could not keep up and
now everyone can, so it stands. Later C0 reports 40/s at busy 0.33 (back to 120/s): C1 and C2 at
0.83 fire again, the plan 4-4-4 (0.67 each) is within the target and stands.
"""

from __future__ import annotations

from collections.abc import Mapping

from assignors.model import Assignment, GroupSnapshot
from assignors.utilisation import member_utilisation
from streaming.config import PolicySettings
from streaming.lag import capacity
from streaming.lag.owners import Owners
from streaming.state.group_state import GroupState

SLACK = 1e-9
"""Utilisations are sums of rates over capacities: equal ones may differ in the last bit."""


def target(policy: PolicySettings) -> float:
    return 1.0 - policy.capacity_headroom


def may_trigger(state: GroupState, ts: int, policy: PolicySettings) -> bool:
    """Whether the trigger is on, some member reports its load and the cooldown is over at ``ts``
    (whether anyone is over the target or not)."""
    if not policy.utilisation or not state.reported:
        return False
    return state.last_rec_ts is None or not ts - state.last_rec_ts < policy.cooldown_s * 1000


def trigger(state: GroupState, ts: int, policy: PolicySettings,
            owners: Owners | None) -> dict | None:
    """The trigger's figures at this observation, or None (off, in the cooldown, or no member that
    reports its load is over the target)."""
    if not may_trigger(state, ts, policy) or owners is None or not owners.count:
        return None
    over = members_over(state, owners, policy)
    return {"members": over, "target": round(target(policy), 6)} if over else None


def members_over(state: GroupState, owners: Owners, policy: PolicySettings) -> list[dict]:
    """The members with a load report of their own whose utilisation is above the target, each with
    its figures (by member id)."""
    reporting = {m.member_id for m in state.members or [] if _reports(state, m.identity)}
    if not reporting:
        return []
    caps = capacity.records_per_s(state.known_capacity(), state.lag, lambda: owners,
                                  policy.stuck_observations, policy.capacity_headroom)
    if caps is None:
        return []
    arriving = capacity.inflow(state.lag, owners.by_topic, owners.count,
                               policy.stuck_observations)
    client = {m.member_id: m.client_id for m in state.members or []}
    out = []
    for i, mid in enumerate(owners.ids):
        if mid not in reporting or not caps.get(mid):
            continue
        used = float(arriving[i]) / caps[mid]
        if used > target(policy) + SLACK:
            out.append({"member_id": mid, "client_id": client.get(mid),
                        "utilisation": round(used, 4), "records_per_s": round(caps[mid], 3),
                        "arriving_per_s": round(float(arriving[i]), 3)})
    return out


def _reports(state: GroupState, identity: str) -> bool:
    held = state.reported.get(identity)
    return held is not None and capacity.reported_capacity(held[1], held[2]) is not None


def stands(figures: dict, snapshot: GroupSnapshot, current: Assignment, proposed: Assignment,
           policy: PolicySettings) -> bool:
    """Whether the proposal brings every member within the target, or a group where some member
    cannot keep up to one where all can; the utilisations before and after join the figures."""
    before, after = (_highest(member_utilisation(snapshot, a)) for a in (current, proposed))
    if before is None or after is None:
        return False
    figures["before"], figures["after"] = round(before, 4), round(after, 4)
    within = after <= target(policy) + SLACK
    rescued = before > 1.0 + SLACK and after <= 1.0 + SLACK
    return after < before - SLACK and (within or rescued)


def _highest(used: Mapping[str, float]) -> float | None:
    return max(used.values()) if used else None

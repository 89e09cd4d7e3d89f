"""The ``give_back`` trigger: load goes back to a member that recovered, slowly (#46 item 5).

A member shed while it was slow keeps the measure its reports gave (:mod:`streaming.lag.reported`),
raised only when a report shows it can do more: back to speed, it reads what it was left in a
fraction of its time, and its measure rises. Nothing is over its capacity then, so ``utilisation``
does not fire, and its peers carry its share with less headroom than the target leaves.

At an observation with lag, a member whose capacity its own reports measured triggers
``give_back`` when what arrives on its partitions is under the target utilisation (1 -
``policy.capacity_headroom``) of that capacity while some peer is at or above the target by its
figure (its measure, or its lower bound: what its lag and reports say it can at least do). Load goes
back slowly:

- only :data:`COOLDOWNS` x ``cooldown_s`` after the group's previous recommendation (the shed, or
  the previous step);
- the step is :func:`assignors.give_back.give_back`: partitions one at a time from the busiest
  peer, the recipient kept within the target and given at most :data:`SHARE` x its load per step;
  nothing else moves;
- it stands only when it moves something and the members' utilisations by the figures, read from
  the busiest down, come out lower (the first that differs is lower after: the busiest is no busier,
  and where it is as busy, the next one is less busy, and so on).

How far it goes is the step's: a member measured slow that holds what it can do gets nothing (no
partition fits within its target). One member per step: the one least busy (ties by member id);
where several recovered, the next one's turn comes two cooldowns later. The trigger is evaluated
only at an observation where nothing else stands: another trigger's recommendation is the
assignor's whole plan, which puts the recovered member's measure to use already.

Example (target 0.8): C0 was shed to two of twelve 20/s partitions at 60/s; back to speed it
reports 40/s at busy 0.33, a measure of 121/s: 0.33 of it. C1 and C2 hold five each
(100/s) at busy 0.83: at least 120/s, 0.83 of it. Two cooldowns after the shed, ``give_back``
fires (``{"member_id": "C0", "client_id": "c-0", "utilisation": 0.3306, "records_per_s": 121.2,
"arriving_per_s": 40.0, "busiest": 0.8333, "target": 0.8}``) and the step gives C0 a partition
of C1 and one of C2: four each, the busiest at 0.67.
"""

from __future__ import annotations

from assignors import give_back as step
from assignors.model import Assignment, GroupSnapshot
from assignors.utilisation import member_utilisation
from streaming.config import PolicySettings
from streaming.lag import capacity
from streaming.lag.owners import Owners
from streaming.policy import utilisation
from streaming.state.group_state import GroupState

COOLDOWNS = 2
"""How many ``cooldown_s`` a step waits after the group's previous recommendation."""
SHARE = 1.0
"""The most a step gives a member, as a share of the load it holds: at most doubled per step."""


def may_trigger(state: GroupState, ts: int, policy: PolicySettings) -> bool:
    """Whether the trigger is on, some member reports its load and :data:`COOLDOWNS` cooldowns
    have passed at ``ts``."""
    if not policy.give_back or not state.reported:
        return False
    wait = COOLDOWNS * policy.cooldown_s * 1000
    return state.last_rec_ts is None or not ts - state.last_rec_ts < wait


def trigger(state: GroupState, ts: int, policy: PolicySettings,
            owners: Owners | None) -> dict | None:
    """The trigger's figures at this observation, or None (off, waiting, or no recovered member with
    room while a peer is at the target)."""
    if not may_trigger(state, ts, policy) or owners is None or not owners.count:
        return None
    measured = {m.member_id for m in state.members or []
                if (state.reported.get(m.identity) or [None] * 4)[3] is not None}
    if not measured:
        return None
    caps = capacity.estimates(state.known_capacity(), state.lag, lambda: owners,
                              policy.stuck_observations, policy.capacity_headroom)
    if caps is None:
        return None
    arriving = capacity.inflow(state.lag, owners.by_topic, owners.count,
                               policy.stuck_observations).tolist()
    used = {mid: arriving[i] / caps[mid].records_per_s
            for i, mid in enumerate(owners.ids) if mid in caps}
    target = utilisation.target(policy)
    room = sorted((u, mid) for mid, u in used.items()
                  if mid in measured and u < target - utilisation.SLACK)
    busiest = max(used.values(), default=0.0)
    if not room or busiest < target - utilisation.SLACK:
        return None
    u, mid = room[0]
    client = {m.member_id: m.client_id for m in state.members or []}
    return {"member_id": mid, "client_id": client.get(mid), "utilisation": round(u, 4),
            "records_per_s": round(caps[mid].records_per_s, 3),
            "arriving_per_s": round(arriving[owners.ids.index(mid)], 3),
            "busiest": round(busiest, 4), "target": round(target, 6)}


def plan(figures: dict, snapshot: GroupSnapshot, current: Assignment,
         policy: PolicySettings) -> Assignment:
    """The step for the member the figures name."""
    return step.give_back(snapshot, current, figures["member_id"], utilisation.target(policy),
                          SHARE)


def stands(figures: dict, snapshot: GroupSnapshot, current: Assignment,
           proposed: Assignment) -> bool:
    """Whether the step moves something and the utilisations by the figures, from the busiest down,
    come out lower; the busiest before and after join the figures."""
    before, after = (sorted(member_utilisation(snapshot, a).values(), reverse=True)
                     for a in (current, proposed))
    figures["before"], figures["after"] = round(before[0], 4), round(after[0], 4)
    moved = any(sorted(proposed.get(mid, [])) != sorted(tps) for mid, tps in current.items())
    differ = next(((b, a) for b, a in zip(before, after, strict=True)
                   if abs(b - a) > utilisation.SLACK), None)
    return moved and differ is not None and differ[1] < differ[0]

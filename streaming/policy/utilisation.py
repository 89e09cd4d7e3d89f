"""The ``utilisation`` trigger: a member that says how busy it is, and cannot keep up.

A slow consumer is the commonest cause of lag, and lag alone finds it late: its backlog must build
and hold for most of a minute before its capacity is known (:mod:`streaming.lag.capacity`). A
consumer that reports its own load (:mod:`streaming.contracts.member_load`) has a capacity at once:
records/s over its busy fraction, a measure when it is saturated
(:data:`streaming.lag.reported.SATURATED_BUSY`, or busy and its lag growing:
:func:`streaming.lag.reported.measure`), else a lower bound. A member's *utilisation* is
what arrives on the partitions it owns (their produce rates over the lag window, stuck ones left
out) over that capacity; above 1 its lag grows without end.

At an observation with lag, a member with a load report of its own and a measured capacity whose
utilisation is above 1 + :data:`streaming.lag.capacity.RISE` (it cannot keep up) triggers
``utilisation`` at once: none of lag skew's streak, imbalance or ``min_total_lag``. So does a
measured member over the target with records waiting after every poll of its last report
(:func:`draining_slowly`): it keeps up at best, and its backlog drains slowly or not at all. It
waits out ``cooldown_s`` since the group's previous recommendation, as lag skew does. The proposal
stands only when it brings every measured member within the target utilisation, 1 -
``policy.capacity_headroom``, or, where no plan can, to where every measured member keeps up, and
hands a member that does not keep up (:func:`behind_now`) nothing more: so a group where every
consumer is slow (a shared downstream: no assignment keeps up) gets no recommendation, even while
only one of them has said so. Only measured members count: a group of alike consumers with room to
spare shows none (their reports are lower bounds), so noise in their load moves nothing. Giving
load back to a member that recovers is not done here (its measure rises, #46 item 5).

Example (headroom 0.2, target 0.8): 12 partitions of 20/s, range gives each of C0, C1, C2 four.
C0 reports 60/s at busy 1.0 (measured: 60/s), C1 and C2 80/s at busy 0.67 (at least 120/s). C0 is
at 80 / 60 = 1.33: the trigger fires, naming C0 (``{"member_id": "C0", "client_id": "c-0",
"utilisation": 1.3333, "records_per_s": 60.0, "arriving_per_s": 80.0}``). ``balanced`` plans C0
two partitions (0.67) and C1, C2 five (100/s: a lower bound is not held to the target); C0 is within
it, so it stands.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from assignors.model import Assignment, GroupSnapshot
from assignors.utilisation import measured_utilisation, member_utilisation
from streaming.config import PolicySettings
from streaming.lag import capacity, reported
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
    reports its load cannot keep up)."""
    if not may_trigger(state, ts, policy) or owners is None or not owners.count:
        return None
    over = members_over(state, owners, policy)
    return {"members": over, "target": round(target(policy), 6)} if over else None


def members_over(state: GroupState, owners: Owners, policy: PolicySettings) -> list[dict]:
    """The members with a load report of their own and a measured capacity (a report that measures,
    :func:`streaming.lag.reported.measure`, or the lag's estimate) that cannot keep up
    (utilisation above 1 + :data:`streaming.lag.capacity.RISE`), or that are over the target with
    records waiting after every poll of their last report (:func:`draining_slowly`), each with its
    figures."""
    reporting = {m.member_id for m in state.members or [] if m.identity in state.reported}
    if not reporting:
        return []
    caps = capacity.estimates(state.known_capacity(), state.lag, lambda: owners,
                              policy.stuck_observations, policy.capacity_headroom)
    if caps is None:
        return []
    arriving = capacity.inflow(state.lag, owners.by_topic, owners.count,
                               policy.stuck_observations)
    client = {m.member_id: m.client_id for m in state.members or []}
    lags = waiting_after_polls(state)
    out = []
    for i, mid in enumerate(owners.ids):
        held = caps.get(mid)
        if mid not in reporting or held is None or not held.measured:
            continue
        used = float(arriving[i]) / held.records_per_s
        waiting = lags.get(mid)
        if used > 1.0 + capacity.RISE or draining_slowly(used, waiting, policy):
            out.append({"member_id": mid, "client_id": client.get(mid),
                        "utilisation": round(used, 4),
                        "records_per_s": round(held.records_per_s, 3),
                        "arriving_per_s": round(float(arriving[i]), 3),
                        **({} if waiting is None else {"records_lag_min": waiting})})
    return out


def draining_slowly(used: float, waiting: int | None, policy: PolicySettings) -> bool:
    """Whether a member keeps a backlog it drains slowly or not at all: over the target utilisation
    with records waiting after every poll of its last report. Live (``slowdown``), a first shed left
    the slow member at its capacity: it kept up, so it never rose over 1 + ``RISE`` again, and its
    backlog stayed for the rest of the run; a plan within the target drains it."""
    return waiting is not None and waiting > 0 and used > target(policy) + SLACK


def waiting_after_polls(state: GroupState) -> dict[str, int]:
    """member id -> the least records lag its last report saw after a poll, where it said."""
    return {m.member_id: entry[5] for m in state.members or []
            if (entry := state.reported.get(m.identity)) is not None and len(entry) > 5
            and entry[5] is not None}


def without_room(state: GroupState, owners: Owners, stuck_after: int) -> dict[str, float]:
    """member id -> the most (records/s) a plan may hand it, or what it holds if that is more, for
    the members known to have little room: one that does not keep up now (:func:`behind_now`, by
    its lag or its own report) none, 0.0, whatever bound its report gives (a report may be from
    before it slowed: live, in ``all-slow`` the three slowed at once, and the first to say so was
    shed onto the other two); one whose report is busy at or above
    :data:`streaming.lag.reported.BEHIND_BUSY` without measuring it (not behind yet), the lower
    bound its report gives, a bound close to what it can do."""
    out = {}
    for m in state.members or []:
        entry = state.reported.get(m.identity)
        if entry is None or entry[1] < reported.BEHIND_BUSY or entry[3] is not None:
            continue
        bound = reported.reported_capacity(entry[1], entry[2])
        if bound is not None:
            out[m.member_id] = bound
    return out | dict.fromkeys(behind_now(state, owners, stuck_after), 0.0)


def behind_now(state: GroupState, owners: Owners, stuck_after: int,
               by_lag: bool = True) -> list[str]:
    """The members that do not keep up at this observation: more arrives on what they own than
    they consume, by :data:`streaming.lag.capacity.RISE`, over the lag's window (``by_lag``) or by
    their own last report while busy at least :data:`streaming.lag.reported.BEHIND_BUSY` (its few
    seconds see a slowdown the lag's window is still averaging away: live, in ``all-slow`` the
    peers of the member shed first read 65-69/s at busy 0.85-0.88 against 80/s arriving)."""
    if not owners.count or not state.lag:
        return []
    late = (capacity.behind(state.lag, owners.by_topic, owners.count, stuck_after).tolist()
            if by_lag else [False] * owners.count)
    arriving = capacity.inflow(state.lag, owners.by_topic, owners.count, stuck_after)
    # a report busy under BEHIND_BUSY reads less than arrives for want of records, not of speed: a
    # window from before production began, or before a rebalance handed the member more
    said = {m.member_id: entry[2] for m in state.members or []
            if (entry := state.reported.get(m.identity)) is not None
            and entry[1] >= reported.BEHIND_BUSY}
    return [mid for i, mid in enumerate(owners.ids)
            if late[i] or (mid in said and arriving[i] >= said[mid] * (1.0 + capacity.RISE))]


def no_harm(snapshot: GroupSnapshot, current: Assignment, proposed: Assignment,
            behind: Iterable[str]) -> bool:
    """Whether ``proposed`` hands no member that does not keep up (``behind``, :func:`behind_now`)
    more than it holds, and leaves the busiest measured member no busier than it is now or than it
    can keep up with (utilisation 1): the rule every lag move keeps. Backlog moved is no help when
    the member it goes to falls behind for good (live, ``all-slow``: every member slowed at once,
    and lag skew evened the backlog out onto members that could not read their own)."""
    before, after = (measured_utilisation(snapshot, a) for a in (current, proposed))
    return (after is None or after <= max(1.0, before or 0.0) + SLACK) and _within_bounds(
        snapshot, current, proposed, dict.fromkeys(behind, 0.0))


def stands(figures: dict, snapshot: GroupSnapshot, current: Assignment, proposed: Assignment,
           policy: PolicySettings, near: Mapping[str, float] | None = None) -> bool:
    """Whether the proposal brings every measured member within the target, or a group where one
    cannot keep up to one where all can (the utilisations of measured members: a lower bound's is
    at most its figure, :func:`assignors.utilisation.measured_utilisation`), and hands no member
    :func:`without_room` (``near``: id -> its bound) more than it holds or than its bound over
    the target (what the plan itself assumes a bound can take,
    :mod:`assignors.balanced.utilisation`); the highest before and after join the figures. A plan
    that rescues one member by loading a peer nearly as busy or already falling behind, not
    measured yet, only moves the lag (every consumer slow: a shared downstream)."""
    before, after = (measured_utilisation(snapshot, a) for a in (current, proposed))
    most = {mid: b / target(policy) for mid, b in (near or {}).items()}
    if before is None or after is None or not _within_bounds(snapshot, current, proposed, most):
        return False
    figures["before"], figures["after"] = round(before, 4), round(after, 4)
    within = after <= target(policy) + SLACK
    rescued = before > 1.0 + SLACK and after <= 1.0 + SLACK
    return after < before - SLACK and (within or rescued)


def _within_bounds(snapshot: GroupSnapshot, current: Assignment, proposed: Assignment,
                   near: Mapping[str, float]) -> bool:
    """Whether no member in ``near`` (id -> the most it may hold) is handed more than that or than
    it holds now."""
    if not near:
        return True
    ones = {m.member_id: 1.0 for m in snapshot.members}
    before, after = (member_utilisation(snapshot, a, ones) for a in (current, proposed))
    return all(after.get(mid, 0.0) <= max(bound, before.get(mid, 0.0)) + SLACK
               for mid, bound in near.items())

"""One group, one batch of its events: update the state and recommend, observation by observation.

:func:`process` is the job's entry. It lets :func:`streaming.state.ingest.observations` apply the
events to the state in a fixed order, one observation (one ``ts``) at a time, and decides on each
one whether the group gets a recommendation (:func:`recommend`) once the observation is whole: an
event after it has arrived, or every partition has its reading (:mod:`streaming.state.whole`). A
poll cut between micro-batches is held undecided (``GroupState.undecided``) until its rest comes or
the next poll does, so the same events give the same recommendations however they were cut into
micro-batches, re-sent or replayed. Each observation counts once towards the skew streak: a re-sent
poll changes nothing, and metadata arriving after its poll was decided on reads that observation
again from the streak before it rather than counting it twice.

On each whole observation:

- metadata changes (membership, partition count, rack set; :mod:`streaming.state.changes`) are
  triggers of their own;
- an observation with lag where a member is about to lose records to retention, or did, is
  the ``retention_risk`` trigger at once (:mod:`streaming.policy.retention_risk`), whatever
  the skew streak;
- an observation with lag updates the skew streak, and a streak of N outside the cooldown is the
  ``lag_skew`` trigger; member lag is read in records or, with ``policy.skew_on = "seconds"``, as
  each member's time to catch up (:mod:`streaming.policy.lag_skew`);
- with any trigger, the configured assignor proposes an assignment for the group as it is now; a
  ``rack_change`` stands only if cross-rack partitions drop, a ``retention_risk`` only if a member
  at risk gets less load, a ``lag_skew`` only if the max member lag (in the unit of ``skew_on``)
  drops by ``min_improvement``; whatever stands becomes one recommendation with before/after
  figures, in records and in seconds (:mod:`streaming.policy.lag_seconds`). One
  :class:`~streaming.policy.lag_seconds.LagPass` per observation serves the reading and the figures.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence

from assignors import metrics, registry
from assignors.errors import AssignorError
from assignors.model import Assignment, GroupSnapshot
from streaming.config import PolicySettings
from streaming.contracts.recommendation import (
    GIVE_BACK,
    LAG_SKEW,
    MEMBERSHIP_CHANGE,
    PARTITION_COUNT_CHANGE,
    RACK_CHANGE,
    RETENTION_RISK,
    SLOW_MEMBERS,
    UTILISATION,
    Recommendation,
)
from streaming.lag import capacity
from streaming.lag.owners import Owners
from streaming.policy import (
    block,
    give_back,
    lag_seconds,
    lag_skew,
    retention_risk,
    slow_members,
    utilisation,
)
from streaming.policy.outcome import Proposal, record
from streaming.state import waiting, whole
from streaming.state.changes import Changes
from streaming.state.group_state import METADATA_MISSING, GroupState
from streaming.state.ingest import Block, Events, columns, last_ts, observations, split_at
from streaming.state.snapshot import to_snapshot

log = logging.getLogger(__name__)


def process(state: GroupState, events: Events, policy: PolicySettings) -> list[Recommendation]:
    """Apply a group's events and return its recommendations. ``events``: parsed rows as a
    DataFrame, a dict of column arrays, or a list of dicts. An observation is decided on once it
    is whole (:mod:`streaming.state.whole`): one an earlier call left undecided first takes the
    rest of its rows, and is decided before anything later is applied."""
    cols = waiting.resumed(state, columns(events))
    held = state.undecided
    if held is None:
        return _observe(state, cols, policy)
    rest, later = split_at(cols, held[0])
    closing = last_ts(later) is not None
    out = _observe(state, rest, policy, blocks=False, hold=not closing)
    if not closing:
        return out
    if state.undecided is not None:  # closed by what comes after it
        t, lag_changed, changes = state.undecided[:3]
        _count_missing(state, t, max([0, *state.undecided[3:4]]))
        state.undecided = None
        out += _decide(state, t, lag_changed, Changes(**changes), None, policy)
    return out + _observe(state, later, policy)


def _observe(state: GroupState, cols: dict, policy: PolicySettings,
             blocks: bool = True, hold: bool = True) -> list[Recommendation]:
    """The rows applied observation by observation, each decided on once whole; the last one is
    held undecided when it is not (``hold``: and its lag too while its metadata is missing)."""
    out = []
    last = last_ts(cols)
    for seen in observations(state, cols, policy.lag_history, policy.stuck_observations,
                             blocks=blocks, hold=hold):
        if isinstance(seen, Block):  # polls read ahead: those decided in one pass are applied
            seen.take(block.decided(state, seen, policy))
            continue
        t = seen.ts
        if seen.owners is not None and (seen.lag_changed or seen.changes.applied):
            capacity.observe(state.capacity, state.lag, seen.owners, t, policy.stuck_observations)
        lag_changed, changes, said = seen.lag_changed, seen.changes, seen.metadata_events
        held = state.undecided
        if held is not None and held[0] == t:  # more of the observation held undecided
            state.undecided = None
            lag_changed, changes = held[1] or lag_changed, Changes(**held[2]).then(changes)
            said = max([said, *held[3:4]])
        # an event after it has come (in this call or an earlier one): the poll is all here
        closed = t < state.last_ts or (last is not None and t < last)
        if closed or whole.complete(state, t, said):
            _count_missing(state, t, said)
            out += _decide(state, t, lag_changed, changes, seen.owners, policy)
        else:
            state.undecided = [t, lag_changed, dataclasses.asdict(changes), said]
    return out


def _count_missing(state: GroupState, t: int, said: int) -> None:
    """Count the newest poll, at ``t``, decided without every one of the ``said`` metadata events
    its lag counts (``GroupState.counters``): they come after the poll that closed it, which the
    collector's order rules out, unless a batch cap (``job.max_offsets_per_trigger``) cut the
    metadata topic a poll behind or a metadata event was rejected. The decision may then differ
    from one with the events in; the job reports the count (:mod:`streaming.job.stateful`). An
    older poll read again (``t`` below the newest) is not counted: the state holds newer metadata
    than its own."""
    if said and t >= state.last_ts and state.metadata_events_at(t) < said:
        state.count(METADATA_MISSING)


def _decide(state: GroupState, t: int, lag_changed: bool, changes: Changes,
            owners: Owners | None, policy: PolicySettings) -> list[Recommendation]:
    """The decision on the whole observation at ``t``: its recommendation, if any."""
    # a newer observation with lag moves the streak on; more of the one last counted (its metadata
    # came late, or it was re-sent) reads it again, unless it was decided on
    reads_skew = (lag_changed and t > state.skew_ts) or (
        t == state.skew_ts and (lag_changed or changes.applied) and state.last_rec_ts != t)
    rec = recommend(state, changes, reads_skew, t, policy, owners)
    return [] if rec is None else [rec]


def skew_reading(state: GroupState, stuck_after: int, headroom: float,
                 owners: Owners | None = None, on: str = lag_skew.RECORDS,
                 lp: lag_seconds.LagPass | None = None) -> lag_skew.SkewReading | None:
    """Lag per member under the current assignment, stuck partitions left out, in records or (``on``
    "seconds") as times to catch up; ``lp``: this observation's pass when the caller has one."""
    owners = owners or state.owners()
    if not owners.count:
        return None
    lp = lp or lag_seconds.LagPass(state, stuck_after, headroom)
    ids = owners.ids
    if on == lag_skew.SECONDS:
        now = lag_seconds.members(lp, owners.by_topic, ids)
        return lag_skew.reading(now.lag, now.seconds())
    lag = lag_seconds.member_lag(lp, owners.by_topic, owners.count)
    return lag_skew.records_reading(lag, lp.capacity, ids)


def recommend(state: GroupState, changes: Changes, reads_skew: bool, ts: int,
              policy: PolicySettings, owners: Owners | None = None) -> Recommendation | None:
    """The recommendation this observation of the group triggers, or None; updates the skew streak
    when the observation reads lag skew (``reads_skew``). Where nothing stands at an observation
    with lag, load may go back to a member that recovered (:mod:`streaming.policy.give_back`)."""
    triggers = metadata_triggers(changes, policy)
    lp = lag_seconds.LagPass(state, policy.stuck_observations, policy.capacity_headroom)
    if reads_skew:
        readable, lag_trigger = skew_trigger(state, ts, policy, owners, lp)
        if not readable:
            return None
        if lag_trigger is not None:
            triggers[LAG_SKEW] = lag_trigger
        at_risk = retention_risk.trigger(state, ts, policy, owners or state.owners())
        if at_risk is not None:
            triggers[RETENTION_RISK] = at_risk
        over = utilisation.trigger(state, ts, policy, owners or state.owners())
        if over is not None:
            triggers[UTILISATION] = over
    rec = standing(state, ts, triggers, policy, lp) if triggers else None
    if rec is not None or not reads_skew:
        return rec
    back = give_back.trigger(state, ts, policy, owners or state.owners())
    return None if back is None else give_back_step(state, ts, back, policy, lp)


def standing(state: GroupState, ts: int, triggers: dict[str, dict], policy: PolicySettings,
             lp: lag_seconds.LagPass) -> Recommendation | None:
    """The assignor's proposal for the observation's ``triggers``, recorded with those it serves;
    None when none does."""
    proposal = propose(state, policy, skew_only=triggers.keys() == {LAG_SKEW})
    if proposal is None:
        return None

    def seconds_figures() -> lag_seconds.LagSeconds:
        return _seconds(state, proposal, policy, lp)

    # each read only for the trigger that needs it: a skew trigger that holds proposes at every
    # observation. Lag skew reads the members' own reports only: the lag's window misreads
    # consumers starting up (live, zipf's first move came 2-4 s later and its p95 was x1.7)
    behind = (utilisation.behind_now(state, state.owners(), policy.stuck_observations,
                                     by_lag=False) if LAG_SKEW in triggers else [])
    near = (utilisation.without_room(state, state.owners(), policy.stuck_observations)
            if UTILISATION in triggers else None)
    seconds = keep_what_stands(triggers, proposal, policy, seconds_figures, near, behind)
    if not triggers:
        return None
    return record(state, ts, triggers, proposal, seconds or seconds_figures(), policy)


def give_back_step(state: GroupState, ts: int, figures: dict, policy: PolicySettings,
                   lp: lag_seconds.LagPass) -> Recommendation | None:
    """The ``give_back`` recommendation of this observation: its step
    (:func:`streaming.policy.give_back.plan`) in place of the assignor's plan, when it stands."""
    proposal = propose(state, policy, plan=lambda snap, now: give_back.plan(figures, snap, now,
                                                                           policy))
    if proposal is None or not give_back.stands(figures, proposal.snapshot, proposal.current,
                                                proposal.proposed):
        return None
    return record(state, ts, {GIVE_BACK: figures}, proposal, _seconds(state, proposal, policy, lp),
                  policy)


def _seconds(state: GroupState, proposal: Proposal, policy: PolicySettings,
             lp: lag_seconds.LagPass) -> lag_seconds.LagSeconds:
    """The proposal's before/after figures in seconds."""
    return lag_seconds.figures(state, [m.member_id for m in proposal.snapshot.members],
                               proposal.current, proposal.proposed, policy.stuck_observations,
                               policy.capacity_headroom, lp)


def metadata_triggers(changes: Changes, policy: PolicySettings) -> dict[str, dict]:
    """The metadata changes of the observation that are triggers under ``policy``."""
    if not changes.any():
        return {}  # the usual observation, lag alone
    on = {MEMBERSHIP_CHANGE: policy.membership_change,
          PARTITION_COUNT_CHANGE: policy.partition_count_change,
          RACK_CHANGE: policy.rack_change}
    return {name: figures for name, figures in changes.triggers().items() if on.get(name, False)}


def skew_trigger(state: GroupState, ts: int, policy: PolicySettings, owners: Owners | None,
                 lp: lag_seconds.LagPass) -> tuple[bool, dict | None]:
    """The skew streak moved on by this observation (a newer one, or the one last counted read
    again: :func:`streaming.policy.lag_skew.streak_from`): (False, None) when no member owns
    anything (the streak restarts and nothing is recommended), else (True, the ``lag_skew``
    trigger's figures or None)."""
    reading = skew_reading(state, policy.stuck_observations, policy.capacity_headroom, owners,
                           policy.skew_on, lp)
    if reading is None:
        lag_skew.count(state, ts, 0)
        return False, None
    lag_skew.count(state, ts, lag_skew.next_streak(lag_skew.streak_from(state, ts), reading,
                                                   policy.skew_threshold, policy.min_total_lag))
    if lag_skew.fires(reading.imbalance, state.skew_streak, ts, state.last_rec_ts,
                      policy.skew_observations, policy.cooldown_s):
        figures = reading.details() | {"observations": state.skew_streak,
                                       "threshold": policy.skew_threshold}
        slow = slow_members.over_capacity(state, owners or state.owners(),
                                          policy.stuck_observations, policy.capacity_headroom)
        return True, figures | ({SLOW_MEMBERS: slow} if slow else {})
    return True, None


def propose(state: GroupState, policy: PolicySettings, skew_only: bool = False,
            plan: Callable[[GroupSnapshot, Assignment], Assignment] | None = None
            ) -> Proposal | None:
    """The assignor's proposal and both assignments' metrics; None without a snapshot or
    when it fails. ``skew_only``: the observation's one trigger is ``lag_skew``; None, without the
    assignor, when no assignment could stand for it (:func:`can_stand`). ``plan``: what proposes
    in place of the assignor, given the snapshot and the current assignment."""
    snapshot = to_snapshot(state, policy.stuck_observations, policy.capacity_headroom)
    if snapshot is None:
        return None
    current = snapshot.current_assignment()
    before = metrics.compute_metrics(snapshot, current, current=current,
                                     horizon_s=policy.rate_horizon_s)
    if skew_only and not can_stand(snapshot, before, policy):
        return None
    try:
        proposed = (registry.assign(policy.assignor, snapshot, **policy.assignor_kwargs())
                    if plan is None else plan(snapshot, current))
    except AssignorError as e:
        log.warning("group %s: assignor %s failed: %s", state.group, policy.assignor, e)
        return None
    after = metrics.compute_metrics(snapshot, proposed, current=current,
                                    horizon_s=policy.rate_horizon_s, bound=before.lower_bound)
    return Proposal(snapshot, current, proposed, before, after)


def can_stand(snapshot: GroupSnapshot, before: metrics.Metrics, policy: PolicySettings) -> bool:
    """Whether some assignment could cut the max member lag in records (at the fastest member's
    rate, as :func:`keep_what_stands` reads it) by ``min_improvement``: not when even the lower
    bound on it does not. A group skewed by one partition is the usual case: its trigger holds at
    every observation, and the assignor would run at each for a proposal that cannot stand. The
    decision is the same either way; only the work is saved. In seconds (the figures come from the
    proposal), or for an assignor that may leave a partition to nobody (its max may be under the
    bound): always."""
    if policy.skew_on != lag_skew.RECORDS or registry.withholds(policy.assignor):
        return True
    best = metrics.max_scaled_lower_bound(snapshot, policy.rate_horizon_s, before.lower_bound)
    # every assignment's max is at least ``best``; the margin covers the sums' rounding
    return lag_skew.improves(metrics.max_scaled_load(snapshot, before), best * (1 - 1e-9),
                             policy.min_improvement)


def keep_what_stands(
        triggers: dict[str, dict], proposal: Proposal, policy: PolicySettings,
        seconds_figures: Callable[[], lag_seconds.LagSeconds],
        near: Mapping[str, float] | None = None,
        behind: Sequence[str] = ()) -> lag_seconds.LagSeconds | None:
    """Drop the triggers the proposal does not serve: ``rack_change`` unless cross-rack partitions
    drop, ``retention_risk`` unless a member at risk gets less load, ``utilisation`` unless every
    member is within its target (or all can keep up where one could not), ``lag_skew`` unless the
    max member lag (in the unit of ``skew_on``) drops by ``min_improvement`` and does no harm: no
    member that does not keep up (``behind``) is handed more, no measured member pushed past what
    it can read (:func:`streaming.policy.utilisation.no_harm`). Returns the figures in seconds
    when the decision needed them (a skew streak whose proposals do not improve enough
    reaches this point at every observation, so they are not computed otherwise)."""
    before, after = proposal.before, proposal.after
    if RACK_CHANGE in triggers and not after.cross_rack_partitions < before.cross_rack_partitions:
        del triggers[RACK_CHANGE]
    if RETENTION_RISK in triggers and not retention_risk.stands(
            triggers[RETENTION_RISK], before.member_loads, after.member_loads):
        del triggers[RETENTION_RISK]
    if UTILISATION in triggers and not utilisation.stands(
            triggers[UTILISATION], proposal.snapshot, proposal.current, proposal.proposed, policy,
            near):
        del triggers[UTILISATION]
    if LAG_SKEW in triggers and not utilisation.no_harm(proposal.snapshot, proposal.current,
                                                        proposal.proposed, behind):
        del triggers[LAG_SKEW]
    if LAG_SKEW not in triggers:
        return None
    seconds = None
    if policy.skew_on == lag_skew.SECONDS:
        seconds = seconds_figures()
        top = (seconds.before, seconds.after)
    else:
        # in records at the fastest member's rate: what balanced minimised (plain
        # records when alike)
        top = (metrics.max_scaled_load(proposal.snapshot, before),
               metrics.max_scaled_load(proposal.snapshot, after))
    if lag_skew.improves(*top, policy.min_improvement):
        triggers[LAG_SKEW]["improvement"] = round((top[0] - top[1]) / top[0], 4)
    else:
        del triggers[LAG_SKEW]
    return seconds

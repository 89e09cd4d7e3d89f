"""One group, one batch of its events: update the state and recommend, observation by observation.

:func:`process` is the job's entry. It lets :func:`streaming.state.ingest.observations` apply the events
to the state in a fixed order, one observation (one ``ts``) at a time, and after each one decides
whether the group gets a recommendation (:func:`recommend`). The same events give the same
recommendations however they were cut into micro-batches, re-sent or replayed: each observation counts
once towards the skew streak. A re-sent poll changes nothing, and the rest of a poll split across
batches (or its metadata arriving a batch late) reads that observation again from the streak before it
rather than counting it twice; a decision already made on the part of a poll that arrived first stands
(with the lag in seconds it read then: the history held that observation's first part only).

After each observation:

- metadata changes (membership, partition count, rack set; :mod:`streaming.state.changes`) are
  triggers of their own;
- an observation with lag updates the skew streak, and a streak of N outside the cooldown is the
  ``lag_skew`` trigger; member lag is read in records or, with ``policy.skew_on = "seconds"``, as each
  member's time to catch up (:mod:`streaming.policy.lag_skew`);
- with any trigger, the configured assignor proposes an assignment for the group as it is now; a
  ``rack_change`` stands only if cross-rack partitions drop, a ``lag_skew`` only if the max member lag
  (in the unit of ``skew_on``) drops by ``min_improvement``; whatever stands becomes one recommendation
  with before/after figures, in records and in seconds (:mod:`streaming.policy.lag_seconds`). One
  :class:`~streaming.policy.lag_seconds.LagPass` per observation serves the reading and the figures.
"""

from __future__ import annotations

import logging

from assignors import metrics, registry
from assignors.errors import AssignorError
from streaming.config import PolicySettings
from streaming.contracts.recommendation import Recommendation, bound_below, finite, records
from streaming.lag.rules import finite_or_none
from streaming.policy import lag_seconds, lag_skew
from streaming.state.changes import Changes
from streaming.state.group_state import GroupState
from streaming.state.ingest import Events, Owners, observations
from streaming.state.snapshot import to_snapshot

log = logging.getLogger(__name__)


def process(state: GroupState, events: Events, policy: PolicySettings) -> list[Recommendation]:
    """Apply a group's events and return its recommendations. ``events``: parsed rows as a DataFrame, a
    dict of column arrays, or a list of dicts."""
    out = []
    for seen in observations(state, events, policy.lag_history):
        t = seen.ts
        skew: str | None = None
        if seen.lag_changed and t > state.skew_ts:
            skew = "new"
        elif t == state.skew_ts and (seen.lag_changed or seen.changes.applied) and state.last_rec_ts != t:
            skew = "again"
        rec = recommend(state, seen.changes, skew, t, policy, seen.owners)
        if rec is not None:
            out.append(rec)
    return out


def skew_reading(state: GroupState, stuck_after: int, owners: Owners | None = None, on: str = lag_skew.RECORDS,
                 lp: lag_seconds.LagPass | None = None) -> lag_skew.SkewReading | None:
    """Lag per member under the current assignment, stuck partitions left out, in records or (``on``
    "seconds") as times to catch up; ``lp``: this observation's pass when the caller has one."""
    owners = owners or Owners.of(state)
    if not owners.count:
        return None
    lp = lp or lag_seconds.LagPass(state, stuck_after)
    if on == lag_skew.SECONDS:
        now = lag_seconds.members(lp, owners.by_topic, owners.count)
        return lag_skew.reading(now.lag, now.seconds())
    return lag_skew.reading(lag_seconds.member_lag(lp, owners.by_topic, owners.count))


def recommend(state: GroupState, changes: Changes, skew: str | None, ts: int, policy: PolicySettings,
              owners: Owners | None = None) -> Recommendation | None:
    """The recommendation this observation of the group triggers, or None; updates the skew streak.

    ``skew``: how the observation reads lag skew: ``new`` (a newer observation: the streak moves on),
    ``again`` (more of the observation last counted arrived: it is read again from the streak before
    it), or None (no lag read)."""
    triggers = {
        name: figures for name, figures in changes.triggers().items()
        if (name == "membership_change" and policy.membership_change)
        or (name == "partition_count_change" and policy.partition_count_change)
        or (name == "rack_change" and policy.rack_change)
    }
    lp = lag_seconds.LagPass(state, policy.stuck_observations)
    if skew is not None:
        if skew == "new":
            state.skew_prev, state.skew_ts = state.skew_streak, ts
        reading = skew_reading(state, policy.stuck_observations, owners, policy.skew_on, lp)
        if reading is None:
            state.skew_streak = 0
            return None
        # counted from the streak before this observation: reading it again never counts it twice
        state.skew_streak = lag_skew.next_streak(state.skew_prev, reading, policy.skew_threshold,
                                                 policy.min_total_lag)
        if reading.known and state.skew_streak >= policy.skew_observations and not lag_skew.in_cooldown(
                ts, state.last_rec_ts, policy.cooldown_s):
            triggers["lag_skew"] = reading.details() | {"observations": state.skew_streak,
                                                        "threshold": policy.skew_threshold}
    if not triggers:
        return None
    snapshot = to_snapshot(state, policy.stuck_observations)
    if snapshot is None:
        return None
    current = snapshot.current_assignment()

    try:
        proposed = registry.assign(policy.assignor, snapshot, **policy.assignor_kwargs())
    except AssignorError as e:
        log.warning("group %s: assignor %s failed: %s", state.group, policy.assignor, e)
        return None
    before = metrics.compute_metrics(snapshot, current, current=current, horizon_s=policy.rate_horizon_s)
    after = metrics.compute_metrics(snapshot, proposed, current=current, horizon_s=policy.rate_horizon_s,
                                    bound=before.lower_bound)

    def seconds_figures() -> lag_seconds.LagSeconds:
        return lag_seconds.figures(state, [m.member_id for m in snapshot.members], current, proposed,
                                   policy.stuck_observations, lp)

    # the figures in seconds only when the decision needs them or a recommendation is made: a skew streak
    # whose proposals do not improve enough reaches this point at every observation
    seconds = None
    if "rack_change" in triggers and not after.cross_rack_partitions < before.cross_rack_partitions:
        del triggers["rack_change"]
    if "lag_skew" in triggers:
        if policy.skew_on == lag_skew.SECONDS:
            seconds = seconds_figures()
            top = (seconds.before, seconds.after)
        else:
            top = (before.max_load, after.max_load)
        if lag_skew.improves(*top, policy.min_improvement):
            triggers["lag_skew"]["improvement"] = round((top[0] - top[1]) / top[0], 4)
        else:
            del triggers["lag_skew"]
    if not triggers:
        return None
    if seconds is None:
        seconds = seconds_figures()

    state.version += 1
    state.last_rec_ts = ts if state.last_rec_ts is None else max(state.last_rec_ts, ts)
    state.skew_streak = 0
    by_id = {m.member_id: m for m in state.members or []}
    rec = Recommendation(
        group=state.group, version=state.version, event_ts=ts, generation=state.generation, triggers=triggers,
        assignor=policy.assignor,
        assignment=[
            {"member_id": mid, "instance_id": by_id[mid].instance_id if mid in by_id else None,
             "client_id": by_id[mid].client_id if mid in by_id else None,
             "rack": by_id[mid].rack if mid in by_id else None, "partitions": sorted(parts)}
            for mid, parts in sorted(proposed.items())
        ],
        before=_figures(before), after=_figures(after), lower_bound=bound_below(after.lower_bound),
        partitions_moved=after.partitions_moved, lag_moved=records(after.load_moved),
        stuck_partitions=sorted(snapshot.stuck), mode=policy.mode_for(state.group),
        lag_seconds={"before_catch_up_s": finite_or_none(seconds.before),
                     "after_catch_up_s": finite_or_none(seconds.after), "lag_age_s": finite_or_none(seconds.age)},
    )
    state.last_rec_id = rec.id
    return rec


def _figures(m: metrics.Metrics) -> dict[str, float | None]:
    """The before/after figures: lag in exact, saturated records; imbalance a finite double or None."""
    imbalance = finite(m.imbalance)
    return {"max_member_lag": records(m.max_load), "imbalance": None if imbalance is None else round(imbalance, 6),
            "cross_rack_partitions": m.cross_rack_partitions}

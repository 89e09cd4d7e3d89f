"""One group, one batch of its events: update the state and decide, observation by observation.

An observation is every event of the group with one ``ts`` (the collector stamps a whole poll with one
time). Events are applied in a fixed order (ts, then members, partitions, lag, then source position),
so the same events give the same decisions however they were cut into micro-batches or replayed.

After each observation:

- metadata changes (membership, partition count, rack set) are triggers of their own;
- an observation with lag updates the skew streak, and a streak of N outside the cooldown is the
  ``lag_skew`` trigger;
- with any trigger, the configured assignor proposes an assignment for the group as it is now; a
  ``rack_change`` stands only if cross-rack partitions drop, a ``lag_skew`` only if the max member lag
  drops by ``min_improvement``; whatever stands becomes one recommendation with before/after figures.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from itertools import groupby
from typing import Any

from assignors import metrics, registry
from assignors.errors import AssignorError
from streaming.config import PolicySettings
from streaming.policy import lag_skew
from streaming.recommendation import Recommendation
from streaming.state import update
from streaming.state.group_state import GroupState
from streaming.state.snapshot import to_snapshot

log = logging.getLogger(__name__)


def event_order(e: dict[str, Any]) -> tuple:
    return (int(e["ts"]), update.TYPE_ORDER[e["type"]], e.get("topic") or "", e.get("partition") or 0,
            e.get("source_topic") or "", e.get("source_partition") or 0, e.get("source_offset") or 0)


def process(state: GroupState, events: Iterable[dict[str, Any]], policy: PolicySettings) -> list[Recommendation]:
    out = []
    for ts, observation in groupby(sorted(events, key=event_order), key=lambda e: int(e["ts"])):
        changes = update.apply(state, observation, policy.lag_history)
        rec = decide(state, changes, ts, policy)
        if rec is not None:
            out.append(rec)
    return out


def skew_reading(snapshot, current) -> lag_skew.SkewReading:
    """Lag per member under the current assignment, stuck partitions left out."""
    loads = {m.member_id: 0.0 for m in snapshot.members}
    for member, parts in current.items():
        if member in loads:
            loads[member] = float(sum(snapshot.lag_of(tp) for tp in parts if tp not in snapshot.stuck))
    values = list(loads.values())
    return lag_skew.SkewReading(metrics.imbalance(values), sum(values), max(values, default=0.0))


def decide(state: GroupState, changes: update.Changes, ts: int, policy: PolicySettings) -> Recommendation | None:
    triggers = {
        name: figures for name, figures in changes.triggers().items()
        if (name == "membership_change" and policy.membership_change)
        or (name == "partition_count_change" and policy.partition_count_change)
        or (name == "rack_change" and policy.rack_change)
    }
    snapshot = to_snapshot(state, policy.stuck_observations)
    if snapshot is None:
        state.skew_streak = 0
        return None
    current = snapshot.current_assignment()
    if changes.saw_lag:
        reading = skew_reading(snapshot, current)
        state.skew_streak = lag_skew.next_streak(state.skew_streak, reading, policy.skew_threshold,
                                                 policy.min_total_lag)
        if state.skew_streak >= policy.skew_observations and not lag_skew.in_cooldown(
                ts, state.last_rec_ts, policy.cooldown_s):
            triggers["lag_skew"] = {
                "imbalance": round(reading.imbalance, 4), "total_lag": reading.total_lag,
                "max_member_lag": reading.max_member_lag, "observations": state.skew_streak,
                "threshold": policy.skew_threshold,
            }
    if not triggers:
        return None

    options = {"horizon_s": policy.rate_horizon_s} if policy.assignor == "balanced" else {}
    try:
        proposed = registry.assign(policy.assignor, snapshot, **options)
    except AssignorError as e:
        log.warning("group %s: assignor %s failed: %s", state.group, policy.assignor, e)
        return None
    before = metrics.compute_metrics(snapshot, current, current=current, horizon_s=policy.rate_horizon_s)
    after = metrics.compute_metrics(snapshot, proposed, current=current, horizon_s=policy.rate_horizon_s)

    if "rack_change" in triggers and not after.cross_rack_partitions < before.cross_rack_partitions:
        del triggers["rack_change"]
    if "lag_skew" in triggers:
        if lag_skew.improves(before.max_load, after.max_load, policy.min_improvement):
            triggers["lag_skew"]["improvement"] = round((before.max_load - after.max_load) / before.max_load, 4)
        else:
            del triggers["lag_skew"]
    if not triggers:
        return None

    state.version += 1
    state.last_rec_ts = ts
    state.skew_streak = 0
    by_id = {m["member_id"]: m for m in state.members or []}
    rec = Recommendation(
        group=state.group, version=state.version, event_ts=ts, generation=state.generation, triggers=triggers,
        assignor=policy.assignor,
        assignment=[
            {"member_id": mid, "instance_id": by_id.get(mid, {}).get("instance_id"),
             "client_id": by_id.get(mid, {}).get("client_id"), "rack": by_id.get(mid, {}).get("rack"),
             "partitions": sorted(parts)}
            for mid, parts in sorted(proposed.items())
        ],
        before=_figures(before), after=_figures(after), lower_bound=after.lower_bound,
        partitions_moved=after.partitions_moved, lag_moved=after.load_moved,
        stuck_partitions=sorted(snapshot.stuck),
    )
    state.last_rec_id = rec.id
    return rec


def _figures(m: metrics.Metrics) -> dict[str, float]:
    return {"max_member_lag": m.max_load, "imbalance": round(m.imbalance, 6),
            "cross_rack_partitions": m.cross_rack_partitions}

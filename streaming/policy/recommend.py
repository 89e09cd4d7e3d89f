"""One group, one batch of its events: update the state and decide, observation by observation.

An observation is every event of the group with one ``ts`` (the collector stamps a whole poll with one
time). Events are applied in a fixed order (ts, then members, partitions, lag, then content), so the same
events give the same decisions however they were cut into micro-batches, re-sent or replayed:

- metadata older than what the state holds is ignored and counted (:mod:`streaming.state.update`), and
  the parts of a split event wait in the state until the event is whole;
- each observation counts once towards the skew streak: a re-sent poll changes nothing, and the rest of
  a poll split across batches (or its metadata arriving a batch late) reads that observation again from
  the streak before it rather than counting it twice. A decision already made on the part of a poll
  that arrived first stands;
- a lag row older than its partition's newest observation never moves its offsets back.

After each observation:

- metadata changes (membership, partition count, rack set) are triggers of their own;
- an observation with lag updates the skew streak, and a streak of N outside the cooldown is the
  ``lag_skew`` trigger;
- with any trigger, the configured assignor proposes an assignment for the group as it is now; a
  ``rack_change`` stands only if cross-rack partitions drop, a ``lag_skew`` only if the max member lag
  drops by ``min_improvement``; whatever stands becomes one recommendation with before/after figures.
"""

from __future__ import annotations

import itertools
import json
import logging
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from assignors import metrics, registry
from assignors.errors import AssignorError
from streaming import event_parts
from streaming.config import PolicySettings
from streaming.events import LAG
from streaming.policy import lag_skew
from streaming.recommendation import Recommendation
from streaming.state import update
from streaming.state.group_state import GroupState
from streaming.state.snapshot import to_snapshot

log = logging.getLogger(__name__)


def event_order(e: dict[str, Any]) -> tuple:
    """Metadata events of one ts: members, then partitions, by topic; the event's own content breaks a tie,
    so the order never depends on how the events reached the job."""
    return (int(e["ts"]), update.TYPE_ORDER[e["type"]], e.get("topic") or "",
            json.dumps(e, sort_keys=True, separators=(",", ":"), default=str))


# parsed event rows: a DataFrame, a dict of equal-length column arrays, or a list of dicts
Events = pd.DataFrame | dict[str, np.ndarray] | Iterable[dict[str, Any]]
LAG_COLUMNS = ("ts", "partition", "committed_offset", "end_offset")


def _columns(events: Events) -> dict[str, np.ndarray]:
    if isinstance(events, dict):
        return events
    if isinstance(events, pd.DataFrame):
        # a nullable integer column as objects: to_numpy() would give float64, inexact past 2**53
        return {c: events[c].to_numpy(dtype=object, na_value=None) if events[c].dtype.kind == "i"
                and isinstance(events[c].dtype, pd.api.extensions.ExtensionDtype) else events[c].to_numpy()
                for c in events.columns}
    rows = list(events)
    names = sorted({k for e in rows for k in e})
    cols = {}
    for name in names:
        col = np.empty(len(rows), dtype=object)  # filled one by one: list values stay lists
        for i, e in enumerate(rows):
            col[i] = e.get(name)
        cols[name] = col
    return cols


def _ints(cols: dict[str, np.ndarray], name: str, rows: np.ndarray) -> np.ndarray:
    """Column ``name`` at ``rows`` as int64, exactly: offsets go up to 2**63-1, beyond float64's 2**53.
    (A float column has already lost that precision; its values are taken as they are.)"""
    if name not in cols:
        return np.zeros(len(rows), dtype=np.int64)
    values = cols[name][rows]
    if values.dtype.kind in "iu":
        return values.astype(np.int64)
    if values.dtype == object:
        return np.array([0 if v is None or v is pd.NA else int(v) for v in values.tolist()], dtype=np.int64)
    return np.nan_to_num(values.astype(np.float64), nan=0).astype(np.int64)


def _metadata_event(cols: dict[str, np.ndarray], i: int) -> dict[str, Any]:
    """Row ``i`` as the event dict; the job's rows carry the metadata fields as JSON in ``detail``."""
    e = {n: v[i] for n, v in cols.items() if n != "detail"}
    e = {k: (None if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)) else v) for k, v in e.items()}
    detail = cols["detail"][i] if "detail" in cols else None
    if isinstance(detail, str):
        e |= json.loads(detail)
    return e


def process(state: GroupState, events: Events, policy: PolicySettings) -> list[Recommendation]:
    """Apply a group's events and return its recommendations. ``events``: parsed rows as a DataFrame, a
    dict of column arrays, or a list of dicts.

    Lag rows never become Python objects one by one: they are sorted, de-duplicated and applied as
    numpy arrays, one topic's poll at a time."""
    cols = _columns(events)
    if not cols or len(cols["type"]) == 0:
        return []
    is_lag = cols["type"] == LAG
    meta_by_ts: dict[int, list[dict]] = {}
    meta_rows = np.flatnonzero(~is_lag)
    if len(meta_rows):
        metadata = [_metadata_event(cols, i) for i in meta_rows]
        whole = [e for e in metadata if not event_parts.is_part(e)]
        whole += update.collect_parts(state, [e for e in metadata if event_parts.is_part(e)])
        for e in sorted(whole, key=event_order):
            meta_by_ts.setdefault(int(e["ts"]), []).append(e)

    lag_slices: dict[int, tuple[int, int]] = {}
    lag_rows = np.flatnonzero(is_lag)
    if len(lag_rows):
        topic_names, topic_codes = np.unique(cols["topic"][lag_rows].astype(str), return_inverse=True)
        ts, part, committed, end = (_ints(cols, c, lag_rows) for c in LAG_COLUMNS)
        order = np.lexsort((end, committed, part, topic_codes, ts))
        ts, part, committed, end, topic_codes = ts[order], part[order], committed[order], end[order], topic_codes[order]
        # one row per (ts, topic, partition): a duplicate (a replay, a resent poll) keeps the furthest offsets,
        # whatever order the copies came in
        keep = np.ones(len(ts), dtype=bool)
        keep[:-1] = (ts[1:] != ts[:-1]) | (topic_codes[1:] != topic_codes[:-1]) | (part[1:] != part[:-1])
        ts, part, committed, end, topic_codes = ts[keep], part[keep], committed[keep], end[keep], topic_codes[keep]
        starts = np.flatnonzero(np.r_[True, ts[1:] != ts[:-1]])
        bounds = np.r_[starts, len(ts)]
        lag_slices = {int(ts[a]): (int(a), int(b)) for a, b in itertools.pairwise(bounds)}

    out = []
    owners: Owners | None = None
    for t in sorted(meta_by_ts.keys() | lag_slices.keys()):
        changes = update.Changes()
        if t in meta_by_ts:
            update.apply_metadata(state, meta_by_ts[t], changes)
            if changes.applied:
                owners = None
        lag_changed = False
        if t in lag_slices:
            a, b = lag_slices[t]
            codes = topic_codes[a:b]
            cuts = np.r_[0, np.flatnonzero(codes[1:] != codes[:-1]) + 1, b - a]
            for lo, hi in itertools.pairwise(cuts):
                seen = update.observe_lag(state, str(topic_names[codes[lo]]), t, part[a + lo:a + hi],
                                          committed[a + lo:a + hi], end[a + lo:a + hi], policy.lag_history)
                lag_changed |= seen.changed > 0
            if owners is None:
                owners = Owners.of(state)
        if lag_changed and t > state.skew_ts:
            changes.skew = "new"
        elif t == state.skew_ts and (lag_changed or changes.applied) and state.last_rec_ts != t:
            changes.skew = "again"
        rec = decide(state, changes, t, policy, owners)
        if rec is not None:
            out.append(rec)
    if state.parts:
        update.prune_parts(state)
    return out


class Owners:
    """Who owns what under the current assignment, as index arrays per topic (rebuilt when members change)."""

    __slots__ = ("by_topic", "count")

    def __init__(self, count: int, by_topic: dict[str, tuple[np.ndarray, np.ndarray]]) -> None:
        self.count = count
        self.by_topic = by_topic

    @classmethod
    def of(cls, state: GroupState) -> Owners:
        members = [m for m in state.members or [] if m["topics"]]
        owned: dict[str, tuple[list[int], list[int]]] = {}
        for i, m in enumerate(members):
            for t, p in m["assigned"]:
                parts, who = owned.setdefault(t, ([], []))
                parts.append(int(p))
                who.append(i)
        return cls(len(members), {t: (np.asarray(p, dtype=np.int64), np.asarray(w, dtype=np.int64))
                                  for t, (p, w) in owned.items()})


def skew_reading(state: GroupState, stuck_after: int, owners: Owners | None = None) -> lag_skew.SkewReading | None:
    """Lag per member under the current assignment, stuck partitions left out (vectorized per topic)."""
    owners = owners or Owners.of(state)
    if not owners.count:
        return None
    loads = np.zeros(owners.count)
    for t, (parts, who) in owners.by_topic.items():
        hist = state.lag.get(t)
        if hist is None:
            continue
        rows, ok = hist.lookup(parts)
        lag = hist.latest_lag()
        stuck = hist.stuck(stuck_after)
        if stuck.any():
            lag = lag * ~stuck
        # float weights: summing member loads is a reading, not an offset
        loads += np.bincount(who[ok], weights=lag[rows[ok]].astype(np.float64), minlength=owners.count)
    return lag_skew.SkewReading(metrics.imbalance(loads.tolist()), float(loads.sum()), float(loads.max()))


def decide(state: GroupState, changes: update.Changes, ts: int, policy: PolicySettings,
           owners: Owners | None = None) -> Recommendation | None:
    triggers = {
        name: figures for name, figures in changes.triggers().items()
        if (name == "membership_change" and policy.membership_change)
        or (name == "partition_count_change" and policy.partition_count_change)
        or (name == "rack_change" and policy.rack_change)
    }
    if changes.skew is not None:
        if changes.skew == "new":
            state.skew_prev, state.skew_ts = state.skew_streak, ts
        reading = skew_reading(state, policy.stuck_observations, owners)
        if reading is None:
            state.skew_streak = 0
            return None
        # counted from the streak before this observation: reading it again never counts it twice
        state.skew_streak = lag_skew.next_streak(state.skew_prev, reading, policy.skew_threshold,
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
    state.last_rec_ts = ts if state.last_rec_ts is None else max(state.last_rec_ts, ts)
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

"""Applying events to a group's state, and noticing the metadata changes that may trigger.

Metadata events come as plain dicts (the parsed, validated rows of the metadata topic) and change
the state in place through :func:`apply_metadata`, which records what it saw in a
:class:`~streaming.state.changes.Changes`: members joined/left, partition counts and replica racks
changed. Lag events come as arrays, one topic's poll at a time (:func:`observe_lag`). The first
``members`` event, and the first ``partitions`` event of a topic, are the group's baseline: they
change nothing that could trigger.

Order: metadata held is replaced only by newer metadata. ``members`` events are ordered by ``(ts,
generation)`` (a missing generation counts as -1), a topic's ``partitions`` events by ``ts``; an
event older than the one held is ignored and counted (``late_metadata``), one with the same key is
the held event again and ignored too (``duplicate_metadata``). Lag rows older than their partition's
newest observation are ignored (``late_lag``). Parts of a split event
(:mod:`streaming.contracts.event_parts`) wait in the state until all have arrived
(:func:`collect_parts`); the whole event then goes through the same rules.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import numpy as np

from assignors.model import Member
from streaming.contracts import event_parts
from streaming.contracts.events import LAG, MEMBERS, PARTITIONS
from streaming.contracts.member_load import LAG_MIN, LOAD, RECORD_COST
from streaming.lag import capacity, reported
from streaming.lag.history import LagHistory, Observed
from streaming.state.changes import Changes, joined_and_left, partition_count_change, rack_changes
from streaming.state.group_state import GroupState, PartitionMeta

# Within one observation (one ts), metadata first: the lag is read against the newest shape.
TYPE_ORDER = {MEMBERS: 0, PARTITIONS: 1, LAG: 2}


def apply_metadata(state: GroupState, events: Iterable[dict[str, Any]], changes: Changes,
                   stuck_after: int) -> None:
    """Apply one observation's metadata events (members before partitions) to ``state``; events
    older than (or the same as) what the state holds are counted and skipped. ``stuck_after``: the
    stuck rule the lag is read with (whether a reporting member keeps up)."""
    for e in events:
        ts = int(e["ts"])
        state.last_ts = max(state.last_ts, ts)
        held = _held_key(state, e)
        new = _key(e)
        if held is not None and new <= held:
            state.count("late_metadata" if new < held else "duplicate_metadata")
            continue
        changes.applied = True
        if e["type"] == MEMBERS:
            _apply_members(state, e, changes, stuck_after)
        elif e["type"] == PARTITIONS:
            _apply_partitions(state, e, changes)


def _key(e: dict[str, Any]) -> tuple[int, int]:
    gen = e.get("generation") if e["type"] == MEMBERS else None
    return int(e["ts"]), -1 if gen is None else int(gen)


def _held_key(state: GroupState, e: dict[str, Any]) -> tuple[int, int] | None:
    """Order key of the metadata the state holds for ``e``'s kind (None: nothing, or a
    version 2 state)."""
    if e["type"] == MEMBERS:
        if state.members_ts is None:
            return None
        return state.members_ts, -1 if state.generation is None else state.generation
    ts = state.partitions_ts.get(e.get("topic") or "")
    return None if ts is None else (ts, -1)


def collect_parts(state: GroupState, parts: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Keep the parts of split events in ``state``; return the events whose parts are now all there.

    A part of an event no newer than the metadata held is dropped at once (the event counted
    once, at its part 0, as late or duplicate metadata), so a lost part never pins memory past
    a newer event."""
    done: list[dict[str, Any]] = []
    touched: set[str] = set()
    for raw in parts:
        part = event_parts.normalized_part(raw)
        if part is None:
            state.count("invalid_parts")
            continue
        held = _held_key(state, part)
        if held is not None and _key(part) <= held:
            if part["part"] == 0:
                state.count("late_metadata" if _key(part) < held else "duplicate_metadata")
            continue
        k = event_parts.key(part)
        # kept in the JSON header of the state: numpy scalars of the parsed rows as plain values
        state.parts.setdefault(k, {})[str(part["part"])] = {
            f: v.item() if isinstance(v, np.generic) else v for f, v in part.items()}
        touched.add(k)
    for k in sorted(touched):
        slots = state.parts[k]
        first = next(iter(slots.values()))
        if len(slots) == first["parts"]:
            done.append(event_parts.join(list(slots.values())))
            del state.parts[k]
    return done


def prune_parts(state: GroupState) -> None:
    """Forget incomplete split events that can no longer win against the metadata held."""
    for k in list(state.parts):
        first = next(iter(state.parts[k].values()))
        held = _held_key(state, first)
        if held is not None and _key(first) <= held:
            del state.parts[k]


def observe_lag(state: GroupState, topic: str, ts: int, partitions: np.ndarray,
                committed: np.ndarray, end: np.ndarray, depth: int,
                start: np.ndarray | None = None) -> Observed:
    """One poll of one topic's lag: sorted unique partitions with their int64 committed, end and
    (-1: not read) log start offsets."""
    if not len(partitions):  # no reading: no history (GroupState.lag holds no empty one)
        return Observed(0, 0)
    hist = state.lag.get(topic)
    if hist is None:
        hist = state.lag[topic] = LagHistory(depth)
    seen = hist.observe(ts, partitions, committed, end, start)
    if seen.late:
        state.count("late_lag", seen.late)
    state.last_ts = max(state.last_ts, ts)
    return seen


def _apply_members(state: GroupState, e: dict[str, Any], changes: Changes,
                   stuck_after: int) -> None:
    members = e["members"] if isinstance(e["members"], list) else json.loads(e["members"])
    held = sorted((
        Member(member_id=m["member_id"], topics=tuple(sorted(m.get("topics") or [])),
               instance_id=m.get("instance_id"), rack=m.get("rack"),
               owned=tuple(sorted((str(t), int(p)) for t, p in (m.get("assigned") or []))),
               client_id=m.get("client_id"), host=m.get("host"))
        for m in members), key=lambda m: m.member_id)
    if state.members is not None:
        joined, left = joined_and_left(state.members, held)
        changes.joined += joined
        changes.left += left
    state.members = held
    _take_reports(state, members, held, stuck_after)
    state.members_ts = int(e["ts"])
    state.generation = int(e["generation"]) if e.get("generation") is not None else None
    state.protocol = e.get("protocol")


def _take_reports(state: GroupState, members: list[dict[str, Any]], held: list[Member],
                  stuck_after: int) -> None:
    """The members' load reports (``load``, :mod:`streaming.contracts.member_load`) by identity: the
    event's, exactly (the collector leaves out a report gone stale, so one missing is none), each
    with the measure its reports have given so far (:func:`streaming.lag.reported.measure`; whether
    its lag grows is read from the lag held, under the new owners)."""
    by_id = {m.member_id: m.identity for m in held}
    before = state.reported
    state.reported = {}
    late: dict[str, tuple[bool, bool]] | None = None
    for m in members:
        load = m.get(LOAD)
        if not load:
            continue
        key = by_id[m["member_id"]]
        busy, rate = float(load["busy"]), float(load["records_per_s"])
        if late is None:
            late = _behind(state, stuck_after)
        was = before.get(key)
        kept = was[3] if was is not None and len(was) > 3 else None
        behind, backlogged = late.get(key, (False, False))
        # a record's cost is read from the small batches of a consumer with no backlog (draining
        # one, the loop's consumers read 2-6x their speed), and moves a measure once per report (a
        # members event sent again with the same report must not move it again)
        again = was is not None and was[0] == int(load["ts"])
        cost = (None if backlogged or again or load.get(RECORD_COST) is None
                else float(load[RECORD_COST]))
        lag = load.get(LAG_MIN)
        lag = None if lag is None else int(lag)
        # the least lag only where said: the state of a group whose consumers do not say it is
        # as before
        state.reported[key] = [int(load["ts"]), busy, rate,
                               reported.measure(busy, rate, kept, behind, cost, lag), behind,
                               *(() if lag is None else (lag,))]


def _behind(state: GroupState, stuck_after: int) -> dict[str, tuple[bool, bool]]:
    """member identity -> whether its lag grows (:func:`streaming.lag.capacity.behind`) and
    whether it holds a backlog (:func:`streaming.lag.capacity.window`), under the members held,
    over the lag held."""
    owners = state.owners()
    if not owners.count or not state.lag:
        return {}
    late = capacity.behind(state.lag, owners.by_topic, owners.count, stuck_after).tolist()
    held = capacity.window(state.lag, owners.by_topic, owners.count, stuck_after).backlogged
    return dict(zip(owners.identities, zip(late, held.tolist(), strict=True), strict=False))


def _apply_partitions(state: GroupState, e: dict[str, Any], changes: Changes) -> None:
    parts = e["partitions"] if isinstance(e["partitions"], list) else json.loads(e["partitions"])
    parts = sorted(parts, key=lambda p: int(p["partition"]))
    topic = e["topic"]
    new = [PartitionMeta(p.get("leader"), [int(r) for r in p.get("replicas") or []],
                         list(p.get("replica_racks") or [])) for p in parts]
    old = state.partitions.get(topic)
    if old is not None:
        count = partition_count_change(len(old), len(new))
        if count:
            changes.partition_counts[topic] = count
        racks = rack_changes([m.racks for m in old], [m.racks for m in new])
        if racks:
            changes.racks[topic] = racks
    state.partitions[topic] = new
    state.partitions_ts[topic] = int(e["ts"])
    # the lag history follows the partition count (partitions beyond it are gone:
    # a re-created topic)
    lag = state.lag.get(topic)
    if lag is not None:
        lag.retain_below(len(new))
        if not lag.rows:  # every partition it held is gone (a topic of none, or re-created smaller)
            del state.lag[topic]

"""Each member's capacity kept in the group's state across batches: :mod:`streaming.lag.capacity`'s rule (what a
member consumes while it has backlog), its memory in
:attr:`~streaming.state.group_state.GroupState.capacity`, members by identity
(:attr:`assignors.model.Member.identity`: a rejoin keeps its estimate), the assignment the state's current one
(:class:`streaming.state.ingest.Owners`)."""

from __future__ import annotations

import numpy as np

from streaming.lag import capacity as rule
from streaming.lag.capacity import BACKLOG_RECORDS, BACKLOG_S, CONFIDENT_S, LEAST_S, MEMORY_S, RISE, Capacity
from streaming.state.group_state import GroupState
from streaming.state.owners import Owners

__all__ = ["BACKLOG_RECORDS", "BACKLOG_S", "CONFIDENT_S", "LEAST_S", "MEMORY_S", "RISE", "Capacity", "estimates",
           "observe", "records_per_s", "records_per_s_given"]


def observe(state: GroupState, owners: Owners, ts: int, stuck_after: int) -> None:
    """Update the estimates with the lag observation at ``ts`` (``owners``: who owns what now, of the state's
    members)."""
    rule.observe(state.capacity, owners.identities, state.lag, owners.by_topic, owners.count, ts, stuck_after)


def estimates(state: GroupState, stuck_after: int) -> dict[str, Capacity] | None:
    """member id -> its capacity, for the members that subscribe to something; None when none was measured."""
    if not any(held[1] >= rule.CONFIDENT_S for held in state.capacity.values()):
        return None  # what the rule says then, without reading the members (every observation asks)
    owners = Owners.of(state)
    return rule.estimated(state.capacity, owners.identities, owners.ids,
                          lambda: rule.window(state.lag, owners.by_topic, owners.count, stuck_after)[1])


def records_per_s(state: GroupState, stuck_after: int) -> dict[str, float] | None:
    """member id -> capacity (records/s), as the assignors take it; None when unknown."""
    found = estimates(state, stuck_after)
    return None if found is None else {mid: c.records_per_s for mid, c in found.items()}


def records_per_s_given(held: rule.Held, owners: Owners, rate_now: np.ndarray) -> dict[str, float] | None:
    """:func:`records_per_s` of the estimates ``held`` under ``owners``, given what each member consumes now (the
    observation's :func:`streaming.lag.capacity.window` rates, read ahead)."""
    if not any(h[1] >= rule.CONFIDENT_S for h in held.values()):
        return None
    found = rule.estimated(held, owners.identities, owners.ids, lambda: rate_now)
    return None if found is None else {mid: c.records_per_s for mid, c in found.items()}

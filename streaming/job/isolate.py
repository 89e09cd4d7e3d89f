"""A blast radius of one event: when a group's batch raises, only the events that raise are lost.

:func:`streaming.job.stateful.apply_group` applies a group's valid rows of a call in one
:func:`~streaming.policy.recommend.process`. No row validation admits should make that raise (what
the step assumes is :mod:`streaming.contracts.validated`, and a property holds the step to it), but
should one still, it must cost that row, not the group's other readings of the batch, and never its
state. :func:`apply_each` is the path taken then (and only then): from the state the call began
with,

1. the rows are applied one observation (one ``ts``) at a time, in ts order; an observation that
   applies (and whose recommendations ``accept`` takes) is kept;
2. an observation that raises is applied again row by row (in the step's order within a ts: members,
   partitions, lag, then source offset), each on the state as the rows before it left it; a row that
   raises is rejected with its error and changes nothing, the others are kept.

Every attempt runs on a copy of the state (its bytes read back), so a failed one leaves nothing
behind. The result depends only on the rows and the state, never on timing, so a replay of the batch
gives the same rows and state. Applied per observation, the rows give the state they give in one
call (the state is the same however events are cut into micro-batches,
:mod:`streaming.state.ingest`); a poll read ahead in one call may be decided per observation here
(the same decisions, reached one at a time).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from streaming.config import PolicySettings
from streaming.contracts.recommendation import Recommendation
from streaming.policy.recommend import process
from streaming.state.group_state import GroupState
from streaming.state.update import TYPE_ORDER

Accept = Callable[[list[Recommendation]], list[Any]]
"""Takes an attempt's recommendations (the output rows they become), or raises: the attempt then
failed."""


@dataclass
class Applied:
    """What :func:`apply_each` did: the state after, the output rows kept, and each failed row's
    exception."""

    state: GroupState
    out: list[Any] = field(default_factory=list)
    failed: dict[int, BaseException] = field(default_factory=dict)
    """index among the rows given -> what it raised"""


def apply_each(
    state: GroupState,
    events: dict[str, np.ndarray],
    offsets: np.ndarray,
    policy: PolicySettings,
    accept: Accept,
) -> Applied:
    """``events`` (column arrays, the rows to apply; ``offsets`` their source offsets) applied to
    ``state`` (not changed) observation by observation, and row by row within an observation that
    raises."""
    done = Applied(state)
    ts = np.asarray(events["ts"]).astype(np.int64)
    kinds = [TYPE_ORDER.get(str(t), len(TYPE_ORDER)) for t in events["type"].tolist()]
    for t in np.unique(ts).tolist():
        rows = np.flatnonzero(ts == t)
        if _attempt(done, events, rows, policy, accept) is None:
            continue
        # members, partitions, lag (either form), then source offset: the step's order within a ts
        for i in sorted(rows.tolist(), key=lambda i: (kinds[i], int(offsets[i]))):
            exc = _attempt(done, events, np.array([i]), policy, accept)
            if exc is not None:
                done.failed[i] = exc
    return done


def _attempt(
    done: Applied,
    events: dict[str, np.ndarray],
    rows: np.ndarray,
    policy: PolicySettings,
    accept: Accept,
) -> BaseException | None:
    """``rows`` applied to a copy of ``done.state``: kept when nothing raised, else the
    exception."""
    try:
        trial = GroupState.from_bytes(done.state.to_bytes())
        trial.version = done.state.version
        out = accept(process(trial, {c: v[rows] for c, v in events.items()}, policy))
    except Exception as exc:
        return exc
    done.state = trial
    done.out += out
    return None

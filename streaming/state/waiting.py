"""A poll's lag held back until the metadata events it counts are in.

The collector writes a poll's metadata events (``members``, ``partitions``) and has them
acknowledged before it sends the poll's lag, whose records count them (``metadata_events``:
:mod:`streaming.contracts.events`). The job reads the two topics with offsets Spark lists apart, so
a micro-batch may still hold the lag and not the metadata. Applied then, the lag would come before
its own poll's metadata, where in one batch it comes after (:mod:`streaming.state.ingest` applies
an observation's metadata first): the capacity estimates and the members' load reports would be
read against other owners and another lag, and the decision with them.

So the lag rows of a call's newest poll that counts more metadata events than the state holds at
its ``ts`` are not applied: they are kept in the state (:attr:`GroupState.held_lag`, a few rows:
one poll of one group) and put back in front of the next call's rows (:func:`resumed`), which
applies them after the metadata, as one batch would. A poll that the next poll closes first is
applied as it is (its metadata came later than the collector's order allows: a batch cap,
``job.max_offsets_per_trigger``, can cut the metadata topic a whole poll behind).

Example: a poll at ts 1000 brings a members event (a member joined) and lag records saying
``metadata_events: 1``. A micro-batch holds the lag alone: it is held, the observation undecided.
The next holds the members event: the held lag goes back in after it, and the poll is decided on
the new members and its lag, as in one batch.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from streaming.contracts.events import METADATA_EVENTS
from streaming.state.group_state import GroupState
from streaming.state.readings import LOG_STARTS, READINGS, ints

ROW_COLUMNS = ("type", "ts", "topic", "partition", "committed_offset", "end_offset", READINGS,
               LOG_STARTS, METADATA_EVENTS)
"""The columns of a lag row that the state needs again (its ``detail``, a record's bad entries,
was reported when it came)."""


def counted(cols: dict[str, np.ndarray], lag_rows: np.ndarray) -> dict[int, int]:
    """ts -> the most metadata events a lag row of that poll says it has, for the polls whose rows
    say some (rows without the column say none)."""
    if METADATA_EVENTS not in cols:
        return {}
    said = ints(cols, METADATA_EVENTS, slice(None))
    rows = np.flatnonzero((said > 0) & lag_rows)
    out: dict[int, int] = {}
    for t, n in zip(ints(cols, "ts", rows).tolist(), said[rows].tolist(), strict=True):
        out[t] = max(out.get(t, 0), n)
    return out


def waits(state: GroupState, t: int, said: int) -> bool:
    """Whether the poll at ``t``, whose lag counts ``said`` metadata events, still waits for some
    (and is not older than a poll applied: those are applied as they come)."""
    return said > 0 and t >= state.last_ts and state.metadata_events_at(t) < said


def hold(state: GroupState, cols: dict[str, np.ndarray], lag_rows: np.ndarray, t: int) -> None:
    """Keep the lag rows at ``t`` in the state, as plain values."""
    rows = np.flatnonzero(lag_rows & (ints(cols, "ts", slice(None)) == t)).tolist()
    names = [c for c in ROW_COLUMNS if c in cols]
    state.held_lag = [{c: _plain(cols[c][i]) for c in names} for i in rows]


def resumed(state: GroupState, cols: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The lag rows the state held, in front of the call's rows ``cols``; the state holds none
    after."""
    held, state.held_lag = state.held_lag, None
    if not held:
        return cols
    n = len(held)
    back = {c: _column([r.get(c) for r in held]) for c in ROW_COLUMNS}
    if not cols or not len(cols["type"]):
        return back
    m = len(cols["type"])
    return {c: np.concatenate([back.get(c, _nones(n)), cols.get(c, _nones(m))])
            for c in {*back, *cols}}


def _nones(n: int) -> np.ndarray:
    return np.full(n, None, dtype=object)


def _column(values: list[Any]) -> np.ndarray:
    """Values as an object column (list values stay lists)."""
    col = _nones(len(values))
    for i, v in enumerate(values):
        col[i] = v
    return col


def _plain(value: Any) -> Any:
    """A column value as JSON holds it: numbers as ints, arrays as lists, nulls as None."""
    if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
        return None
    if isinstance(value, np.ndarray | list | tuple):
        return [None if v is None else int(v) for v in value]
    return value.item() if isinstance(value, np.generic) else value

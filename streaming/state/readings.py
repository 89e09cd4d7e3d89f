"""A call's lag readings as columns: the ``lag_dense`` rows' packed arrays cut and joined to the
``lag`` rows' (one slice per record, a few numpy calls per poll whatever its partitions), their log
starts beside (:mod:`streaming.state.ingest` applies them)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from streaming.contracts.events import DENSE_ARRAYS, LAG_DENSE
from streaming.lag.history import UNKNOWN

READINGS = "readings"
"""The column of a ``lag_dense`` row's readings: partitions, committed offsets,
end offsets, concatenated."""
LOG_STARTS = "log_starts"
"""The column of a lag row's log start offsets: one per reading of a ``lag_dense`` row, a
``lag`` row's one; null when the event carried none (:data:`streaming.lag.history.UNKNOWN`
in the history)."""


def packed(event: dict[str, Any]) -> np.ndarray:
    """A ``lag_dense`` event's arrays as its :data:`READINGS` value."""
    return np.concatenate([np.asarray(event[a], dtype=np.int64) for a in DENSE_ARRAYS])


def dense_sizes(cols: dict[str, np.ndarray]) -> np.ndarray:
    """Per row, the number of readings a ``lag_dense`` row carries (0 for any other row)."""
    if READINGS not in cols:
        return np.zeros(len(cols["type"]), dtype=np.int64)
    return np.fromiter((0 if r is None or t != LAG_DENSE else len(r) // 3
                        for t, r in zip(cols["type"].tolist(), cols[READINGS], strict=True)),
                       dtype=np.int64, count=len(cols["type"]))


def ints(cols: dict[str, np.ndarray], name: str, rows: np.ndarray | slice) -> np.ndarray:
    """Column ``name`` at ``rows`` as int64, exactly: offsets go up to 2**63-1, beyond float64's
    2**53. (A float column has already lost that precision; its values are taken as they are.)"""
    if name not in cols:
        return np.zeros(len(cols["type"][rows]), dtype=np.int64)
    values = cols[name][rows]
    if values.dtype.kind in "iu":
        return values.astype(np.int64)
    if values.dtype == object:
        return np.array([0 if v is None or v is pd.NA else int(v) for v in values.tolist()],
                        dtype=np.int64)
    return np.nan_to_num(values.astype(np.float64), nan=0).astype(np.int64)


def polls_in_order(cols: dict[str, np.ndarray], is_lag: np.ndarray,
                   is_dense: np.ndarray) -> tuple | None:
    """The call's lag rows (:mod:`streaming.state.ingest`) when every row is a ``lag_dense``
    record of one topic, in ts order, each in partition order (a group's usual batch in the dense
    form: its polls): sorted and unique already, so made as the general path makes them without
    its sort; else None."""
    if not is_dense.all() or is_lag.any():
        return None
    stamps = ints(cols, "ts", slice(None))
    topics = cols["topic"]
    if ((len(stamps) > 1 and not (stamps[1:] > stamps[:-1]).all())
            or not (topics == topics[0]).all()):
        return None
    packs = [np.asarray(r, dtype=np.int64).reshape(3, -1) for r in cols[READINGS]]
    part, committed, end = packs[0] if len(packs) == 1 else np.concatenate(packs, axis=1)
    sizes = [p.shape[1] for p in packs]
    start = dense_starts(cols, range(len(packs)), sizes)
    ends = np.cumsum(sizes).tolist()
    inside = part[1:] > part[:-1]
    # a record's first partition follows the one before
    inside[np.asarray(ends[:-1], dtype=np.int64) - 1] = True
    if not len(part) or min(sizes) == 0 or not inside.all():
        return None
    slices = {int(t): (b - n, b) for t, b, n in zip(stamps.tolist(), ends, sizes, strict=True)}
    return (np.array([str(topics[0])]), np.zeros(len(part), dtype=np.int64),
            np.repeat(stamps, sizes), part, committed, end, start, slices)


def dense_readings(cols: dict[str, np.ndarray], is_dense: np.ndarray) -> tuple[np.ndarray, ...]:
    """The ``lag_dense`` rows' readings as (topic, ts, partition, committed, end, log start)
    columns, one slice per row."""
    rows = np.flatnonzero(is_dense).tolist()
    packs = [np.asarray(cols[READINGS][i], dtype=np.int64) for i in rows]
    sizes = np.array([len(p) // 3 for p in packs], dtype=np.int64)
    ts = np.repeat(ints(cols, "ts", np.asarray(rows, dtype=np.int64)), sizes)
    topics = np.repeat(cols["topic"][rows], sizes)
    start = dense_starts(cols, rows, sizes.tolist())
    if len(packs) == 1:  # one poll of one topic, the usual batch of a group: views, no copy
        part, committed, end = packs[0].reshape(3, -1)
        return topics, ts, part, committed, end, start
    return (topics, ts,
            *(np.concatenate([p[k * n:(k + 1) * n]
                              for p, n in zip(packs, sizes.tolist(), strict=True)])
              for k in range(3)), start)


def dense_starts(cols: dict[str, np.ndarray], rows: Sequence[int], sizes: list[int]) -> np.ndarray:
    """The log starts of ``lag_dense`` rows (``sizes`` readings each), :data:`UNKNOWN` for
    a row without."""
    held = cols.get(LOG_STARTS)
    if held is None or all(held[i] is None for i in rows):
        return np.full(sum(sizes), UNKNOWN, dtype=np.int64)
    parts = [np.asarray(held[i], dtype=np.int64) if _sized(held[i], n)
             else np.full(n, UNKNOWN, dtype=np.int64)
             for i, n in zip(rows, sizes, strict=True)]
    if len(parts) == 1:
        return parts[0]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def row_starts(cols: dict[str, np.ndarray], rows: np.ndarray | slice) -> np.ndarray:
    """The log start of each ``lag`` row (its one-element :data:`LOG_STARTS`), :data:`UNKNOWN` for a
    row without."""
    held = cols.get(LOG_STARTS)
    n = len(cols["type"][rows])
    values = [] if held is None else held[rows].tolist()
    # no row has one (lag events without log_start_offset): no loop per row
    if values.count(None) == len(values):
        return np.full(n, UNKNOWN, dtype=np.int64)
    return np.fromiter((int(v[0]) if _sized(v, 1) else UNKNOWN for v in values), dtype=np.int64,
                       count=n)


def _sized(value: Any, n: int) -> bool:
    """``value`` is a list (or array) of ``n`` entries (a missing one may read as None or NaN)."""
    return isinstance(value, list | np.ndarray) and len(value) == n


def joined(a: tuple[np.ndarray, ...], b: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
    """Columns ``a`` followed by columns ``b`` (``a`` empty, the usual case: ``b`` as it is)."""
    return b if not len(a[1]) else tuple(np.concatenate([x, y]) for x, y in zip(a, b, strict=True))

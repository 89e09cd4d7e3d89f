"""Lag in seconds, and stuck partitions, read off a short window of lag
observations (numpy, no Spark).

Shared by the job's state (:class:`streaming.lag.history.LagHistory` keeps the window per topic) and
the collector's ``/metrics`` (:mod:`streaming.lag.window`, the same ring buffer over its polls), so
both say the same thing.

A window is three ``(rows, depth)`` int64 arrays, oldest first, and ``n`` (columns filled per row):
the observation time (ms), the committed offset and the end offset of one partition per row. Only
the latest *run* of a row counts: the columns after the last place where time stands still or an
offset goes back (a re-created topic or reset offsets start a new run), so a counter reset never
yields a negative rate or age.

Two figures per partition:

- **time to catch up** (:func:`catch_up`): lag / consume rate, the committed offset's growth over
  the run (records/s). 0 without lag; ``inf`` with lag and a rate of 0 over two or more observations
  (it consumed nothing: at this rate it never catches up); ``nan`` with lag and a run of one
  observation (no rate yet). Per member (:func:`member_catch_up`): its total lag over its total
  rate, by the same rules.
- **age of the oldest unconsumed record** (:func:`oldest_age`, as kafka-lag-exporter estimates it):
  the time the end offset was at today's committed offset, interpolated linearly between the two
  observations around it, subtracted from the latest observation's time. When the committed offset
  is below every end offset of the run, the record is older than the window: the time is
  extrapolated back from the run's end-offset rate (``estimated``), or, when the end offset did not
  move, the window's start is taken (a lower bound, also ``estimated``). 0 without lag; ``nan`` with
  lag and a run of one observation. Event time has millisecond resolution, so a lagging partition's
  age is at least 0.001 s. Per member: the max.

Comparing two assignments of a group, :func:`member_capacity` gives each member the rate to divide
its lag by in both (what a member that keeps up consumed understates what it can do).

A stuck partition (:func:`stuck_mask`) is the case where lag is present and the committed offset
stood still for the last ``k`` observations (a poison record, a consumer wedged on one partition):
its time to catch up is unbounded, and moving it for balance does not help, so a recommendation
reports it and leaves it where it is. With ``k`` = 3, committed 500, 500, 500 against end 900, 950,
990 is stuck.

Example: observations at 0, 10 and 20 s with end offsets 1000, 2000, 3000 and committed 400, 900,
1500. Latest lag 1500; the consume rate over the run is (1500 - 400) / 20 s = 55/s, so catching up
takes about 27 s; the end offset was 1500 at 5 s (halfway between 1000 at 0 s and 2000 at 10 s), so
the oldest unconsumed record was written 15 s before the latest observation.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

MIN_AGE_S = 0.001
"""The age of a lagging partition's oldest record is never below one tick of event time."""


class Age(NamedTuple):
    seconds: np.ndarray
    """float64 per row: 0 without lag, > 0 with lag, nan when unknown (one observation)."""
    estimated: np.ndarray
    """bool per row: extrapolated beyond the window (or a lower bound), not interpolated within
    it."""


def gap(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a - b`` as float64 where ``a >= b`` (exact in uint64 for any two int64 values, so no
    overflow and no loss of the small difference of two offsets near 2**63); meaningless
    elsewhere."""
    return (a.astype(np.int64, copy=False).view(np.uint64)
            - b.astype(np.int64, copy=False).view(np.uint64)).astype(np.float64)


def run_start(ts: np.ndarray, committed: np.ndarray | None, end: np.ndarray | None, n: np.ndarray
              ) -> np.ndarray:
    """First column of each row's latest run: after the last column whose time is not after the one
    before it, or whose committed or end offset is below the one before it (only filled columns
    count)."""
    depth = ts.shape[1]
    if depth < 2 or ts.shape[0] == 0:
        return np.zeros(ts.shape[0], dtype=np.int64)
    filled = filled_alike(np.asarray(n))
    # the usual history: only its filled columns, and no break at all is the usual run
    if filled is not None:
        depth = max(filled, 1)
        ts, committed, end = ts[:, :depth], _cols(committed, depth), _cols(end, depth)
    broken = ts[:, 1:] <= ts[:, :-1]
    for arr in (committed, end):
        if arr is not None:
            broken |= arr[:, 1:] < arr[:, :-1]
    if filled is not None and not broken.any():
        return np.zeros(ts.shape[0], dtype=np.int64)
    j = np.arange(1, depth)[None, :]
    if filled is None:
        broken &= j < np.asarray(n)[:, None]
    return np.where(broken, j, 0).max(axis=1, initial=0).astype(np.int64)


def _cols(arr: np.ndarray | None, depth: int) -> np.ndarray | None:
    return None if arr is None else arr[:, :depth]


Run = tuple[np.ndarray, np.ndarray, np.ndarray]
"""(rows, last column, run start) of a window (:func:`window`)."""


def window(ts: np.ndarray, committed: np.ndarray, end: np.ndarray, n: np.ndarray) -> Run:
    """(rows, last column, run start) of a window, the run broken by time and by both offsets."""
    rows = np.arange(ts.shape[0])
    last = np.maximum(np.asarray(n, dtype=np.int64) - 1, 0)
    return rows, last, run_start(ts, committed, end, n)


def latest_lag(committed: np.ndarray, end: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Lag (int64, exact) at each row's latest observation; 0 where none or where committed >=
    end."""
    rows = np.arange(committed.shape[0])
    last = np.maximum(np.asarray(n, dtype=np.int64) - 1, 0)
    c, e = committed[rows, last], end[rows, last]
    has = (np.asarray(n) > 0) & (e > c)
    # the difference only where it is positive: no int64 overflow on any pair of offsets
    return np.where(has, np.subtract(e, c, where=has, out=np.zeros_like(e)), 0)


def rate(ts: np.ndarray, committed: np.ndarray, end: np.ndarray, n: np.ndarray,
         which: str = "committed", run: Run | None = None) -> np.ndarray:
    """Records/s of the committed (consume) or end (produce) offset over each row's latest run;
    ``nan`` where the run has one observation (or none). ``run``: the window's :func:`window`, when
    known."""
    rows, last, start = run if run is not None else window(ts, committed, end, n)
    arr = committed if which == "committed" else end
    return column_rate(ts[rows, start], ts[rows, last], arr[rows, start], arr[rows, last],
                       last > start)


def column_rate(ts0: np.ndarray, ts1: np.ndarray, first: np.ndarray, last: np.ndarray,
                several: np.ndarray | bool = True) -> np.ndarray:
    """Per row, records/s from (``ts0``, ``first``) to (``ts1``, ``last``), one run's ends; ``nan``
    where not ``several`` (one observation) or no time passed."""
    dt = (ts1 - ts0).astype(np.float64) / 1000.0
    delta = gap(last, first)  # >= 0 within a run
    out = np.full(dt.shape, np.nan)
    np.divide(delta, dt, out=out, where=several & (dt > 0))
    return out


def least_lag(ts: np.ndarray, committed: np.ndarray, end: np.ndarray, n: np.ndarray,
              run: Run | None = None) -> np.ndarray:
    """float64 per row: the least lag over its latest run (0 where never observed): a row whose lag
    never fell to 0 over the window always had work waiting."""
    _, last, start = run if run is not None else window(ts, committed, end, n)
    cols = np.arange(ts.shape[1])[None, :]
    in_run = (cols >= start[:, None]) & (cols <= last[:, None])
    lag = np.where(end > committed, gap(end, committed), 0.0)
    least = np.where(in_run, lag, np.inf).min(axis=1, initial=np.inf)
    return np.where(np.asarray(n) > 0, least, 0.0)


def catch_up(lag: np.ndarray, consume_rate: np.ndarray) -> np.ndarray:
    """Seconds to consume ``lag`` at ``consume_rate``: 0 without lag, ``inf`` with lag and rate 0,
    ``nan`` with lag and an unknown (nan) rate."""
    lag = np.asarray(lag, dtype=np.float64)
    r = np.asarray(consume_rate, dtype=np.float64)
    out = np.where(lag > 0, np.where(np.isnan(r), np.nan, np.inf), 0.0)
    np.divide(lag, r, out=out, where=(lag > 0) & (r > 0))
    return out


def member_catch_up(lag: np.ndarray, consume_rate: np.ndarray, member: np.ndarray, members: int
                    ) -> np.ndarray:
    """Per member ``0..members-1``: its partitions' total lag over their total known rate. A member
    whose partitions all have unknown rates gets ``nan`` (if it has lag); known rates summing to 0,
    ``inf``."""
    member = np.asarray(member, dtype=np.int64)
    r = np.asarray(consume_rate, dtype=np.float64)
    known = ~np.isnan(r)
    total_lag = np.bincount(member, weights=np.asarray(lag, dtype=np.float64), minlength=members)
    total_rate = np.bincount(member[known], weights=r[known], minlength=members)
    any_known = np.bincount(member[known], minlength=members) > 0
    return catch_up(total_lag, np.where(any_known, total_rate, np.nan))


def member_capacity(lag: np.ndarray, consume_rate: np.ndarray, window_s: float) -> np.ndarray:
    """Per member, the rate its lag is divided by when comparing two assignments (before and after
    alike).

    A member *behind* (lag it would not clear within the window at its rate) consumes as fast as it
    can, so its measured rate is its capacity. A member keeping up consumed only what arrived, which
    understates what it can do: it is taken at the highest rate a member that is behind reached (the
    group's consumers run the same code), or at its own rate if higher; with nobody behind, at the
    group's highest member rate. ``nan`` when no rate is known at all."""
    lag = np.asarray(lag, dtype=np.float64)
    r = np.asarray(consume_rate, dtype=np.float64)
    known = ~np.isnan(r)
    behind = known & (lag > 0) & (lag > np.where(known, r, 0.0) * window_s)
    if (behind & (r > 0)).any():
        ref = float(r[behind & (r > 0)].max())
    else:
        ref = float(r[known].max()) if known.any() else np.nan
    return np.where(behind, r, np.fmax(r, ref))


def oldest_age(ts: np.ndarray, committed: np.ndarray, end: np.ndarray, n: np.ndarray,
               run: Run | None = None) -> Age:
    """Seconds, as of each row's latest observation, since the end offset stood at its committed
    offset."""
    rows, last, start = run if run is not None else window(ts, committed, end, n)
    m = len(rows)
    seconds = np.zeros(m)
    estimated = np.zeros(m, dtype=bool)
    lag = latest_lag(committed, end, n) > 0
    if not lag.any():
        return Age(seconds, estimated)
    depth = ts.shape[1]
    c = committed[rows, last]
    cols = np.arange(depth)[None, :]
    in_run = (cols >= start[:, None]) & (cols <= last[:, None])
    # the last column of the run whose end offset had not reached past the committed offset yet
    below = in_run & (end <= c[:, None])
    has_below = below.any(axis=1)
    j0 = np.where(below, cols, -1).max(axis=1)
    j0 = np.clip(j0, 0, depth - 1)
    j1 = np.minimum(j0 + 1, depth - 1)
    now = ts[rows, last].astype(np.float64)
    # within the window: linear between (ts[j0], end[j0]) and (ts[j1], end[j1]);
    # end[j1] > c >= end[j0]
    e0, e1 = end[rows, j0], end[rows, j1]
    t0, t1 = ts[rows, j0].astype(np.float64), ts[rows, j1].astype(np.float64)
    span = gap(e1, e0)
    frac = np.clip(np.divide(gap(c, e0), span, out=np.zeros(m), where=has_below & (span > 0)),
                   0.0, 1.0)
    inside = t0 + frac * (t1 - t0)
    # before the window: back from the run's first observation at the run's end-offset rate
    es = end[rows, start]
    ts0 = ts[rows, start].astype(np.float64)
    dt = now - ts0
    produced = gap(end[rows, last], es)
    back = np.divide(gap(es, c) * dt, produced, out=np.zeros(m),
                     where=~has_below & (produced > 0) & (dt > 0))
    outside = ts0 - back
    when = np.where(has_below, inside, outside)
    age = np.maximum((now - when) / 1000.0, MIN_AGE_S)
    known = has_below | (dt > 0)
    seconds = np.where(lag, np.where(known, age, np.nan), 0.0)
    estimated = lag & ~has_below & known
    return Age(seconds, estimated)


def filled_alike(n: np.ndarray) -> int | None:
    """The number of observations every row holds, when they all hold as many (the usual history:
    its columns can be read as slices), else None (also for no rows)."""
    return int(n[0]) if len(n) and (n == n[0]).all() else None


def stuck_mask(committed: np.ndarray, end: np.ndarray, n: np.ndarray, k: int) -> np.ndarray:
    """Per row: its last ``k`` observations all have lag and one committed offset (``k`` <= 0 or
    beyond the window's depth: never)."""
    partitions, depth = committed.shape
    if k <= 0 or k > depth:
        return np.zeros(partitions, dtype=bool)
    n = np.asarray(n)
    filled = filled_alike(n)
    if filled is not None:  # the usual history: plain slices, no gather
        if filled < k:
            return np.zeros(partitions, dtype=bool)
        c, e = committed[:, filled - k:filled], end[:, filled - k:filled]
        return (c == c[:, :1]).all(axis=1) & (e > c).all(axis=1)
    idx = np.clip(n[:, None] - k + np.arange(k)[None, :], 0, depth - 1)
    rows = np.arange(partitions)[:, None]
    c = committed[rows, idx]
    e = end[rows, idx]
    return (n >= k) & (c == c[:, :1]).all(axis=1) & (e > c).all(axis=1)


def finite_or_none(x: float) -> float | None:
    """A figure for JSON and Delta: None when it is not a finite number (unbounded or unknown)."""
    return float(x) if np.isfinite(x) else None

"""Data-loss risk: how soon a group's committed offset falls below its partition's log start offset.

Retention (``retention.ms``, ``retention.bytes``) deletes a partition's oldest segments and moves
its log start offset up. A committed offset below the log start means the records between the two
were deleted before the group read them: its consumers' next fetch is out of range and
``auto.offset.reset`` decides where they resume. Per partition, read off its lag history
(:class:`~streaming.lag.history.LagHistory`: the job's state, or the collector's window of polls):

- **headroom** (records): committed - log start, what retention may still delete before the group
  loses any; 0 once lost;
- **lost** (records): log start - committed when the committed offset is below it ("already lost"),
  else 0;
- **seconds to loss**: headroom / (log start rate - consume rate) while the log start gains on the
  committed offset; ``inf`` when it does not, or when the partition has no lag (nothing unread can
  be deleted); 0 once lost; ``nan`` while unknown (no log start read, or a rate not known yet: one
  observation).

Rates. The consume rate is the committed offset's growth over the row's latest run
(:func:`streaming.lag.rules.rate`). The log start's (:func:`start_rate`) is its growth from the
first to the last observation of the window that carries one. Retention deletes whole segments, so
the log start moves in steps: over a window shorter than a segment's life it may read 0 (no risk in
seconds, while the headroom in records stays exact); over longer windows it averages the steps. At
steady state under either retention it approaches the produce rate, which is why a consumer slower
than its producers runs out of headroom.

Per member (:func:`member_risk`): the soonest seconds of its partitions, the headroom of that
partition, and the records lost over all of them.

Example: log start 1,000 rising 50/s (a log at its retention size, produced at 50/s), committed
4,000 rising 20/s, end 9,000: headroom 3,000 records, closing at 30/s, so 100 s to loss. Committed
at 900: lost 100, 0 s.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Risk(NamedTuple):
    """Per row (or member): records until loss, records lost, seconds until loss."""

    headroom: np.ndarray
    """int64: committed - log start (0 when lost or unknown)."""
    lost: np.ndarray
    """int64: log start - committed when above it, else 0."""
    seconds: np.ndarray
    """float64: 0 lost, > 0 until loss, inf never at these rates, nan unknown."""


def start_rate(ts: np.ndarray, start: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Records/s of the log start over each row's observations that carry one (window arrays
    ``(rows, depth)``, oldest first, ``n`` filled; -1: not read), first to last; ``nan`` with fewer
    than two, when the last has none, or when it went down (a topic re-created)."""
    rows, depth = ts.shape
    if not rows:
        return np.zeros(0)
    n = np.asarray(n, dtype=np.int64)
    known = (np.arange(depth)[None, :] < n[:, None]) & (start >= 0)
    first = np.argmax(known, axis=1)
    last = np.maximum(n - 1, 0)
    r = np.arange(rows)
    s0, s1, t0, t1 = start[r, first], start[r, last], ts[r, first], ts[r, last]
    ok = known.any(axis=1) & (s1 >= 0) & (last > first) & (t1 > t0) & (s1 >= s0)
    out = np.full(rows, np.nan)
    np.divide((s1 - np.where(ok, s0, s1)).astype(np.float64), (t1 - t0) / 1000.0, out=out, where=ok)
    return out


def risk(committed: np.ndarray, end: np.ndarray, start: np.ndarray, consume_rate: np.ndarray,
         log_start_rate: np.ndarray) -> Risk:
    """Per row, at its latest observation (``start`` -1: not read)."""
    committed, end, start = (np.asarray(a, dtype=np.int64) for a in (committed, end, start))
    known = start >= 0
    low, high = np.minimum(committed, start), np.maximum(committed, start)
    # |committed - start| where known, else 0: never overflows
    gap = high - np.where(known, low, high)
    lost = np.where(start > committed, gap, 0)
    headroom = np.where(start > committed, 0, gap)
    closing = (np.asarray(log_start_rate, dtype=np.float64)
               - np.asarray(consume_rate, dtype=np.float64))
    seconds = np.full(len(committed), np.nan)
    pending = known & (lost == 0)
    # nothing unread, or the log start does not gain
    safe = pending & ((end <= committed) | (closing <= 0))
    np.divide(headroom.astype(np.float64), closing, out=seconds,
              where=pending & ~safe & (closing > 0))
    seconds[safe] = np.inf
    seconds[lost > 0] = 0.0
    return Risk(headroom, lost, seconds)


def member_risk(row_risk: Risk, member: np.ndarray, members: int) -> Risk:
    """Per member ``0..members-1`` (``member``: each row's owner index): the soonest known seconds
    of its rows (``nan`` when none is known; ``inf`` for a member without rows), the headroom of
    that row, and its records lost."""
    member = np.asarray(member, dtype=np.int64)
    seconds = np.full(members, np.inf)
    headroom = np.zeros(members, dtype=np.int64)
    lost = np.zeros(members, dtype=np.int64)
    if len(member):
        # soonest first (unknown last), so each member's first row in this order is its soonest
        order = np.lexsort((row_risk.seconds, np.isnan(row_risk.seconds)))
        firsts = order[np.unique(member[order], return_index=True)[1]]
        seconds[member[firsts]] = row_risk.seconds[firsts]
        headroom[member[firsts]] = row_risk.headroom[firsts]
        np.add.at(lost, member, row_risk.lost)
    return Risk(headroom, lost, seconds)


def at_risk(seconds: np.ndarray, threshold_s: float) -> np.ndarray:
    """Rows (or members) that lost records or will within ``threshold_s`` at current rates."""
    s = np.asarray(seconds, dtype=np.float64)
    return ~np.isnan(s) & (s <= threshold_s)

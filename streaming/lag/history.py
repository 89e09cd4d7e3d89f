"""Recent lag observations of one topic's partitions, as numpy arrays (the job's hot path).

Rows exist only for the partitions observed: ``ids`` is the sorted array of their partition numbers,
row ``i`` partition ``ids[i]`` (a partition number of 2**31-1 costs one row). Four ``(rows, H)``
int64 arrays hold, per row and oldest first, the observation time, the committed, end and log start
offset (-1: not read) of its last ``H`` observations; ``n`` counts how many are filled. Offsets stay
int64 (exact up to 2**63-1); only rates are floats.

One poll of a topic is one vectorized :meth:`observe`: per partition, an observation newer than the
newest kept is appended, one at the same time replaces it when its offsets are further (a re-sent
record, whatever order the copies come in), an older one is ignored (a late record).

The views (latest lag, stuck rows, consume rate, window, ages, rows of a set of partitions) are
computed once per state of the history and kept, read-only, until it changes; the history's own
methods forget them on every change (arrays written from outside, as tests do, must be new arrays,
not written in place).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from streaming.lag import loss_risk
from streaming.lag import rules as lag_time

ARRAYS = ("ts", "committed", "end", "start")
UNKNOWN = -1
"""A log start offset not read."""


class Observed(NamedTuple):
    """What one :meth:`LagHistory.observe` did: rows changed (appended or replaced), rows ignored as
    older."""

    changed: int
    late: int


def _frozen(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


class LagHistory:
    __slots__ = ("_lookups", "_memo", "_memo_of", "committed", "end", "ids", "n", "start", "ts")

    def __init__(self, depth: int, ids: np.ndarray | None = None) -> None:
        self._memo: dict = {}
        self._memo_of: tuple = ()
        self._lookups: tuple[np.ndarray | None, dict] = (None, {})
        self.ids = np.zeros(0, dtype=np.int64) if ids is None else np.asarray(ids, dtype=np.int64)
        rows = len(self.ids)
        self.ts = np.zeros((rows, depth), dtype=np.int64)
        self.committed = np.zeros((rows, depth), dtype=np.int64)
        self.end = np.zeros((rows, depth), dtype=np.int64)
        self.start = np.full((rows, depth), UNKNOWN, dtype=np.int64)
        self.n = np.zeros(rows, dtype=np.int64)

    @property
    def rows(self) -> int:
        return len(self.ids)

    @property
    def depth(self) -> int:
        return self.ts.shape[1]

    @property
    def span(self) -> int:
        """Highest observed partition number + 1 (0 when none): the partition count lag alone
        implies."""
        return int(self.ids[-1]) + 1 if len(self.ids) else 0

    # -- rows --------------------------------------------------------------------------------------

    def _views(self) -> dict:
        """The views computed for the history as it is (its arrays the very ones they were computed
        from)."""
        held = self._memo_of
        if not (held and held[0] is self.ids and held[1] is self.ts and held[2] is self.committed
                and held[3] is self.end and held[4] is self.n and held[5] is self.start):
            self._memo, self._memo_of = {}, (self.ids, self.ts, self.committed, self.end, self.n,
                                             self.start)
        return self._memo

    def _changed(self) -> None:
        self._memo, self._memo_of = {}, ()

    def lookup(self, partitions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(row of each partition, whether it has one); rows of unknown partitions are 0 and masked
        out. Kept while the rows stay (the owners' arrays are looked up at every observation)."""
        ids, held = self._lookups
        if ids is not self.ids:
            held = {}
            self._lookups = (self.ids, held)
        key = id(partitions)
        # the same array (kept alive here): the same rows
        if key in held and held[key][0] is partitions:
            return held[key][1], held[key][2]
        rows, found = self._lookup(partitions)
        if len(held) > 8:  # a few owner arrays per topic; never a growing list of one-off lookups
            held.clear()
        held[key] = (partitions, _frozen(rows), _frozen(found))
        return rows, found

    def _lookup(self, partitions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        rows = np.searchsorted(self.ids, partitions)
        rows = np.minimum(rows, max(len(self.ids) - 1, 0))
        found = ((self.ids[rows] == partitions) if len(self.ids)
                 else np.zeros(len(partitions), dtype=bool))
        return np.where(found, rows, 0), found

    def _rows_for(self, partitions: np.ndarray) -> np.ndarray:
        """Rows of ``partitions`` (sorted, unique), adding rows for the ones not seen before."""
        ids = self.ids
        if len(ids) == len(partitions) and (len(ids) == 0 or np.array_equal(ids, partitions)):
            return np.arange(len(ids))
        rows, found = self._lookup(partitions)
        if found.all():
            return rows
        merged = np.union1d(ids, partitions)
        old_rows = np.searchsorted(merged, ids)
        for name in ARRAYS:
            new = np.full((len(merged), self.depth), UNKNOWN if name == "start" else 0,
                          dtype=np.int64)
            new[old_rows] = getattr(self, name)
            setattr(self, name, new)
        n = np.zeros(len(merged), dtype=np.int64)
        n[old_rows] = self.n
        self.n, self.ids = n, merged
        return np.searchsorted(merged, partitions)

    def retain_below(self, count: int) -> None:
        """Drop the partitions numbered ``count`` and above (gone: the topic was re-created
        smaller)."""
        self._keep_rows(self.ids < count)

    def retain(self, partitions: np.ndarray) -> None:
        """Drop every partition but ``partitions`` (a live view keeps only those of its latest
        poll)."""
        self._keep_rows(np.isin(self.ids, partitions))

    def _keep_rows(self, keep: np.ndarray) -> None:
        if keep.all():
            return
        self._changed()
        self.ids, self.n = self.ids[keep], self.n[keep]
        for name in ARRAYS:
            setattr(self, name, getattr(self, name)[keep])

    # -- observing ---------------------------------------------------------------------------------

    def observe(self, ts: int, partitions: np.ndarray, committed: np.ndarray, end: np.ndarray,
                start: np.ndarray | None = None) -> Observed:
        """Record one observation at ``ts`` of ``partitions`` (sorted, unique, each >= 0) with int64
        offsets (``start``: log start offsets, -1 or None where not read)."""
        if len(partitions) == 0:
            return Observed(0, 0)
        self._changed()
        partitions = np.asarray(partitions, dtype=np.int64)
        start = np.full(len(partitions), UNKNOWN, dtype=np.int64) if start is None else start
        if self._append_all(ts, partitions, committed, end, start):
            return Observed(len(partitions), 0)
        rows = self._rows_for(partitions)
        filled = self.n[rows]
        col = np.maximum(filled - 1, 0)
        last = np.where(filled > 0, self.ts[rows, col], -1)
        newer = last < ts
        same = last == ts
        changed = int(newer.sum())
        if same.any():
            # the same observation again: the furthest offsets win (end, then committed), so the
            # result does not depend on the order the copies arrive in
            r, c = rows[same], col[same]
            # the log start only moves up
            self.start[r, c] = np.maximum(self.start[r, c], start[same])
            old_end, old_committed = self.end[r, c], self.committed[r, c]
            new_end, new_committed = end[same], committed[same]
            further = (new_end > old_end) | ((new_end == old_end) & (new_committed > old_committed))
            if further.any():
                self.end[r[further], c[further]] = new_end[further]
                self.committed[r[further], c[further]] = new_committed[further]
                changed += int(further.sum())
        if newer.any():
            r = rows[newer]
            full = self.n[r] == self.depth
            if full.any():
                f = r[full]
                for name in ARRAYS:
                    arr = getattr(self, name)
                    arr[f, :-1] = arr[f, 1:]
                self.n[f] -= 1
            c = self.n[r]
            self.ts[r, c] = ts
            self.committed[r, c] = committed[newer]
            self.end[r, c] = end[newer]
            self.start[r, c] = start[newer]
            self.n[r] += 1
        return Observed(changed, int((last > ts).sum()))

    def _append_all(self, ts: int, partitions: np.ndarray, committed: np.ndarray, end: np.ndarray,
                    start: np.ndarray) -> bool:
        """The common case as whole-column writes: every known partition, nothing else, each with
        the same number of observations, all older than ``ts``. Returns False (nothing done)
        otherwise."""
        if len(partitions) != len(self.ids) or not np.array_equal(self.ids, partitions):
            return False
        filled = lag_time.filled_alike(self.n)
        if filled is None or (filled and not (self.ts[:, filled - 1] < ts).all()):
            return False
        self.append(ts, committed, end, start)
        return True

    def append(self, ts: int, committed: np.ndarray, end: np.ndarray, start: np.ndarray) -> None:
        """One poll of every row (offsets in row order), later than each row's newest, on a history
        whose rows all hold as many observations: what :meth:`observe` does then, without checking
        it (its caller has: :meth:`observe` itself, or a block read ahead,
        :mod:`streaming.lag.ahead`)."""
        self._changed()
        filled = int(self.n[0]) if len(self.n) else 0
        if filled == self.depth:
            for name in ARRAYS:
                arr = getattr(self, name)
                arr[:, :-1] = arr[:, 1:]
            filled -= 1
        self.ts[:, filled] = ts
        self.committed[:, filled] = committed
        self.end[:, filled] = end
        self.start[:, filled] = start
        self.n = np.full(len(self.n), filled + 1, dtype=np.int64)

    def append_block(self, ts: np.ndarray, committed: np.ndarray, end: np.ndarray,
                     start: np.ndarray) -> None:
        """:meth:`append` of each poll of a block in turn (``ts``: (K,); offsets (K, rows)), written
        at once."""
        self._changed()
        filled, polls, depth = (int(self.n[0]) if len(self.n) else 0), len(ts), self.depth
        # the newest columns held that stay, before the polls
        kept = min(filled, max(depth - polls, 0))
        for name, polled in (("ts", np.broadcast_to(ts, (len(self.ids), polls))),
                             ("committed", committed.T), ("end", end.T), ("start", start.T)):
            arr = getattr(self, name)
            arr[:, :kept] = arr[:, filled - kept:filled].copy()
            arr[:, kept:kept + min(polls, depth)] = polled[:, max(polls - depth, 0):]
        self.n = np.full(len(self.n), min(filled + polls, depth), dtype=np.int64)

    # -- views (one value per row, aligned with ``ids``) -------------------------------------------

    def view(self, key: object, compute):
        """A view of the history as it is (``compute()`` on first use), kept until it changes."""
        return self._view(key, compute)

    def seed(self, views: dict) -> None:
        """Take ``views`` as views of the history as it is now (:mod:`streaming.lag.ahead` read them
        ahead, its arrays read-only already: this runs at every poll read ahead)."""
        self._views().update(views)

    def _filled(self) -> int | None:
        return self._view("filled", lambda: lag_time.filled_alike(self.n))

    def _last(self, arr: np.ndarray) -> np.ndarray:
        filled = self._filled()
        if filled:  # the usual history: a column, no gather
            return arr[:, filled - 1]
        return arr[np.arange(len(self.ids)), np.maximum(self.n - 1, 0)]

    def _view(self, key: object, compute):
        views = self._views()
        if key not in views:
            views[key] = compute()
        return views[key]

    def _run(self) -> lag_time.Run:
        return self._view("run", lambda: lag_time.window(self.ts, self.committed, self.end, self.n))

    def aligned(self) -> int | None:
        """The observations each row holds when all hold as many and each row's latest run is all of
        them (the usual history: its run's first and last columns are plain columns), else None."""
        def compute() -> int | None:
            filled = self._filled()
            if filled is None or filled < 2:
                return filled
            ts, c, e = self.ts[:, :filled], self.committed[:, :filled], self.end[:, :filled]
            broken = (ts[:, 1:] <= ts[:, :-1]) | (c[:, 1:] < c[:, :-1]) | (e[:, 1:] < e[:, :-1])
            return None if broken.any() else filled
        return self._view("aligned", compute)

    def latest_ts(self) -> np.ndarray:
        """Time (ms) of each row's latest observation (0 where never observed)."""
        return self._view("latest_ts",
                          lambda: _frozen(np.where(self.n > 0, self._last(self.ts), 0)))

    def latest_lag(self) -> np.ndarray:
        """Lag (int64) per row at its latest observation (0 where never observed)."""
        def compute() -> np.ndarray:
            lag = self._last(self.end) - self._last(self.committed)
            if self._filled():  # every row observed
                return _frozen(np.maximum(lag, 0))
            return _frozen(np.where(self.n > 0, np.maximum(lag, 0), 0))
        return self._view("latest_lag", compute)

    def rate(self, which: str) -> np.ndarray:
        """Records/s of the ``end`` (produce) or ``committed`` (consume) offset over the kept
        history."""
        def compute() -> np.ndarray:
            arr = self.end if which == "end" else self.committed
            dt = (self._last(self.ts) - self.ts[:, 0]) / 1000.0
            # the int64 difference, then a float rate
            delta = (self._last(arr) - arr[:, 0]).astype(np.float64)
            with np.errstate(divide="ignore", invalid="ignore"):
                r = np.where((self.n >= 2) & (dt > 0), delta / np.where(dt > 0, dt, 1), 0.0)
            return _frozen(np.maximum(r, 0.0))
        return self._view(("rate", which), compute)

    def consume_rate(self) -> np.ndarray:
        """Records/s of the committed offset over each row's latest run (nan: one observation), the
        rate lag in seconds divides by (:mod:`streaming.lag.rules`; unlike :meth:`rate`, a counter
        reset starts a new run instead of reading as 0)."""
        def compute() -> np.ndarray:
            filled = self.aligned()
            if filled is None:
                return lag_time.rate(self.ts, self.committed, self.end, self.n, run=self._run())
            if filled < 2:
                return np.full(len(self.ids), np.nan)
            # lag_time.rate's own arithmetic on the run's first and last columns, no gather
            return lag_time.column_rate(self.ts[:, 0], self.ts[:, filled - 1], self.committed[:, 0],
                                        self.committed[:, filled - 1])
        return self._view("consume_rate", lambda: _frozen(compute()))

    def produce_rate(self) -> np.ndarray:
        """Records/s of the end offset over each row's latest run (nan: one observation), as
        :func:`streaming.lag.rules.rate` reads it."""
        return self._view("produce_rate", lambda: _frozen(
            lag_time.rate(self.ts, self.committed, self.end, self.n, "end", run=self._run())))

    def lag_age(self) -> lag_time.Age:
        """Age of each row's oldest unconsumed record at its latest observation
        (:func:`lag_time.oldest_age`)."""
        def compute() -> lag_time.Age:
            age = lag_time.oldest_age(self.ts, self.committed, self.end, self.n, run=self._run())
            return lag_time.Age(_frozen(age.seconds), _frozen(age.estimated))
        return self._view("lag_age", compute)

    def least_lag(self) -> np.ndarray:
        """The least lag of each row over its latest run (:func:`lag_time.least_lag`)."""
        return self._view("least_lag", lambda: _frozen(
            lag_time.least_lag(self.ts, self.committed, self.end, self.n, run=self._run())))

    def window_s(self) -> float:
        """The longest latest run of any row, in seconds (0 with at most one observation each)."""
        if not len(self.ids):
            return 0.0

        def compute() -> float:
            filled = self.aligned()
            if filled is not None:
                return float((self.ts[:, max(filled - 1, 0)] - self.ts[:, 0]).max()) / 1000.0
            rows, last, start = self._run()
            return float((self.ts[rows, last] - self.ts[rows, start]).max()) / 1000.0
        return self._view("window_s", compute)

    def retention(self) -> loss_risk.Risk:
        """Per row, how soon its committed offset falls below its log start
        (:mod:`streaming.lag.loss_risk`)."""
        def compute() -> loss_risk.Risk:
            risk = loss_risk.risk(self._last(self.committed), self._last(self.end),
                                  self._last(self.start), self.consume_rate(),
                                  loss_risk.start_rate(self.ts, self.start, self.n))
            return loss_risk.Risk(*(_frozen(a) for a in risk))
        return self._view("retention", compute)

    def stuck(self, k: int) -> np.ndarray:
        """Rows stuck at their last ``k`` observations (:func:`streaming.lag.rules.stuck_mask`)."""
        def compute() -> np.ndarray:
            filled = self.aligned()
            if filled is None or not 0 < k <= filled:
                return lag_time.stuck_mask(self.committed, self.end, self.n, k)
            # in an aligned run both offsets never go down: the last k committed offsets are one
            # when the first and last of them are, and the ends all above it when the first of them
            # is
            first, last = self.committed[:, filled - k], self.committed[:, filled - 1]
            return (last == first) & (self.end[:, filled - k] > first)
        return self._view(("stuck", k), lambda: _frozen(compute()))

    def dense(self, values: np.ndarray, count: int, dtype: type) -> np.ndarray:
        """``values`` (one per row) spread over partitions ``0..count-1``, zero where unobserved."""
        out: np.ndarray = np.zeros(count, dtype=dtype)
        keep = self.ids < count
        out[self.ids[keep]] = values[keep]
        return out

    # -- serialization -----------------------------------------------------------------------------

    def to_bytes(self) -> bytes:
        return b"".join(a.tobytes()
                        for a in (self.ids, self.ts, self.committed, self.end, self.start, self.n))

    @classmethod
    def byte_length(cls, rows: int, depth: int, starts: bool = True) -> int:
        return 8 * (2 * rows + (4 if starts else 3) * rows * depth)

    @classmethod
    def from_bytes(cls, blob: bytes, rows: int, depth: int, ids: np.ndarray | None = None,
                   starts: bool = True) -> LagHistory:
        """The layout of :meth:`to_bytes`; with ``ids`` given, the blob has no id array (state
        version 2, dense rows: row = partition number); without ``starts``, no log start array
        (state versions before 6: every log start unknown)."""
        h = cls.__new__(cls)
        h._memo, h._memo_of, h._lookups = {}, (), (None, {})
        flat = np.frombuffer(blob, dtype=np.int64)
        at = 0
        if ids is None:
            ids, at = flat[:rows].copy(), rows
        h.ids = np.asarray(ids, dtype=np.int64)
        size = rows * depth
        for name in ARRAYS if starts else ARRAYS[:-1]:
            setattr(h, name, flat[at:at + size].reshape(rows, depth).copy())
            at += size
        if not starts:
            h.start = np.full((rows, depth), UNKNOWN, dtype=np.int64)
        h.n = flat[at:at + rows].copy()
        h.check()
        return h

    def check(self) -> None:
        """Raise ValueError unless the arrays hold what every method assumes: partition numbers >= 0
        in increasing order, and 0 to ``depth`` filled observations per row (bytes read back from a
        state)."""
        if len(self.n) != self.rows or any(getattr(self, a).shape != (self.rows, self.depth)
                                           for a in ARRAYS):
            raise ValueError("lag history arrays of unequal shapes")
        if self.rows and (self.ids[0] < 0 or (np.diff(self.ids) <= 0).any()):
            raise ValueError("lag history partition numbers not increasing from 0")
        if self.rows and (self.n.min() < 0 or self.n.max() > self.depth):
            raise ValueError(f"lag history fill counts outside 0..{self.depth}")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LagHistory) and all(
            np.array_equal(getattr(self, a), getattr(other, a)) for a in ("ids", *ARRAYS, "n"))

    def __repr__(self) -> str:
        return f"LagHistory(rows={self.rows}, span={self.span}, depth={self.depth})"

"""A block of polls read ahead: the views a history will hold after each
poll, for all polls at once.

A backlog drained in one call brings many polls of a topic, each read after it is applied (capacity,
skew). Reading each history on its own costs the same few dozen numpy steps per poll whatever the
partitions; here they run once over the whole block. Only the usual case is read ahead, where the
result is exactly what the history would compute (:class:`~streaming.lag.history.LagHistory`'s views
on an aligned history):

- the history is aligned (every row holds as many observations and its run is all of them), and
- every poll of the block covers exactly the history's partitions, later than its newest observation
  and each later than the one before, and neither offset of any row goes down over the block (the
  block ends before the first poll that breaks this).

Then each poll is appended to every row (no row is late or replaced; the caller appends it with
:meth:`~streaming.lag.history.LagHistory.append` or
:meth:`~streaming.lag.history.LagHistory.append_block`, the checks done here) and the history stays
aligned, so its views after poll i are read off columns of the history and the polls laid side by
side. Given an assignment, the owners' sums (:mod:`streaming.lag.owners`) and the capacity window
(:func:`streaming.lag.capacity.window`; the least lags and produce rates only when some poll needs
them) after each poll come with them. Anything else is left to the history itself (None). A poll's
views are made when asked for (:class:`BlockViews`): a block decided in one pass
(:mod:`streaming.policy.block`) reads the arrays, never the polls' views.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import overload

import numpy as np

from streaming.lag import capacity, owners, rules
from streaming.lag.history import LagHistory


class BlockViews(Sequence[dict]):
    """Per poll of a block, the views its history holds after it, as :meth:`LagHistory.seed` takes
    them (each made on first use from the block's arrays); with an assignment, its owner sums and
    capacity windows."""

    def __init__(self, held: list[int], figures: tuple[np.ndarray, np.ndarray, np.ndarray],
                 seconds: np.ndarray, stuck_after: int) -> None:
        self.held, self.figures, self.seconds = held, figures, seconds
        self.stuck_after = stuck_after
        self.owned: tuple[np.ndarray, np.ndarray, int] | None = None
        self.sums: owners.OwnerSums | None = None
        self.windows: capacity.BlockWindow | None = None

    def __len__(self) -> int:
        return len(self.held)

    @overload
    def __getitem__(self, i: int) -> dict: ...
    @overload
    def __getitem__(self, i: slice) -> list[dict]: ...
    def __getitem__(self, i: int | slice) -> dict | list[dict]:
        if isinstance(i, slice):
            return [self[j] for j in range(len(self))[i]]
        n, (lag, rate, stuck), k = self.held[i], self.figures, self.stuck_after
        view = {"filled": n, "aligned": n, "latest_lag": lag[:, i], "consume_rate": rate[:, i],
                "window_s": float(self.seconds[i]), ("stuck", k): stuck[:, i]}
        if self.owned is not None and self.sums is not None and self.windows is not None:
            parts, who, count = self.owned
            view[owners.key(parts, who, count, k)] = (parts, who, owners.at(self.sums, i))
            view[capacity.window_key(parts, who, count, k)] = (parts, who, self.windows.at(i))
        return view


def block_views(hist: LagHistory, ts: np.ndarray, committed: np.ndarray, end: np.ndarray,
                stuck_after: int, owned: tuple[np.ndarray, np.ndarray, int] | None = None
                ) -> BlockViews | None:
    """The views ``hist`` holds after each poll of the block (``ts``: (K,) int64; ``committed``,
    ``end``: (K, rows) int64, in the history's row order), as :meth:`LagHistory.seed` takes them,
    for the block's polls up to the first that is not the usual case (a counter reset, a time not
    after the one before); None when the first is not. ``owned``: (partitions, owner indexes,
    owners) of an assignment whose :func:`streaming.lag.owners.sums` and
    :func:`streaming.lag.capacity.window` are read ahead too."""
    filled = rules.filled_alike(hist.n)
    if not hist.rows or not filled or not len(ts):
        return None
    t, c, e = (np.empty((hist.rows, filled + len(ts)), dtype=np.int64) for _ in range(3))
    for side, held, polled in ((t, hist.ts, ts), (c, hist.committed, committed.T),
                               (e, hist.end, end.T)):
        side[:, :filled] = held[:, :filled]
        side[:, filled:] = polled
    # per column after the first: a time not after the one before or an offset going down, in some
    # row. Within the history, it is not aligned (LagHistory.aligned); from the first poll on, that
    # poll is not the usual case
    broken = np.asarray(((t[:, 1:] <= t[:, :-1]) | (c[:, 1:] < c[:, :-1])
                         | (e[:, 1:] < e[:, :-1])).any(axis=0))
    if broken[:filled - 1].any():
        return None
    bad = broken[filled - 1:]
    usual = int(np.argmax(bad)) if bad.any() else len(ts)
    if not usual:
        return None
    t, c, e = t[:, :filled + usual], c[:, :filled + usual], e[:, :filled + usual]
    views = _views(t, c, e, filled, hist.depth, stuck_after)
    if owned is not None:
        parts, who, count = owned
        stuck = views.figures[2]

        def least_and_inflow() -> tuple[np.ndarray, np.ndarray]:
            least, inflow = _least_and_inflow(t, c, e, filled, views.held)
            return (owners.block_kept_sums(hist, parts, who, count, stuck, least),
                    owners.block_kept_sums(hist, parts, who, count, stuck, inflow))

        views.owned = owned
        views.sums = owners.block_sums(hist, parts, who, count, *views.figures)
        views.windows = capacity.block_window(views.sums, views.seconds, least_and_inflow)
    return views


def _least_and_inflow(t: np.ndarray, c: np.ndarray, e: np.ndarray, filled: int, held: list[int]
                      ) -> tuple[np.ndarray, np.ndarray]:
    """(rows, K): after each poll, the least lag over the columns the history keeps
    (:meth:`LagHistory.least_lag` of an aligned history) and the end offset's rate from its first
    column to its last (:meth:`LagHistory.rate` ``("end")``), the same arithmetic elementwise."""
    polls = len(held)
    gap = np.where(e > c, rules.gap(e, c), 0.0)
    least = gap[:, filled:].copy()
    # the column d before the last, for the polls that keep it (a suffix)
    for d in range(1, max(held)):
        i = next(j for j, n in enumerate(held) if n > d)
        least[:, i:] = np.minimum(least[:, i:], gap[:, filled + i - d:filled + polls - d])
    first = [j + 1 - n for j, n in enumerate(held, filled)]
    t_first, e_first = t[:, first], e[:, first]
    dt = (t[:, filled:] - t_first) / 1000.0
    delta = (e[:, filled:] - e_first).astype(np.float64)  # the int64 difference, then a float rate
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(np.array([n >= 2 for n in held])[None, :] & (dt > 0),
                        delta / np.where(dt > 0, dt, 1), 0.0)
    return least, np.maximum(rate, 0.0)


def _views(t: np.ndarray, c: np.ndarray, e: np.ndarray, filled: int, depth: int, k: int
           ) -> BlockViews:
    """Per poll i: the history's last column is ``filled + i`` of the side-by-side arrays, its first
    the oldest of the (at most ``depth``) it keeps: the (rows, K) latest lag, consume rate and stuck
    rows, and the window's seconds. The polls' own columns are slices (``filled`` on), their first
    columns too where they can be."""
    polls = t.shape[1] - filled
    # observations each row holds after each poll
    held = [min(j + 1, depth) for j in range(filled, t.shape[1])]
    first = [j + 1 - n for j, n in enumerate(held, filled)]
    # the first columns: one column while none drops out, else a slice once each poll drops one,
    # else a gather
    pick = (slice(0, 1) if first[-1] == 0 else slice(first[0], first[0] + polls) if first[0] > 0
            else first)
    t_first, c_first, t_last, c_last = t[:, pick], c[:, pick], t[:, filled:], c[:, filled:]
    lag = np.maximum(e[:, filled:] - c_last, 0)
    several = np.array([n >= 2 for n in held])
    # every poll (held never goes down): the usual case, a history of depth 1 holds one
    if held[0] >= 2:
        rate = rules.column_rate(t_first, t_last, c_first, c_last)
    else:
        rate = np.full(lag.shape, np.nan)
        if several.any():
            rate[:, several] = rules.column_rate(*(np.broadcast_to(a, lag.shape)[:, several]
                                                   for a in (t_first, t_last, c_first, c_last)))
    span = (t_last - t_first).max(axis=0)
    can = [k > 0 and n >= k for n in held]  # a suffix of the polls: held never goes down
    stuck = np.zeros(lag.shape, dtype=bool)
    if any(can):
        i = can.index(True)
        # the oldest of the k last observations of poll i, then of each poll after it
        low = filled + i - k + 1
        c_low, e_low = c[:, low:low + polls - i], e[:, low:low + polls - i]
        stuck[:, i:] = (c_last[:, i:] == c_low) & (e_low > c_low)
    for a in (lag, rate, stuck):  # the views are columns of these: read-only as the history's own
        a.flags.writeable = False
    return BlockViews(held, (lag, rate, stuck), span / 1000.0, k)  # float(span[i]) / 1000.0 each

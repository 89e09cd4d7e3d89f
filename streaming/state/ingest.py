"""A group's batch of parsed event rows, applied to its state one observation at a time.

An observation is every event of the group with one ``ts`` (the collector stamps a whole poll with
one time). :func:`observations` applies them in a fixed order (ts, then members, partitions, lag,
then content), so the same events give the same state however they were cut into micro-batches,
re-sent or replayed:

- metadata older than what the state holds is ignored and counted (:mod:`streaming.state.update`),
  and the parts of a split event wait in the state until the event is whole;
- a lag row older than its partition's newest observation never moves its offsets back.

It yields after each observation, so the caller (the policy) can act on the state as it is at that
``ts`` before the next one is applied. Lag rows never become Python objects one by one: they are
sorted, de-duplicated and applied as numpy arrays, one topic's poll at a time.

A ``lag_dense`` row (one poll of one topic) carries its readings in one int64 array,
:data:`READINGS`: its n partitions, then their n committed offsets, then their n end offsets. Its
entries are not made rows: the array is cut in three and joined to the ``lag`` rows' columns (one
slice per record), so a poll of n partitions costs a few numpy calls whatever n. Example: ``readings
= [0, 1, 800, 1200, 900, 5000]`` is partition 0 at 800 of 900 and partition 1 at 1200 of 5000,
exactly the two ``lag`` rows (0, 800, 900) and (1, 1200, 5000): the same readings in either form
give the same state. Log start offsets ride beside, in :data:`LOG_STARTS` (a ``lag_dense`` row's n,
a ``lag`` row's one, or null when the event had none: -1, unknown, in the history).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from streaming.contracts import event_parts
from streaming.contracts.events import LAG, LAG_DENSE, LOG_START
from streaming.contracts.events import LOG_STARTS as LOG_STARTS_FIELD
from streaming.lag import ahead
from streaming.lag.ahead import BlockViews
from streaming.lag.owners import Owners
from streaming.state import update, waiting
from streaming.state.changes import Changes
from streaming.state.group_state import GroupState
from streaming.state.readings import (
    LOG_STARTS,
    READINGS,
    dense_readings,
    ints,
    joined,
    packed,
    polls_in_order,
    row_starts,
)

# parsed event rows: a DataFrame, a dict of equal-length column arrays, or a list of dicts
Events = pd.DataFrame | dict[str, np.ndarray] | Iterable[dict[str, Any]]
LAG_COLUMNS = ("ts", "partition", "committed_offset", "end_offset")
def event_order(e: dict[str, Any]) -> tuple:
    """Metadata events of one ts: members, then partitions, by topic; the event's own content breaks
    a tie, so the order never depends on how the events reached the job."""
    return (int(e["ts"]), update.TYPE_ORDER[e["type"]], e.get("topic") or "",
            json.dumps(e, sort_keys=True, separators=(",", ":"), default=str))


def columns(events: Events) -> dict[str, np.ndarray]:
    """``events`` as column arrays (as they are, when they are)."""
    if isinstance(events, dict):
        return events
    if isinstance(events, pd.DataFrame):
        # a nullable integer column as objects: to_numpy() would give float64, inexact past 2**53
        # (pandas takes any scalar as na_value, None included; its stubs list no None)
        return {c: events[c].to_numpy(dtype=object, na_value=None)  # type: ignore[call-overload]
                if events[c].dtype.kind == "i"
                and isinstance(events[c].dtype, pd.api.extensions.ExtensionDtype)
                else events[c].to_numpy()
                for c in events.columns}
    rows = [e | {READINGS: packed(e)} if e.get("type") == LAG_DENSE and READINGS not in e else e
            for e in events]
    rows = [e | {LOG_STARTS: _log_starts_of(e)}
            if LOG_STARTS not in e and e.get("type") in (LAG, LAG_DENSE) else e
            for e in rows]
    names = sorted({k for e in rows for k in e})
    cols = {}
    for name in names:
        col = np.empty(len(rows), dtype=object)  # filled one by one: list values stay lists
        for i, e in enumerate(rows):
            col[i] = e.get(name)
        cols[name] = col
    return cols


def split_at(cols: dict[str, np.ndarray],
             ts: int) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The rows with ``ts`` at most ``ts``, and those after it: the rest of the observation at
    ``ts``, and what closes it (:mod:`streaming.state.whole`)."""
    if not cols or not len(cols["type"]):
        return cols, {}
    later = ints(cols, "ts", slice(None)) > ts
    return ({c: v[~later] for c, v in cols.items()}, {c: v[later] for c, v in cols.items()})


def last_ts(cols: dict[str, np.ndarray]) -> int | None:
    """The latest ``ts`` of the rows; None when there are none."""
    if not cols or not len(cols["type"]):
        return None
    return int(ints(cols, "ts", slice(None)).max())


def _log_starts_of(event: dict[str, Any]) -> list[int] | None:
    """An event dict's :data:`LOG_STARTS` value."""
    if event.get("type") == LAG_DENSE:
        return event.get(LOG_STARTS_FIELD)
    return None if event.get(LOG_START) is None else [event[LOG_START]]


def _metadata_event(cols: dict[str, np.ndarray], i: int) -> dict[str, Any]:
    """Row ``i`` as the event dict; the job's rows carry the metadata fields as
    JSON in ``detail``."""
    e = {n: v[i] for n, v in cols.items() if n not in ("detail", READINGS)}
    e = {k: (None if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)) else v)
         for k, v in e.items()}
    detail = cols["detail"][i] if "detail" in cols else None
    if isinstance(detail, str):
        e |= json.loads(detail)
    return e


@dataclass
class Observation:
    """One observation applied to the state: its time, the metadata changes it brought, whether it
    moved any lag row, and (when it carried lag) who owns what now."""

    ts: int
    changes: Changes
    lag_changed: bool
    owners: Owners | None
    metadata_events: int = 0
    """The most metadata events its lag rows say the poll has (0: none, or none said):
    :func:`streaming.state.whole.complete` waits for them."""


@dataclass
class Block:
    """Polls of one topic read ahead (:mod:`streaming.lag.ahead`) from an observation on, not
    applied yet, in a call with no metadata: per poll its time and the figures its history will give
    after it, under ``owners``."""

    stamps: list[int]
    views: BlockViews
    first: int
    """The index of the block's first poll among ``views``."""
    owners: Owners
    topic: str
    starts_read: bool
    """Whether a log start is known in the history or the polls (else no retention figure
    can say anything)."""

    taken: int = field(default=0, init=False)
    """How many of the first polls the caller decided (:meth:`take`)."""

    def __post_init__(self) -> None:
        self.windows = self.views.windows if list(self.owners.by_topic) == [self.topic] else None
        """The polls' capacity windows and owners' lag sums (rows ``first`` on), when the owners'
        figures are this topic's alone (they own partitions of no other), else None."""

    def take(self, n: int) -> None:
        """The caller decided the block's first ``n`` polls in one pass (its part of each
        observation: its policy), stopping before a poll it must see applied: those ``n`` are
        applied at once when the iteration goes on, never yielded as observations."""
        if not 0 <= n <= len(self.stamps):
            raise ValueError(f"a block of {len(self.stamps)} polls cannot take {n}")
        self.taken = n


def observations(state: GroupState, events: Events, lag_depth: int, stuck_after: int,
                 blocks: bool = False, hold: bool = True) -> Iterator[Observation | Block]:
    """Apply a group's events to ``state``, yielding after each observation in ts order. ``events``:
    parsed rows as a DataFrame, a dict of column arrays, or a list of dicts; ``lag_depth``: the
    number of observations each partition's lag history keeps; ``stuck_after``: the stuck rule the
    caller reads (a call of lag polls alone has its histories' views read ahead for it,
    :mod:`streaming.lag.ahead`; a reporting member's lag is read with it); ``blocks``: where polls
    were read ahead, a :class:`Block` of them is yielded first, and the polls the caller takes from
    it (:meth:`Block.take`) before it goes on are applied at once; ``hold``: the newest poll's lag
    waits in the state while metadata it counts is missing (:mod:`streaming.state.waiting`; False:
    what comes next closes it). The caller drives: nothing here calls back into it."""
    cols = columns(events)
    if not cols or len(cols["type"]) == 0:
        return
    is_lag, is_dense = cols["type"] == LAG, cols["type"] == LAG_DENSE
    meta_rows = np.flatnonzero(~(is_lag | is_dense))
    meta_by_ts = _metadata_by_ts(state, cols, meta_rows)
    lag = _LagRows.of(cols, is_lag, is_dense) if len(meta_rows) < len(is_lag) else None
    counted = waiting.counted(cols, is_lag | is_dense)
    # nothing but lag changes the histories: they can be read ahead, up to a poll with metadata
    # of its own
    if lag is not None and not meta_by_ts:
        lag.stuck_after, lag.counted = stuck_after, counted
    owners: Owners | None = None
    stamps = sorted(meta_by_ts.keys() | (lag.slices.keys() if lag else set()))
    for t in stamps:
        if lag is not None and not meta_by_ts:
            if t <= lag.decided_to:
                continue  # applied with its block
            offer = lag.block_at(state, t) if blocks else None
            if offer is not None:
                yield offer
                if lag.apply_block(state, offer):
                    continue
        changes = Changes()
        if t in meta_by_ts:
            update.apply_metadata(state, meta_by_ts[t], changes, stuck_after)
            if changes.applied:
                owners = None
        lag_changed = False
        if lag is not None and t in lag.slices:
            if hold and t == stamps[-1] and waiting.waits(state, t, counted.get(t, 0)):
                waiting.hold(state, cols, is_lag | is_dense, t)
            else:
                lag_changed = lag.observe(state, t, lag_depth)
                if owners is None:
                    owners = state.owners()
        yield Observation(t, changes, lag_changed, owners, counted.get(t, 0))
    if state.parts:
        update.prune_parts(state)



def _metadata_by_ts(state: GroupState, cols: dict[str, np.ndarray],
                    rows: np.ndarray) -> dict[int, list[dict]]:
    """The metadata events of the rows (parts put together with those the state holds) by
    ts, in order."""
    by_ts: dict[int, list[dict]] = {}
    if not len(rows):
        return by_ts
    metadata = [_metadata_event(cols, i) for i in rows.tolist()]
    whole = [e for e in metadata if not event_parts.is_part(e)]
    whole += update.collect_parts(state, [e for e in metadata if event_parts.is_part(e)])
    for e in sorted(whole, key=event_order):
        by_ts.setdefault(int(e["ts"]), []).append(e)
    return by_ts


@dataclass
class _LagRows:
    """A call's lag rows sorted by (ts, topic, partition), one row each, and the row range
    of each ts."""

    topic_names: np.ndarray
    topic_codes: np.ndarray
    ts: np.ndarray
    part: np.ndarray
    committed: np.ndarray
    end: np.ndarray
    start: np.ndarray
    """log start offsets (:data:`UNKNOWN` where not read)."""
    slices: dict[int, tuple[int, int]]
    stuck_after: int | None = None
    """Set: the histories' views are read ahead, where they can be, for this stuck rule."""
    counted: dict[int, int] = field(default_factory=dict)
    """ts -> metadata events its poll says it has (:func:`streaming.state.waiting.counted`):
    reading ahead stops before such a poll, whose metadata this call does not hold."""
    ahead: dict[int, int] = field(default_factory=dict)
    """ts -> its index among the views read ahead (one topic), while not applied."""
    views: BlockViews | None = None
    ahead_owners: Owners | None = None
    """The owners the views were read ahead under."""
    decided_to: int = -(2**63)
    """The last ts a block decided and applied (:meth:`apply_block`)."""
    tries: int = 0
    tried_at: int | None = None

    @classmethod
    def of(cls, cols: dict[str, np.ndarray], is_lag: np.ndarray,
           is_dense: np.ndarray) -> _LagRows | None:
        """The ``lag`` rows and the readings of the ``lag_dense`` rows; None when there are none."""
        polls = polls_in_order(cols, is_lag, is_dense)
        if polls is not None:
            return cls(*polls)
        # every row lag (the usual batch of a group in the per-partition form): the columns
        # as they are
        rows = slice(None) if is_lag.all() else np.flatnonzero(is_lag)
        topics, ts, part, committed, end = (cols["topic"][rows],
                                            *(ints(cols, c, rows) for c in LAG_COLUMNS))
        start = row_starts(cols, rows)
        if is_dense.any():
            topics, ts, part, committed, end, start = joined(
                (topics, ts, part, committed, end, start), dense_readings(cols, is_dense))
        if not len(ts):
            return None
        # the usual case, a group of one topic: no sort of the names
        if (topics == topics[0]).all():
            names, codes = np.array([str(topics[0])]), np.zeros(len(topics), dtype=np.int64)
        else:
            names, codes = np.unique(topics.astype(str), return_inverse=True)
        # the usual batch of a group, one poll of one topic in partition order, is sorted
        # and unique already
        if len(names) == 1 and (ts == ts[0]).all() and (part[1:] > part[:-1]).all():
            return cls(names, codes, ts, part, committed, end, start, {int(ts[0]): (0, len(ts))})
        order = np.lexsort((start, end, committed, part, codes, ts))
        ts, part, committed, end, start, codes = (
            a[order] for a in (ts, part, committed, end, start, codes))
        # one row per (ts, topic, partition): a duplicate (a replay, a resent poll) keeps the
        # furthest offsets, whatever order the copies came in
        keep = np.ones(len(ts), dtype=bool)
        keep[:-1] = (ts[1:] != ts[:-1]) | (codes[1:] != codes[:-1]) | (part[1:] != part[:-1])
        ts, part, committed, end, start, codes = (
            a[keep] for a in (ts, part, committed, end, start, codes))
        # lists, not np.r_: this runs per group per batch, and an np.r_ costs ~10 us
        bounds = [*(np.flatnonzero(ts[1:] != ts[:-1]) + 1).tolist(), len(ts)]
        slices = {int(ts[a]): (a, b) for a, b in itertools.pairwise([0, *bounds])}
        return cls(names, codes, ts, part, committed, end, start, slices)

    def observe(self, state: GroupState, t: int, lag_depth: int) -> bool:
        """The observation at ``t`` into the state's lag histories, one topic at a time;
        whether any changed."""
        a, b = self.slices[t]
        codes = self.topic_codes[a:b]
        cuts = ([0, *(np.flatnonzero(codes[1:] != codes[:-1]) + 1).tolist(), b - a]
                if len(self.topic_names) > 1 else [0, b - a])
        self._read_ahead(state, t)
        if t in self.ahead:  # checked when read ahead: appended to every row, as observe_lag would
            hist = state.lag[str(self.topic_names[0])]
            hist.append(t, self.committed[a:b], self.end[a:b], self.start[a:b])
            hist.seed(self.views[self.ahead.pop(t)])  # type: ignore[index]  # set with ahead
            state.last_ts = max(state.last_ts, t)
            return True
        changed = False
        for lo, hi in itertools.pairwise(cuts):
            rows = slice(a + lo, a + hi)
            seen = update.observe_lag(state, str(self.topic_names[codes[lo]]), t, self.part[rows],
                                      self.committed[rows], self.end[rows], lag_depth,
                                      self.start[rows])
            changed |= seen.changed > 0
        return changed

    def _read_ahead(self, state: GroupState, t: int) -> None:
        """The views after each observation from ``t`` on, when they are polls of one topic's
        partitions the history holds, the same ones each time (tried three times in a call: a new
        group's history only exists after its first observation, and a block read ahead ends at a
        counter reset)."""
        if self.stuck_after is None or t in self.ahead or self.tries >= 3 or t == self.tried_at:
            return
        self.tries, self.tried_at = self.tries + 1, t
        hist = state.lag.get(str(self.topic_names[0]))
        a, b = self.slices[t]
        stamps = [s for s in self.slices if s >= t]
        if self.counted:  # up to the first poll waiting for metadata, which is decided alone
            stamps = list(itertools.takewhile(lambda s: s not in self.counted, stamps))
        n = b - a
        if len(self.topic_names) > 1 or hist is None or len(stamps) < 2 or any(
                self.slices[s][1] - self.slices[s][0] != n for s in stamps):
            return
        z = a + len(stamps) * n
        part = self.part[a:z].reshape(len(stamps), n)
        if not (np.array_equal(part[0], hist.ids) and (part == part[0]).all()):
            return
        held = state.owners()  # no metadata in the call: the owners of its every observation
        mine = held.by_topic.get(str(self.topic_names[0]))
        views = ahead.block_views(hist, np.asarray(stamps, dtype=np.int64),
                                  self.committed[a:z].reshape(-1, n),
                                  self.end[a:z].reshape(-1, n), self.stuck_after or 0,
                                  None if mine is None else (*mine, held.count))
        if views is not None:
            # the block may end early
            self.ahead = {s: i for i, s in enumerate(stamps[:len(views)])}
            self.views, self.ahead_owners = views, held

    def block_at(self, state: GroupState, t: int) -> Block | None:
        """The polls read ahead from ``t`` on, as a :class:`Block`; None when none are."""
        self._read_ahead(state, t)
        if t not in self.ahead or self.ahead_owners is None:
            return None
        topic = str(self.topic_names[0])
        a = self.slices[t][0]
        starts_read = bool((state.lag[topic].start >= 0).any() or (self.start[a:] >= 0).any())
        stamps = list(self.ahead)  # from t on: a poll is popped once applied
        return Block(stamps, self.views,  # type: ignore[arg-type]
                     self.ahead[t], self.ahead_owners, topic, starts_read)

    def apply_block(self, state: GroupState, block: Block) -> bool:
        """The polls the caller took from ``block``, applied at once (the history written once, the
        views of the last of them kept); whether it took any."""
        n, stamps = block.taken, block.stamps
        if not n:
            return False
        a, b = self.slices[stamps[0]][0], self.slices[stamps[n - 1]][1]
        state.lag[block.topic].append_block(
            self.ts[a:b:(b - a) // n],
            *(x[a:b].reshape(n, -1) for x in (self.committed, self.end, self.start)))
        for s in stamps[:n]:  # nothing reads the views of a poll decided: none is seeded
            del self.ahead[s]
        state.last_ts = max(state.last_ts, stamps[n - 1])
        self.decided_to = stamps[n - 1]
        return True

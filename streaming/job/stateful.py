"""The ``applyInPandasWithState`` step, one group at a time.

It only moves data: pandas rows in, :func:`streaming.policy.recommend.process` on the group's state,
pandas rows out. :func:`apply_group` is one group's part of a call, pure (rows and state bytes in,
rows and state bytes out); :func:`make_update` runs it keyed by group (one call per group per
micro-batch, the state in Spark's GroupState), :mod:`streaming.job.buckets` keyed by buckets of
groups (many groups per call).

Records :mod:`streaming.job.validate` rejected ride along under their group and come out unchanged
as ``rejected`` rows, so one query (one checkpoint, one batch id) writes both tables; so do the bad
entries of a ``lag_dense`` record (a list in its ``detail``, :mod:`streaming.job.dense`), beside its
good ones. A ``lag_dense`` row left with no good entry counts as rejected: it changes no state, as
its entries as ``lag`` rows would not.

A poll decided without every metadata event its lag counts (which only a batch cap or a rejected
metadata event allows: :mod:`streaming.state.waiting`) leaves a ``metadata_missing`` row, which the
driver logs and counts (:func:`missing_rows`).

Two more kinds of row leave as ``rejected``, never silently:

- ``late``: a valid event whose ts is at or below the current watermark (Spark's own rule for late
  rows). The query nulls the watermark column before this step (keeping its marker), so Spark hands
  such rows over instead of dropping them; they are rejected here and do not touch the state. Which
  rows are late depends, as in Spark, on the watermark when they arrive; everything else is decided
  by event time alone.
- ``internal error: <Type>: <message>``: anything that raises while a group's events are applied. No
  record's fault leaves this function as an exception (one group must not stop the query), and the
  blast radius is one event: the group's rows are applied again one observation, then one row, at a
  time (:mod:`streaming.job.isolate`), and only a row that raises is rejected, with the error and
  its source offset; the group's other rows and its state go on.

A state that cannot be read (another version's layout, another keying, damaged bytes) is no record's
fault, and no record can be applied to it: rejecting its group's records would go on forever.
:class:`~streaming.state.errors.UnreadableState` leaves the step instead, the query fails, and the
supervisor ends the job with that one error, which names the way out.

Everything a call returns is converted to Arrow inside the call, once, with the conversion and
configuration pyspark's worker applies after it returns (:mod:`streaming.job.convert`): a group's
recommendation rows before its state is kept (rows that do not convert are an error of the events
that made them, as above), and the call's other rows (rejected ones) in :func:`output_frame`.
pyspark's own conversion then repeats one that already succeeded (Arrow's own values convert to
themselves), so no value can fail the task, and the query, after the function.

A row rejected here carries the event re-encoded from its parsed fields as
``raw_value`` and its source (topic from its type, partition, offset); its ``kafka_ts``
is null (:mod:`streaming.job.rejection`).
"""

from __future__ import annotations

import contextlib
import gc
import json
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from streaming.config import PolicySettings
from streaming.contracts.events import LAG_DENSE, LAG_TYPES, METADATA_EVENTS
from streaming.job import convert, isolate
from streaming.job.convert import ROW_COLUMNS
from streaming.job.rejection import reencoded, rejected_row
from streaming.policy.recommend import process
from streaming.state.group_state import METADATA_MISSING, GroupState
from streaming.state.readings import LOG_STARTS, READINGS, dense_sizes

# pyspark's applyInPandasWithState serializer pads each output batch with an all-null frame before
# its pd.concat, and pandas 2 warns about that on every batch in the worker's stderr; the padding is
# dropped by design, so the warning says nothing about our data.
warnings.filterwarnings(
    "ignore", message="The behavior of DataFrame concatenation with empty or all-NA",
    category=FutureWarning)

# pyspark's daemon runs gc.collect() in the worker after every task; with pandas, numpy, scipy and
# the assignors loaded that walked ~1e6 long-lived objects each time (13% of the worker's time in a
# profile). Objects alive once this module is imported (in the worker: when the function is
# unpickled) are frozen out of collection; they live as long as the worker anyway.
gc.freeze()

STATE_SCHEMA = "state BINARY"
EVENT_COLUMNS = ["type", "ts", "topic", "partition", "committed_offset", "end_offset", "detail",
                 READINGS, LOG_STARTS, METADATA_EVENTS]
OPTIONAL_COLUMNS = (READINGS, LOG_STARTS, METADATA_EVENTS)
"""Columns a call's rows may come without (no ``lag_dense`` record, no log start read, rows from
before lag events counted their poll's metadata): all null."""
SOURCE_COLUMNS = ["source_partition", "source_offset"]
MESSAGE_CHARS = 200
"""An internal error's message is cut to this length in its reason."""


@dataclass(frozen=True)
class Context:
    """What every group's call needs besides its rows and state."""

    policy: PolicySettings
    timeout_ms: int
    floors: dict[str, int] = field(default_factory=dict)
    """group -> highest version already in the table when the checkpoint began
    (:func:`streaming.operations.delta_tables.version_floors`); the group's versions, and so its
    ids, continue above it."""
    lag_topic: str = "rebalancer.lag"
    metadata_topic: str = "rebalancer.metadata"
    arrow: convert.Options = field(default_factory=convert.Options)
    """pyspark's conversion settings of the session that runs the query."""

    def topic_of(self, kind: str) -> str:
        """The source topic of an event of this type (for rows rejected here)."""
        return self.lag_topic if kind in LAG_TYPES else self.metadata_topic


@dataclass
class Step:
    """What one group's call did: its output rows and its state afterwards."""

    rows: list[dict[str, Any]]
    blob: bytes | None
    """The group's state after the call (:meth:`GroupState.to_bytes`), or None: it has none."""
    updated: bool
    """Whether ``blob`` is new (else it is the state the call was given)."""
    timeout: int | None
    """The group's event-time timeout from now on (ms), whenever it has a state."""


def make_update(policy: PolicySettings, timeout_ms: int,
                version_floors: dict[str, int] | None = None, *,
                lag_topic: str = "rebalancer.lag", metadata_topic: str = "rebalancer.metadata"):
    """The update function keyed by group (``job.state_buckets = 0``): one call per group per
    batch, the group's state in Spark's GroupState. ``lag_topic``/``metadata_topic`` name the
    source topic of rows rejected here; pyspark's conversion settings are the active
    session's, read here on the driver. :mod:`streaming.job.buckets` keys by buckets of groups
    around the same :func:`apply_group`."""
    return update_function(Context(policy, timeout_ms, dict(version_floors or {}), lag_topic,
                                   metadata_topic, convert.Options.of_session()))


def update_function(ctx: Context):
    """The update function keyed by group, for ``ctx``."""

    def update(key: tuple, chunks: Iterator[pd.DataFrame], state) -> Iterator[pd.DataFrame]:
        if state.hasTimedOut:
            state.remove()
            return
        rows = group_rows(key[0], chunks, state, ctx)
        if rows:
            yield output_frame(rows, ctx.arrow)

    return update


def object_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Rows as a frame, every column of object dtype: a column the rows leave empty would otherwise
    be float NaN, and pyspark 4.2 cannot convert an all-NaN float column to a STRING one (its Arrow
    conversion fails on a ChunkedArray) when no padding row joins the batch. A column a row leaves
    out is None, never NaN (the converted rows leave out their null columns: a DOUBLE must come out
    null, not NaN)."""
    frame = pd.DataFrame(rows, columns=ROW_COLUMNS, dtype=object)
    # None is what pandas puts in an object column
    return frame.where(frame.notna(), None)  # type: ignore[call-overload]


def output_frame(rows: list[dict[str, Any]], arrow: convert.Options) -> pd.DataFrame:
    """A call's output rows as pyspark will convert them and read them back (so its conversion of
    them cannot fail): the rows converted already (:class:`convert.Converted`: a group's
    recommendations, converted before its state was kept) as they are, the others converted here; a
    row that does not convert is replaced by a rejected row saying why."""
    fresh = [row for row in rows if not isinstance(row, convert.Converted)]
    if not fresh:
        return object_frame(rows)
    done = iter(_converted(fresh, arrow))
    return object_frame([row if isinstance(row, convert.Converted) else next(done) for row in rows])


def _converted(rows: list[dict[str, Any]], arrow: convert.Options) -> list[dict[str, Any]]:
    """``rows`` converted, one for one: a row that does not convert (a name no UTF-8 can hold) as
    the rejected row that says so."""
    try:
        return list(convert.converted(rows, arrow))
    except Exception:
        out: list[dict[str, Any]] = []
        for row in rows:
            try:
                out += convert.converted([row], arrow)
            except Exception as exc:
                out += convert.converted([unconverted(row, exc)], arrow)
        return out


def unconverted(row: dict[str, Any], exc: BaseException) -> dict[str, Any]:
    """The rejected row that stands for ``row``, which pyspark could not convert."""
    group = row.get("group") if isinstance(row.get("group"), str) else None
    detail: dict[str, Any] = {"reason": internal_error(exc)}
    # keep the record's source when the row is a readable rejected one
    with contextlib.suppress(Exception):
        kept = json.loads(row["rejected"])
        source = ("raw_value", "source_topic", "source_partition", "source_offset", "kafka_ts")
        detail = {k: kept.get(k) for k in source} | detail
    return rejected_row(group or "", detail)


def group_rows(group: str, chunks: Iterable[pd.DataFrame], state,
               ctx: Context) -> list[dict[str, Any]]:
    """The output rows of one group's call; raises only for a state that cannot be read (the job
    stops). ``state`` is pyspark's GroupState (or alike)."""
    try:
        cols = read_columns(chunks)
    except Exception as exc:  # the rows themselves are unreadable: one row says so
        return [rejected_row(group, {"reason": internal_error(exc)})]
    watermark = current_watermark(state)
    valid, late = row_masks(cols, watermark)
    blob = state.get[0] if state.exists else None
    step = apply_group(group, cols, valid, late, blob, watermark, ctx)
    if step.updated:
        state.update((step.blob,))
    if step.timeout is not None:
        set_timeout(state, step.timeout, watermark, ctx.timeout_ms)
    return step.rows


def read_columns(chunks: Iterable[pd.DataFrame],
                 extra: tuple[str, ...] = ()) -> dict[str, np.ndarray]:
    """A call's rows as numpy columns (the event and source columns, and ``extra``)."""
    chunks = list(chunks)
    names = (*EVENT_COLUMNS, *SOURCE_COLUMNS, *extra)

    def column(chunk: pd.DataFrame, c: str) -> np.ndarray:
        if c in chunk or c not in OPTIONAL_COLUMNS:
            return chunk[c].to_numpy()
        return np.full(len(chunk), None, dtype=object)

    if len(chunks) == 1:
        return {c: column(chunks[0], c) for c in names}
    # column by column: pd.concat checks every value of an all-null object column (detail,
    # for lag rows)
    return {c: np.concatenate([column(chunk, c) for chunk in chunks]) for c in names}


def row_masks(cols: dict[str, np.ndarray], watermark: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row: valid (validate.parse gave it a type; a ``lag_dense`` row, a good entry too) and
    late (valid, ts at or below the watermark)."""
    valid = pd.notna(cols["type"]).astype(bool)
    if READINGS in cols:
        valid &= (cols["type"] != LAG_DENSE) | (dense_sizes(cols) > 0)
    return valid, valid & _at_or_below(cols["ts"], watermark)


def validation_rejects(cols: dict[str, np.ndarray]) -> list[tuple[int, str]]:
    """(row, detail) of each rejection validate.parse made, in row order: a rejected record's, and
    each bad entry of a ``lag_dense`` record (its ``detail`` holds them as a JSON list)."""
    if len(cols["type"]) <= 64 and all(
            isinstance(t, str) and (t != LAG_DENSE or d is None)
            for t, d in zip(cols["type"].tolist(), cols["detail"].tolist(), strict=True)):
        # a group's few rows, all typed, no lag_dense row carrying bad entries: pandas' checks
        # cost ~20 us
        return []
    typed = pd.notna(cols["type"]).astype(bool)
    carriers = typed & (cols["type"] == LAG_DENSE) & pd.notna(cols["detail"]).astype(bool)
    out: list[tuple[int, str]] = []
    for i in np.flatnonzero(~typed | carriers).tolist():
        detail = cols["detail"][i]
        out += ([(i, json.dumps(d, separators=(",", ":"))) for d in json.loads(detail)]
                if carriers[i] else [(i, detail)])
    return out


def apply_group(group: str, cols: dict[str, np.ndarray], valid: np.ndarray, late: np.ndarray,
                blob: bytes | None, watermark: int, ctx: Context) -> Step:
    """One group's rows of a call applied to its state ``blob`` (None: none yet); raises only
    :class:`~streaming.state.errors.UnreadableState`, for a ``blob`` that cannot be read.

    Rows validate.parse rejected pass through, late rows are rejected, the rest go through
    :func:`~streaming.policy.recommend.process`. If that raises, :func:`isolated` finds the rows
    that raise."""
    rows: list[dict[str, Any]] = [{"kind": "rejected", "group": group or None, "rejected": d}
                                  for _, d in validation_rejects(cols)]
    if late.any():
        rows += [rejected_row(group, reencoded(cols, i, group, "late", ctx.topic_of))
                 for i in np.flatnonzero(late).tolist()]
    keep = valid & ~late
    gs = state_of(group, blob, ctx)  # UnreadableState leaves: the job stops (module docstring)
    try:
        if not keep.any():
            timeout = None if blob is None else max(gs.last_ts + ctx.timeout_ms, watermark + 1)
            return Step(rows, blob, False, timeout)
        events = ({c: cols[c] for c in EVENT_COLUMNS} if keep.all()
                  else {c: cols[c][keep] for c in EVENT_COLUMNS})
        missing = gs.counters.get(METADATA_MISSING, 0)
        recs = [{"kind": "recommendation", **rec.to_row()}
                for rec in process(gs, events, ctx.policy)]
        rows += missing_rows(group, gs, missing)
        if recs:
            # converted before the state is kept: rows pyspark would refuse reject
            # the group instead
            rows += convert.converted(recs, ctx.arrow)
        return Step(rows, gs.to_bytes(), True, max(gs.last_ts + ctx.timeout_ms, watermark + 1))
    except Exception:
        return isolated(group, cols, keep, blob, watermark, ctx, rows)


def missing_rows(group: str, gs: GroupState, before: int) -> list[dict[str, Any]]:
    """A ``metadata_missing`` row for each poll of the group this call decided without every
    metadata event its lag counts (its ``event_ts`` the newest poll the call applied, the one that
    closed it or later): the driver logs and counts them (:class:`streaming.job.sinks.BatchWriter`).
    A call :func:`isolated` applies leaves none: its state counts them still."""
    n = gs.counters.get(METADATA_MISSING, 0) - before
    return [{"kind": METADATA_MISSING, "group": group, "event_ts": gs.last_ts} for _ in range(n)]


def isolated(group: str, cols: dict[str, np.ndarray], keep: np.ndarray, blob: bytes | None,
             watermark: int, ctx: Context, rows: list[dict[str, Any]]) -> Step:
    """The group's rows ``keep`` raised together: applied again one observation, then one row, at a
    time (:mod:`streaming.job.isolate`); a row that raises is rejected with its error and source,
    the others and the state go on. Should even that fail, every row is rejected, the state kept."""
    idx = np.flatnonzero(keep)

    def accept(recs: list) -> list:
        out = [{"kind": "recommendation", **r.to_row()} for r in recs]
        return convert.converted(out, ctx.arrow) if out else []

    try:
        gs = state_of(group, blob, ctx)
        events = {c: cols[c][idx] for c in EVENT_COLUMNS}
        done = isolate.apply_each(gs, events, cols["source_offset"][idx], ctx.policy, accept)
        failed = {int(idx[j]): internal_error(exc) for j, exc in done.failed.items()}
        kept = done.state.to_bytes() if len(failed) < len(idx) else None
    except Exception as exc:
        failed, kept, done = dict.fromkeys(idx.tolist(), internal_error(exc)), None, None
    rows += [rejected_row(group, reencoded(cols, i, group, reason, ctx.topic_of))
             for i, reason in sorted(failed.items())]
    if kept is None or done is None:
        timeout = None if blob is None else kept_timeout(blob, ctx.timeout_ms, watermark)
        return Step(rows, blob, False, timeout)
    timeout = max(done.state.last_ts + ctx.timeout_ms, watermark + 1)
    return Step([*rows, *done.out], kept, True, timeout)


def state_of(group: str, blob: bytes | None, ctx: Context) -> GroupState:
    """The group's state from its bytes (a new one for None); raises
    :class:`~streaming.state.errors.UnreadableState`."""
    gs = GroupState.from_bytes(blob) if blob is not None else GroupState(group=group)
    gs.version = max(gs.version, ctx.floors.get(group, 0))  # a new checkpoint never reuses an id
    return gs


def kept_timeout(blob: bytes, timeout_ms: int, watermark: int) -> int:
    """The timeout of a state a failed call left as it was: it must still be set again, or
    it is cleared."""
    try:
        return max(GroupState.from_bytes(blob).last_ts + timeout_ms, watermark + 1)
    except Exception:  # unreadable: give it the full timeout from now
        return max(watermark, 0) + timeout_ms


def set_timeout(state, timeout: int, watermark: int, timeout_ms: int) -> None:
    """``state.setTimeoutTimestamp``; should pyspark refuse the value, the full timeout from now."""
    try:
        state.setTimeoutTimestamp(timeout)
    except Exception:
        with contextlib.suppress(Exception):  # nothing more can be done for this key in this call
            state.setTimeoutTimestamp(max(watermark, 0) + timeout_ms)


def internal_error(exc: BaseException) -> str:
    message = " ".join(str(exc).split())[:MESSAGE_CHARS]
    return f"internal error: {type(exc).__name__}: {message}"


def current_watermark(state) -> int:
    try:
        return int(state.getCurrentWatermarkMs())
    except Exception:  # no watermark (e.g. a query without one): nothing is late
        return -1


def _at_or_below(ts: np.ndarray, watermark: int) -> np.ndarray:
    if watermark < 0:
        return np.zeros(len(ts), dtype=bool)
    # validate.parse never leaves ts null: the usual case, no pandas needed
    if ts.dtype.kind in "iu":
        return ts <= watermark
    values = pd.to_numeric(pd.Series(ts), errors="coerce")
    return (values <= watermark).fillna(False).to_numpy(dtype=bool)

"""The ``applyInPandasWithState`` step: one call per group per micro-batch.

It only moves data: pandas rows in, :func:`streaming.policy.recommend.process` on the group's state, pandas
rows out. Records :mod:`streaming.job.validate` rejected ride along under their group key and come out
unchanged as ``rejected`` rows, so one query (one checkpoint, one batch id) writes both tables.

Two more kinds of row leave as ``rejected``, never silently:

- ``late``: a valid event whose ts is at or below the current watermark (Spark's own rule for late rows).
  The query nulls the watermark column before this step (keeping its marker), so Spark hands such rows
  over instead of dropping them; they are rejected here and do not touch the state. Which rows are late
  depends, as in Spark, on the watermark when they arrive; everything else is decided by event time alone.
- ``internal error: <Type>: <message>``: anything that raises while a group's events are applied. Nothing
  leaves this function as an exception (one group must not stop the query); the group's valid events of
  the call are rejected with the error and its state stays exactly as it was (no ``state.update``).

A row rejected here carries the event re-encoded from its parsed fields as ``raw_value`` and its source
(topic from its type, partition, offset); its ``kafka_ts`` is null.
"""

from __future__ import annotations

import contextlib
import gc
import json
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np
import pandas as pd

from streaming.config import PolicySettings
from streaming.events import LAG
from streaming.job.validate import RAW_VALUE_CHARS
from streaming.policy.recommend import process
from streaming.recommendation import OUTPUT_COLUMNS, OUTPUT_SCHEMA
from streaming.state.group_state import GroupState

# pyspark's applyInPandasWithState serializer pads each output batch with an all-null frame before its
# pd.concat, and pandas 2 warns about that on every batch in the worker's stderr; the padding is dropped
# by design, so the warning says nothing about our data.
warnings.filterwarnings("ignore", message="The behavior of DataFrame concatenation with empty or all-NA",
                        category=FutureWarning)

# pyspark's daemon runs gc.collect() in the worker after every task; with pandas, numpy, scipy and the
# assignors loaded that walked ~1e6 long-lived objects each time (13% of the worker's time in a profile).
# Objects alive once this module is imported (in the worker: when the function is unpickled) are frozen
# out of collection; they live as long as the worker anyway.
gc.freeze()

STATE_SCHEMA = "state BINARY"
ROW_SCHEMA = "kind STRING, " + OUTPUT_SCHEMA + ", rejected STRING"
"""Output rows: ``kind`` is ``recommendation`` (the recommendation columns) or ``rejected`` (``group`` and
``rejected``, the record's JSON detail in :data:`streaming.job.validate.REJECTED_SCHEMA`)."""
ROW_COLUMNS = ["kind", *OUTPUT_COLUMNS, "rejected"]
EVENT_COLUMNS = ["type", "ts", "topic", "partition", "committed_offset", "end_offset", "detail"]
SOURCE_COLUMNS = ["source_partition", "source_offset"]
MESSAGE_CHARS = 200
"""An internal error's message is cut to this length in its reason."""


def make_update(policy: PolicySettings, timeout_ms: int, version_floors: dict[str, int] | None = None, *,
                lag_topic: str = "rebalancer.lag", metadata_topic: str = "rebalancer.metadata"):
    """``version_floors``: group -> highest version already in the table when the checkpoint began
    (:func:`streaming.job.tables.version_floors`); the group's versions, and so its ids, continue above it.
    ``lag_topic``/``metadata_topic`` name the source topic of rows rejected here."""
    floors = dict(version_floors or {})
    topics = {LAG: lag_topic}

    def update(key: tuple, chunks: Iterator[pd.DataFrame], state) -> Iterator[pd.DataFrame]:
        group = key[0]
        if state.hasTimedOut:
            state.remove()
            return
        rows = group_rows(group, chunks, state, policy, timeout_ms, floors.get(group, 0),
                          lambda kind: topics.get(kind, metadata_topic))
        if rows:
            yield pd.DataFrame(rows, columns=ROW_COLUMNS)

    return update


def group_rows(group: str, chunks: Iterable[pd.DataFrame], state, policy: PolicySettings, timeout_ms: int,
               version_floor: int, topic_of: Callable[[str], str]) -> list[dict[str, Any]]:
    """The output rows of one group's call; never raises. ``state`` is pyspark's GroupState (or alike)."""
    try:
        chunks = list(chunks)
        pdf = chunks[0] if len(chunks) == 1 else pd.concat(chunks, ignore_index=True)
        cols = {c: pdf[c].to_numpy() for c in EVENT_COLUMNS + SOURCE_COLUMNS}
    except Exception as exc:  # the rows themselves are unreadable: one row says so
        return [_rejected_row(group, {"reason": internal_error(exc)})]
    valid = pd.notna(cols["type"]).astype(bool)  # a row validate.parse rejected has no type
    rows = [{"kind": "rejected", "group": group or None, "rejected": d} for d in cols["detail"][~valid]]
    watermark = _watermark(state)
    late = valid & _at_or_below(cols["ts"], watermark)
    rows += [_rejected_row(group, _reencoded(cols, i, group, "late", topic_of))
             for i in np.flatnonzero(late).tolist()]
    keep = valid & ~late
    try:
        gs = GroupState.from_bytes(state.get[0]) if state.exists else GroupState(group=group)
        gs.version = max(gs.version, version_floor)  # a new checkpoint never reuses an id
        recs: list[dict[str, Any]] = []
        if keep.any():
            recs = [{"kind": "recommendation", **rec.to_row()}
                    for rec in process(gs, {c: cols[c][keep] for c in EVENT_COLUMNS}, policy)]
            state.update((gs.to_bytes(),))
        if state.exists:
            # an event-time timeout not set again in a call is cleared, so set it on every call
            state.setTimeoutTimestamp(max(gs.last_ts + timeout_ms, watermark + 1))
        return rows + recs
    except Exception as exc:
        reason = internal_error(exc)
        rows += [_rejected_row(group, _reencoded(cols, i, group, reason, topic_of))
                 for i in np.flatnonzero(keep).tolist()]
        _keep_timeout(state, timeout_ms, watermark)
        return rows


def internal_error(exc: BaseException) -> str:
    message = " ".join(str(exc).split())[:MESSAGE_CHARS]
    return f"internal error: {type(exc).__name__}: {message}"


def _watermark(state) -> int:
    try:
        return int(state.getCurrentWatermarkMs())
    except Exception:  # no watermark (e.g. a query without one): nothing is late
        return -1


def _at_or_below(ts: np.ndarray, watermark: int) -> np.ndarray:
    if watermark < 0:
        return np.zeros(len(ts), dtype=bool)
    values = pd.to_numeric(pd.Series(ts), errors="coerce")
    return (values <= watermark).fillna(False).to_numpy(dtype=bool)


def _keep_timeout(state, timeout_ms: int, watermark: int) -> None:
    """After a failure the state is as it was; its timeout must still be set again, or it is cleared."""
    try:
        if state.exists:
            last_ts = GroupState.from_bytes(state.get[0]).last_ts
            state.setTimeoutTimestamp(max(last_ts + timeout_ms, watermark + 1))
    except Exception:
        with contextlib.suppress(Exception):  # nothing more can be done for this group in this call
            state.setTimeoutTimestamp(max(watermark, 0) + timeout_ms)


def _rejected_row(group: str, detail: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "rejected", "group": group or None, "rejected": json.dumps(detail, default=str)}


def _scalar(value: Any) -> Any:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return None
    return value.item() if isinstance(value, np.generic) else value


def _reencoded(cols: dict[str, np.ndarray], i: int, group: str, reason: str,
               topic_of: Callable[[str], str]) -> dict[str, Any]:
    """The rejected-row detail of valid row ``i``: the event as parsed, and where it came from."""
    kind = _scalar(cols["type"][i])
    event: dict[str, Any] = {"type": kind, "ts": _scalar(cols["ts"][i]), "group": group}
    if kind == LAG:
        event |= {c: _scalar(cols[c][i]) for c in ("topic", "partition", "committed_offset", "end_offset")}
    else:
        if _scalar(cols["topic"][i]) is not None:
            event["topic"] = _scalar(cols["topic"][i])
        try:
            event |= json.loads(cols["detail"][i])
        except Exception:
            event["detail"] = str(cols["detail"][i])
    raw = json.dumps(event, separators=(",", ":"), default=str)
    return {"reason": reason, "raw_value": raw[:RAW_VALUE_CHARS], "source_topic": topic_of(str(kind)),
            "source_partition": _scalar(cols["source_partition"][i]),
            "source_offset": _scalar(cols["source_offset"][i]), "kafka_ts": None}

"""The ``applyInPandasWithState`` step: one call per group per micro-batch.

It only moves data: pandas rows in, :func:`streaming.policy.decide.process` on the group's state, pandas
rows out. Rejected records ride along under their group key and come out unchanged as ``rejected`` rows,
so one query (one checkpoint, one batch id) writes both tables.
"""

from __future__ import annotations

import gc
import warnings
from collections.abc import Iterator

import pandas as pd

from streaming.config import PolicySettings
from streaming.policy.decide import process
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
``rejected``, the record's JSON detail as :func:`streaming.job.validate.parse` made it)."""
ROW_COLUMNS = ["kind", *OUTPUT_COLUMNS, "rejected"]
EVENT_COLUMNS = ["type", "ts", "topic", "partition", "committed_offset", "end_offset", "detail"]


def make_update(policy: PolicySettings, timeout_ms: int, version_floors: dict[str, int] | None = None):
    """``version_floors``: group -> highest version already in the table when the checkpoint began
    (:func:`streaming.job.tables.version_floors`); the group's versions, and so its ids, continue above it."""
    floors = dict(version_floors or {})

    def update(key: tuple, chunks: Iterator[pd.DataFrame], state) -> Iterator[pd.DataFrame]:
        group = key[0]
        if state.hasTimedOut:
            state.remove()
            return
        chunks = list(chunks)
        pdf = chunks[0] if len(chunks) == 1 else pd.concat(chunks, ignore_index=True)
        columns = {c: pdf[c].to_numpy() for c in EVENT_COLUMNS}
        ok = pd.notna(columns["type"])  # a rejected row has no type
        rows: list[dict] = []
        if not ok.all():
            rows += [{"kind": "rejected", "group": group or None, "rejected": detail}
                     for detail in columns["detail"][~ok]]
            columns = {c: v[ok] for c, v in columns.items()}
        if ok.any() or state.exists:
            gs = GroupState.from_bytes(state.get[0]) if state.exists else GroupState(group=group)
            gs.version = max(gs.version, floors.get(group, 0))  # a new checkpoint never reuses an id
            if ok.any():
                for rec in process(gs, columns, policy):
                    rows.append({"kind": "recommendation", **rec.to_row()})
                state.update((gs.to_bytes(),))
            # an event-time timeout not set again in a call is cleared, so set it on every call
            watermark = state.getCurrentWatermarkMs()
            state.setTimeoutTimestamp(max(gs.last_ts + timeout_ms, watermark + 1))
        if rows:
            yield pd.DataFrame(rows, columns=ROW_COLUMNS)

    return update

"""The ``applyInPandasWithState`` step: one call per group per micro-batch.

It only moves data: pandas rows in, :func:`streaming.policy.decide.process` on the group's state, pandas
rows out. Rejected records ride along under their group key and come out unchanged as ``rejected`` rows,
so one query (one checkpoint, one batch id) writes both tables.
"""

from __future__ import annotations

from collections.abc import Iterator

import pandas as pd

from streaming.config import PolicySettings
from streaming.policy.decide import process
from streaming.recommendation import OUTPUT_COLUMNS, OUTPUT_SCHEMA
from streaming.state.group_state import GroupState

STATE_SCHEMA = "state BINARY"
REJECT_COLUMNS = ["reason", "raw_value", "source_topic", "source_partition", "source_offset", "kafka_ts"]
ROW_SCHEMA = (
    "kind STRING, " + OUTPUT_SCHEMA + ", reason STRING, raw_value STRING, source_topic STRING, "
    "source_partition INT, source_offset LONG, kafka_ts LONG"
)
ROW_COLUMNS = ["kind", *OUTPUT_COLUMNS, *REJECT_COLUMNS]
EVENT_COLUMNS = ["type", "ts", "topic", "partition", "committed_offset", "end_offset", "generation", "protocol",
                 "members", "partitions", "source_topic", "source_partition", "source_offset"]


def make_update(policy: PolicySettings, timeout_ms: int):
    def update(key: tuple, chunks: Iterator[pd.DataFrame], state) -> Iterator[pd.DataFrame]:
        group = key[0]
        if state.hasTimedOut:
            state.remove()
            return
        chunks = list(chunks)
        pdf = chunks[0] if len(chunks) == 1 else pd.concat(chunks, ignore_index=True)
        ok = pdf["reject_reason"].isna().to_numpy()
        all_ok = bool(ok.all())
        rows: list[dict] = []
        if not all_ok:
            bad = pdf[~ok]
            for reason, raw, topic, part, offset, kts in zip(
                    bad["reject_reason"], bad["raw_value"], bad["source_topic"], bad["source_partition"],
                    bad["source_offset"], bad["kafka_timestamp"], strict=True):
                rows.append({"kind": "rejected", "group": group or None, "reason": reason, "raw_value": raw,
                             "source_topic": topic, "source_partition": int(part), "source_offset": int(offset),
                             "kafka_ts": int(pd.Timestamp(kts).value // 1_000_000)})
        valid = {c: pdf[c].to_numpy() if all_ok else pdf[c].to_numpy()[ok] for c in EVENT_COLUMNS}
        n_valid = int(ok.sum())
        if n_valid or state.exists:
            gs = GroupState.from_bytes(state.get[0]) if state.exists else GroupState(group=group)
            if n_valid:
                for rec in process(gs, valid, policy):
                    rows.append({"kind": "recommendation", **rec.to_row()})
                state.update((gs.to_bytes(),))
            # an event-time timeout not set again in a call is cleared, so set it on every call
            watermark = state.getCurrentWatermarkMs()
            state.setTimeoutTimestamp(max(gs.last_ts + timeout_ms, watermark + 1))
        if rows:
            yield pd.DataFrame(rows, columns=ROW_COLUMNS)

    return update

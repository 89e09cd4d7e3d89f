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
        pdf = pd.concat(list(chunks), ignore_index=True)
        rejected = pdf[pdf["reject_reason"].notna()]
        valid = pdf[pdf["reject_reason"].isna()]
        rows: list[dict] = []
        for r in rejected.itertuples(index=False):
            rows.append({"kind": "rejected", "group": group or None, "reason": r.reject_reason,
                         "raw_value": r.raw_value, "source_topic": r.source_topic,
                         "source_partition": int(r.source_partition), "source_offset": int(r.source_offset),
                         "kafka_ts": int(pd.Timestamp(r.kafka_timestamp).value // 1_000_000)})
        if len(valid) or state.exists:
            gs = GroupState.from_bytes(state.get[0]) if state.exists else GroupState(group=group)
            if len(valid):
                events = valid[EVENT_COLUMNS].astype(object).where(valid[EVENT_COLUMNS].notna(), None)
                for rec in process(gs, events.to_dict("records"), policy):
                    rows.append({"kind": "recommendation", **rec.to_row()})
                state.update((gs.to_bytes(),))
            # an event-time timeout not set again in a call is cleared, so set it on every call
            watermark = state.getCurrentWatermarkMs()
            state.setTimeoutTimestamp(max(gs.last_ts + timeout_ms, watermark + 1))
        if rows:
            yield pd.DataFrame(rows, columns=ROW_COLUMNS)

    return update

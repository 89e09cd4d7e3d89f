"""A row the stateful step rejects (:mod:`streaming.job.stateful`, :mod:`streaming.job.buckets`):
the row itself, and for a valid event rejected there (``late``, an internal error) its detail, the
event re-encoded from its parsed fields as ``raw_value`` with its source (topic from its type,
partition, offset); its ``kafka_ts`` is null.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np

from streaming.contracts.events import DENSE_ARRAYS, LAG, LAG_DENSE, METADATA_EVENTS
from streaming.job.validate import RAW_VALUE_CHARS
from streaming.state.readings import READINGS


def rejected_row(group: str, detail: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "rejected", "group": group or None, "rejected": json.dumps(detail, default=str)}


def _scalar(value: Any) -> Any:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return None
    return value.item() if isinstance(value, np.generic) else value


def reencoded(cols: dict[str, np.ndarray], i: int, group: str, reason: str,
               topic_of: Callable[[str], str]) -> dict[str, Any]:
    """The rejected-row detail of valid row ``i``: the event as parsed, and where it came from."""
    kind = _scalar(cols["type"][i])
    event: dict[str, Any] = {"type": kind, "ts": _scalar(cols["ts"][i]), "group": group}
    if kind == LAG:
        fields = ("topic", "partition", "committed_offset", "end_offset")
        event |= {c: _scalar(cols[c][i]) for c in fields}
    elif kind == LAG_DENSE:
        packed = np.asarray(cols[READINGS][i], dtype=np.int64).reshape(3, -1)
        event |= ({"topic": _scalar(cols["topic"][i])}
                  | dict(zip(DENSE_ARRAYS, packed.tolist(), strict=True)))
    else:
        if _scalar(cols["topic"][i]) is not None:
            event["topic"] = _scalar(cols["topic"][i])
        try:
            event |= json.loads(cols["detail"][i])
        except Exception:
            event["detail"] = str(cols["detail"][i])
    count = _scalar(cols[METADATA_EVENTS][i]) if METADATA_EVENTS in cols else None
    if kind in (LAG, LAG_DENSE) and count:
        event[METADATA_EVENTS] = count
    raw = json.dumps(event, separators=(",", ":"), default=str)
    return {"reason": reason, "raw_value": raw[:RAW_VALUE_CHARS],
            "source_topic": topic_of(str(kind)),
            "source_partition": _scalar(cols["source_partition"][i]),
            "source_offset": _scalar(cols["source_offset"][i]), "kafka_ts": None}

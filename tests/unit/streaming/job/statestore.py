"""A dict-backed stand-in for Spark's ``applyInPandasWithState`` driving an update function batch by
batch.

It keeps Spark's rules that the stateful step relies on: each key with rows in a batch gets one call
(keys in sorted order; Spark's order is arbitrary and nothing may depend on it); then each key
without rows whose event-time timeout is below the batch's watermark gets a timeout call with no
rows; a timeout not set again in a call is cleared; ``setTimeoutTimestamp`` refuses a value below
the watermark or not positive, as pyspark's does. The watermark of a batch is the highest valid
event time of the batches before it minus the delay (0 at first), as Spark computes it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pandas as pd

from streaming.job import stateful


class State:
    """The part of pyspark.sql.streaming.state.GroupState the update functions use."""

    def __init__(self, value: bytes | None, watermark: int, timed_out: bool = False) -> None:
        self.value = value
        self.watermark = watermark
        self.hasTimedOut = timed_out
        self.timeout: int | None = None
        self.removed = False
        self.updates = 0

    @property
    def exists(self) -> bool:
        return self.value is not None

    @property
    def get(self) -> tuple:
        if self.value is None:
            raise ValueError("state does not exist")
        return (self.value,)

    def update(self, value: tuple) -> None:
        self.value, self.removed = value[0], False
        self.updates += 1

    def remove(self) -> None:
        self.value, self.removed = None, True

    def getCurrentWatermarkMs(self) -> int:
        return self.watermark

    def setTimeoutTimestamp(self, ts: int) -> None:
        if ts <= 0 or ts < self.watermark:
            raise ValueError(f"timeout {ts} below the watermark {self.watermark}")
        self.timeout = ts


COLUMNS = ["group", *stateful.EVENT_COLUMNS, *stateful.SOURCE_COLUMNS]


class Store:
    """Spark's state for one query: key -> (value, timeout)."""

    def __init__(self, update: Callable, key_of: Callable[[str], Any], delay_ms: int = 0) -> None:
        self.update = update
        self.key_of = key_of
        self.delay_ms = delay_ms
        self.values: dict[Any, tuple[bytes, int | None]] = {}
        self.max_ts = 0
        self.calls = 0

    def batch(self, rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        """One micro-batch: the output rows of every call."""
        rows = list(rows)
        watermark = max(0, self.max_ts - self.delay_ms) if self.max_ts else 0
        by_key: dict[Any, list[dict[str, Any]]] = {}
        for r in rows:
            by_key.setdefault(self.key_of(r["group"]), []).append(r)
        out: list[dict[str, Any]] = []
        for key in sorted(by_key):
            frame = pd.DataFrame(by_key[key], columns=COLUMNS)
            out += self._call(key, [frame], watermark, timed_out=False)
        for key in sorted(k for k in self.values if k not in by_key):
            timeout = self.values[key][1]
            if timeout is not None and timeout < watermark:
                out += self._call(key, [pd.DataFrame(columns=COLUMNS)], watermark, timed_out=True)
        self.max_ts = max([self.max_ts, *(int(r["ts"]) for r in rows if r["type"] is not None)])
        return out

    def _call(self, key: Any, frames: list[pd.DataFrame], watermark: int,
              timed_out: bool) -> list[dict[str, Any]]:
        held = self.values.get(key)
        state = State(held[0] if held else None, watermark, timed_out)
        self.calls += 1
        out = [r for df in self.update((key,), iter(frames), state) for r in df.to_dict("records")]
        if state.value is None:
            self.values.pop(key, None)
        else:
            self.values[key] = (state.value, state.timeout)
        return out

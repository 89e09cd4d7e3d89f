"""Micro-benchmark of the job's hot path without Spark: ``process()`` on one group's batch.

One group of 100 partitions of one topic and 4 members, a batch of a few polls as the numpy columns
the stateful step passes, the state serialized between batches as the job does. Prints microseconds
per call (median of several rounds) for process() alone and for the state's round trip through
bytes.

    .venv/bin/python -m benchmarks.process
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from streaming.config import PolicySettings
from streaming.contracts import events as ev
from streaming.policy.recommend import process
from streaming.state.group_state import GroupState

T0 = 1_763_700_000_000
PARTITIONS = 100
POLLS = 3
MEMBERS = 4
# never skewed: the per-batch cost alone
POLICY = PolicySettings(assignor="balanced", skew_threshold=100.0)


def columns(batch: int) -> dict[str, np.ndarray]:
    """A batch of ``POLLS`` polls of every partition, as the stateful step's columns."""
    n = POLLS * PARTITIONS
    ts = np.repeat(T0 + (batch * POLLS + np.arange(POLLS)) * 10_000, PARTITIONS).astype(np.int64)
    part = np.tile(np.arange(PARTITIONS), POLLS).astype(np.int64)
    committed = ts // 100 + part
    return {"type": np.array([ev.LAG] * n, dtype=object), "ts": ts,
            "topic": np.array(["t0"] * n, dtype=object), "partition": part,
            "committed_offset": committed, "end_offset": committed + 500 + part,
            "detail": np.array([None] * n, dtype=object)}


def main() -> None:
    members = [ev.member_entry(f"m{i}", ["t0"], [("t0", p) for p in range(i, PARTITIONS, MEMBERS)])
               for i in range(MEMBERS)]
    state = GroupState("g")
    process(state, [ev.members_event(T0 - 1, "g", 1, "range", members)], POLICY)
    blob = state.to_bytes()
    batches = [columns(b) for b in range(200)]
    proc, trip = [], []
    for cols in batches:
        t = time.perf_counter()
        state = GroupState.from_bytes(blob)
        t1 = time.perf_counter()
        process(state, cols, POLICY)
        t2 = time.perf_counter()
        blob = state.to_bytes()
        t3 = time.perf_counter()
        proc.append(t2 - t1)
        trip.append((t1 - t) + (t3 - t2))
    print(f"process(): {PARTITIONS} partitions x {POLLS} polls: median "
          f"{statistics.median(proc) * 1e6:.0f} us, state from/to bytes: median "
          f"{statistics.median(trip) * 1e6:.0f} us, state {len(blob)} bytes")


if __name__ == "__main__":
    main()

"""benchmarks.job.floors' update functions: what each floor's Python does to the rows it is given,
and that every floor of both lag forms is built."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from benchmarks.job import floors
from streaming.state.readings import READINGS


class FakeState:
    def __init__(self, value: int | None = None) -> None:
        self.exists = value is not None
        self.get = (value,)

    def update(self, value: tuple[int]) -> None:
        self.exists, self.get = True, value


def _run(fn, chunks: list[pd.DataFrame], state: FakeState) -> int:
    (out,) = list(fn("k", iter(chunks), state))
    return int(out["n"].iloc[0])


def test_count_rows_counts_every_chunk_and_adds_to_the_state():
    state = FakeState(5)
    assert _run(floors._count_rows,
                [pd.DataFrame({"text": ["a", "b"]}), pd.DataFrame({"text": ["c"]})], state) == 3
    assert state.get == (8,)


def test_touch_arrays_and_values_count_the_rows_they_read():
    arrays = pd.DataFrame({READINGS: [np.arange(6), np.arange(3)]})
    assert _run(floors._touch_arrays, [arrays], FakeState()) == 2
    values = pd.DataFrame({"committed_offset": [5, 9], "end_offset": [7, 8]})
    # the one whose end is at or above its committed
    assert _run(floors._touch_values, [values], FakeState()) == 1


def test_parse_texts_reads_both_lag_forms():
    dense = json.dumps({"partitions": [0, 1], "committed_offsets": [1, 2], "end_offsets": [3, 4]})
    lag = json.dumps({"committed_offset": 1, "end_offset": 3})
    state = FakeState()
    assert _run(floors._parse_texts, [pd.DataFrame({"text": [dense, lag]})], state) == 2
    assert state.get == (2,)


def test_every_floor_is_built_for_both_forms():
    for dense in (True, False):
        assert list(floors._floors(dense)) == ["read", "parse", "text to the step",
                                               "values to the step", "text parsed in Python"]


def test_the_job_beside_its_frame_gives_the_ratio_and_each_process_s_cost():
    from benchmarks.job.configuration import Scale

    frame = {"records_per_s": 17_000.0, "us_per_record": 107.6,
             "own_cpu_us_by_kind": {"broker": 10.0, "Spark JVM": 70.0, "Python workers": 27.6}}
    job = {"per_trigger": 50_000, "steady_events_per_s": 3_900.0, "own_cpu_us_per_event": 480.0,
           "own_cpu_us_by_kind": {"broker": 13.5, "Spark JVM": 306.0, "Python workers": 124.5,
                                  "driver": 36.0}}
    (line,) = floors.beside_the_frame(Scale(1000, 100), frame, job, dense=True)
    assert line == (
        "1000x100, dense at maxOffsetsPerTrigger 50,000: the job 390,000 readings/s against the "
        "frame's 1,700,000 (x0.23); CPU us a record, the job against the frame: 480.0 against "
        "107.6 (broker 13.5 against 10.0; Spark JVM 306.0 against 70.0; Python workers 124.5 "
        "against 27.6; driver 36.0 against 0.0)")
    (per_partition,) = floors.beside_the_frame(Scale(1000, 100), frame, job, dense=False)
    assert "the job 3,900 readings/s against the frame's 17,000 (x0.23)" in per_partition

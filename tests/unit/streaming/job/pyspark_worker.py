"""The stateful step's update function run as pyspark's Python worker runs it, without a JVM.

:func:`run` gives the function a real ``pyspark.sql.streaming.state.GroupState`` and hands what it
returns to pyspark's own ``ApplyInPandasWithStateSerializer.dump_stream`` (the serializer the worker
uses for ``applyInPandasWithState``, with the worker's default configuration), so a value the
worker's Arrow conversion refuses fails here exactly as it does in a query. It reads the Arrow
stream back and returns the data rows and the state as the JVM would receive them."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd
import pyarrow as pa
from pyspark.sql.pandas.serializers import ApplyInPandasWithStateSerializer
from pyspark.sql.streaming.state import GroupState, GroupStateTimeout
from pyspark.sql.types import BinaryType, StructField, StructType

from streaming.job import convert

STATE_TYPE = StructType([StructField("state", BinaryType())])


@dataclass
class Result:
    rows: list[dict[str, Any]]
    """The data rows the JVM reads (padding rows dropped)."""
    blob: bytes | None
    """The state's value after the call (None: none or removed)."""
    updated: bool
    timeout: int


def serializer(safecheck: bool = False) -> ApplyInPandasWithStateSerializer:
    """The worker's serializer with the worker's defaults (pyspark.worker.RunnerConf)."""
    return ApplyInPandasWithStateSerializer(
        timezone="UTC", safecheck=safecheck, assign_cols_by_name=True, prefer_int_ext_dtype=False,
        state_object_schema=STATE_TYPE, arrow_max_records_per_batch=10_000,
        prefers_large_var_types=False, int_to_decimal_coercion_enabled=False)


def group_state(blob: bytes | None, watermark: int, timed_out: bool = False) -> GroupState:
    return GroupState(
        optionalValue=(blob,) if blob is not None else None, batchProcessingTimeMs=0,
        eventTimeWatermarkMs=watermark, timeoutConf=GroupStateTimeout.EventTimeTimeout,
        hasTimedOut=timed_out, watermarkPresent=True, defined=blob is not None, updated=False,
        removed=False, timeoutTimestamp=-1, keyAsUnsafe=b"key", valueSchema=STATE_TYPE)


def run(update: Callable, key: tuple, frames: list[pd.DataFrame], blob: bytes | None = None,
        watermark: int = 0, safecheck: bool = False) -> Result:
    """One call of ``update`` serialized by pyspark; raises what pyspark raises."""
    state = group_state(blob, watermark)
    out = io.BytesIO()
    serializer(safecheck).dump_stream(iter([[((update(key, iter(frames), state), state),
                                              convert.row_type())]]), out)
    out.seek(4)  # the worker's start-of-stream marker
    table = pa.ipc.open_stream(out).read_all()
    counts, data, states = (table.column(i).combine_chunks() for i in range(3))
    n = counts.field("dataCount")[0].as_py()
    rows = data.to_pylist()[:n]
    st = states.to_pylist()[0]
    props = json.loads(st["properties"])
    value = serializer().pickleSer.loads(st["object"])[0] if st["object"] else None
    return Result(rows, value, props["updated"], props["timeoutTimestamp"])

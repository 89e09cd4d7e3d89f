"""``--python-only``: the Python worker's share of the stateful step alone, without a JVM."""

from __future__ import annotations

import json
import time

from streaming import config
from streaming.contracts import events as ev

from .configuration import Scale
from .load import members_events


def _ddl(schema: str):
    """A flat DDL schema of the stateful step as a StructType, without a JVM (pyspark parses DDL in
    the JVM)."""
    from pyspark.sql import types as T

    kinds = {"STRING": T.StringType(), "LONG": T.LongType(), "BIGINT": T.LongType(),
             "INT": T.IntegerType(), "DOUBLE": T.DoubleType(), "BINARY": T.BinaryType()}
    return T.StructType([T.StructField(c.split()[0].strip("`"), kinds[c.split()[1]])
                         for c in schema.split(",")])


class WorkerPath:
    """pyspark's Python worker for applyInPandasWithState, in this process: an Arrow IPC stream as
    the JVM sends it (rows sorted by key, 10,000 per batch, a state-info struct per key chunk) ->
    pyspark's serializer -> its wrapper -> the update function -> the serializer's output stream.
    Only the socket and the JVM are missing; ``values`` plays the state store (key -> state
    bytes)."""

    def __init__(self, update) -> None:
        from pyspark.serializers import CPickleSerializer
        from pyspark.sql.pandas.serializers import ApplyInPandasWithStateSerializer
        from pyspark.worker import wrap_grouped_map_pandas_udf_with_state

        from streaming.job import convert, stateful

        self.ser = ApplyInPandasWithStateSerializer(
            timezone="UTC", safecheck=False, assign_cols_by_name=True, prefer_int_ext_dtype=False,
            state_object_schema=_ddl(stateful.STATE_SCHEMA), arrow_max_records_per_batch=10_000,
            prefers_large_var_types=False, int_to_decimal_coercion_enabled=False)
        self.wrapped = wrap_grouped_map_pandas_udf_with_state(update, _ddl(convert.ROW_SCHEMA),
                                                              None)
        self.pickle = CPickleSerializer()
        self.values: dict = {}

    def _ipc(self, df) -> tuple[bytes, list]:
        import io

        import numpy as np
        import pyarrow as pa

        df = df.iloc[np.argsort(df["key"].to_numpy(), kind="stable")].reset_index(drop=True)
        keys = df["key"].to_numpy()
        info = pa.struct([("properties", pa.string()), ("keyRowAsUnsafe", pa.binary()),
                          ("object", pa.binary()), ("startOffset", pa.int32()),
                          ("numRows", pa.int32()), ("isLastChunk", pa.bool_())])
        props = json.dumps({"batchProcessingTimeMs": 1, "eventTimeWatermarkMs": 0,
                            "timeoutConf": "EventTimeTimeout", "hasTimedOut": False,
                            "watermarkPresent": True, "updated": False, "removed": False,
                            "timeoutTimestamp": -1})
        buf, writer, order = io.BytesIO(), None, []
        for s in range(0, len(df), 10_000):
            part, k = df.iloc[s:s + 10_000].reset_index(drop=True), keys[s:s + 10_000]
            starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
            infos: list = []
            for a, e in zip(starts.tolist(), [*starts[1:].tolist(), len(k)], strict=True):
                value = self.values.get(k[a])
                order += [k[a]] if not order or order[-1] != k[a] else []
                infos.append({"properties": props[:-1]
                              + f', "defined": {json.dumps(value is not None)}}}',
                              "keyRowAsUnsafe": b"k" * 16, "startOffset": a, "numRows": e - a,
                              "object": None if value is None else self.pickle.dumps((value,)),
                              "isLastChunk": s + e == len(df) or keys[s + e] != k[a]})
            batch = pa.RecordBatch.from_pandas(part, preserve_index=False)
            states = pa.array(infos + [None] * (len(part) - len(infos)), type=info)
            batch = pa.RecordBatch.from_arrays([*batch.columns, states],
                                               names=[*batch.schema.names, "state"])
            writer = writer or pa.ipc.new_stream(buf, batch.schema)
            writer.write_batch(batch)
        if writer:
            writer.close()
        return buf.getvalue(), order

    def batch(self, df) -> float:
        """Seconds of the worker's Python for one batch (``df``: a ``key`` column first, then the
        rows)."""
        import io
        import itertools

        data, order = self._ipc(df)
        width = len(df.columns)
        states: list = []

        def calls():
            for chunks, state in self.ser.load_stream(io.BytesIO(data)):
                series = (c[0] for c in chunks)
                first = next(series)
                values = ([x[i] for i in range(1, width)] for x in itertools.chain([first], series))
                states.append(state)
                yield self.wrapped([first[0]], values, state)

        start = time.perf_counter()
        self.ser.dump_stream(calls(), io.BytesIO())
        spent = time.perf_counter() - start
        for key, state in zip(order, states, strict=True):
            self.values[key] = state.get[0] if state.exists else None
        return spent


def python_share(scale: Scale, buckets: int, batches: int = 3, noop: bool = False) -> dict:
    """The worker's Python time per batch of one poll of every group, keyed as ``buckets`` says;
    ``noop``: with an update function that only keeps the state (pyspark's own share)."""
    import numpy as np
    import pandas as pd

    from streaming.job import buckets as bucketing
    from streaming.job import stateful

    g_, p_ = scale.groups, scale.partitions
    policy = config.PolicySettings()
    update = (bucketing.make_update(policy, 3_600_000, buckets) if buckets
              else stateful.make_update(policy, 3_600_000))
    if noop:
        def update(key, chunks, state):
            state.update(state.get if state.exists else (b"",))
            return iter(())
    worker = WorkerPath(update)
    names = np.array([f"group-{g:04d}" for g in range(g_)], dtype=object)
    keys = np.array([bucketing.bucket_of(n, buckets) for n in names]) if buckets else names
    t0 = int(time.time() * 1000)

    def frame(g: np.ndarray, p: np.ndarray, **cols) -> pd.DataFrame:
        n = len(g)
        return pd.DataFrame({
            "key": keys[g], "group": names[g], "type": np.full(n, ev.LAG, dtype=object),
            "ts": np.full(n, t0),
            "topic": np.array([f"topic-{i:02d}" for i in range(50)], dtype=object)[g % 50],
            "partition": p.astype(np.int32), "committed_offset": np.zeros(n, np.int64),
            "end_offset": np.zeros(n, np.int64),
            "detail": np.full(n, None, dtype=object), "source_partition": np.zeros(n, np.int32),
            "source_offset": np.arange(n),
            "event_time": pd.Series([None] * n, dtype="datetime64[us]")} | cols)

    members = [json.dumps({k: e[k] for k in ("generation", "protocol", "members")})
               for e in members_events(t0, g_, p_)]
    g = np.arange(g_)
    worker.batch(frame(g, np.zeros(g_), type=np.full(g_, ev.MEMBERS, dtype=object),
                       detail=np.array(members)))
    times = []
    for b in range(1, batches + 1):
        g, p = np.repeat(np.arange(g_), p_), np.tile(np.arange(p_), g_)
        committed = (t0 // 10 + b * 1000 + p).astype(np.int64)
        times.append(worker.batch(frame(g, p, ts=np.full(len(g), t0 + b * 10_000),
                                        committed_offset=committed,
                                        end_offset=committed + 100 + (p * 7 + g) % 50)))
    best = min(times[1:] or times)  # the first lag batch fills the histories
    return {"scale": scale.tag, "buckets": buckets, "batch_s": best,
            "ms_per_group": 1000 * best / g_, "events_per_s": g_ * p_ / best}

"""``--floors``: what the job's frame costs without the job, on the same written records.

Each floor drains the lag topic the throughput runs read (same records, same
``maxOffsetsPerTrigger``, same local Spark) with a pipeline that keeps one more of the job's stages
than the one before, and does nothing else:

1. ``read``: Spark's Kafka source alone (each value's length, counted);
2. ``parse``: plus ``from_json`` of the whole ``lag_dense`` text into its typed arrays (every field
   used, so the parser cannot skip any);
3. ``text to the step``: the Kafka source, then the text shuffled by the key's bucket into
   ``applyInPandasWithState`` (the job's keying), where Python counts the rows and keeps a count as
   state;
4. ``values to the step``: ``from_json`` before the shuffle, the readings as the job ships them (a
   ``lag_dense`` record's as one int64 array, which Python makes a numpy array of; a ``lag`` event's
   as three columns);
5. ``text parsed in Python``: 3, with Python parsing each text (``json.loads``; a ``lag_dense``
   record's readings into one numpy array): where validating the collector's records in the step,
   not in Spark's expressions, would start from.

Nothing is validated, decided or written: each floor is what any job with that shape pays per record
before its own work, and the throughput run beside it (the job itself) tells how much of its cost is
its own. Figures: readings per second over the full batches after the first, and the CPU of this
process's tree per record (broker, JVM, Python workers), as :func:`benchmarks.job.runs.throughput`
counts them.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from streaming import config
from streaming.job import query
from streaming.job.canonical import DENSE_SCHEMA
from streaming.kafka_clients.properties import spark_options
from streaming.state.readings import READINGS

from .configuration import Scale
from .report import by_kind_text
from .runs import steady_batches
from .sampling import CpuSampler, started_s

LAG_SCHEMA = ("struct<type: string, ts: bigint, group: string, topic: string, partition: int, "
              "committed_offset: bigint, end_offset: bigint>")
"""A ``lag`` event's fields (the per-partition form's floors)."""

Build = Callable[[Any, int], Any]


def _count_rows(key: Any, chunks: Iterator[Any], state: Any) -> Iterator[Any]:
    import pandas as pd

    n = sum(len(c) for c in chunks)
    state.update(((state.get[0] if state.exists else 0) + n,))
    yield pd.DataFrame({"n": [n]})


def _touch_arrays(key: Any, chunks: Iterator[Any], state: Any) -> Iterator[Any]:
    import numpy as np
    import pandas as pd

    n = 0
    for c in chunks:
        n += sum(len(np.asarray(r, dtype=np.int64)) > 0 for r in c[READINGS])
    state.update(((state.get[0] if state.exists else 0) + n,))
    yield pd.DataFrame({"n": [n]})


def _parse_texts(key: Any, chunks: Iterator[Any], state: Any) -> Iterator[Any]:
    import numpy as np
    import pandas as pd

    n = 0
    for c in chunks:
        for text in c["text"]:
            e = json.loads(text)
            if "partitions" in e:
                n += len(np.array(e["partitions"] + e["committed_offsets"] + e["end_offsets"],
                                  dtype=np.int64)) > 0
            else:
                n += e["end_offset"] >= e["committed_offset"]
    state.update(((state.get[0] if state.exists else 0) + n,))
    yield pd.DataFrame({"n": [n]})


def _touch_values(key: Any, chunks: Iterator[Any], state: Any) -> Iterator[Any]:
    import pandas as pd

    n = 0
    for c in chunks:
        n += int((c["end_offset"].to_numpy() >= c["committed_offset"].to_numpy()).sum())
    state.update(((state.get[0] if state.exists else 0) + n,))
    yield pd.DataFrame({"n": [n]})


def _floors(dense: bool) -> dict[str, Build]:
    """Each floor: the source -> its pipeline (``buckets``: the job's state buckets; ``dense``: the
    records are ``lag_dense`` events, else ``lag`` events, one per partition)."""
    from pyspark.sql import functions as F

    def bucket(n: int) -> Any:
        return F.pmod(F.crc32(F.col("key")), F.lit(max(n, 1))).cast("int").alias("bucket")

    def parsed() -> Any:
        return F.from_json(F.col("value").cast("string"), DENSE_SCHEMA if dense else LAG_SCHEMA)

    def stateful(df: Any, fn: Callable[..., Iterator[Any]]) -> Any:
        return df.groupBy("bucket").applyInPandasWithState(fn, "n long", "n long", "update",
                                                           "NoTimeout")

    def shipped(src: Any, n: int) -> Any:
        r = src.select(bucket(n), parsed().alias("r"))
        if dense:
            readings = F.concat("r.partitions", "r.committed_offsets", "r.end_offsets")
            return stateful(r.select("bucket", readings.alias(READINGS)), _touch_arrays)
        return stateful(r.select("bucket", "r.partition", "r.committed_offset", "r.end_offset"),
                        _touch_values)

    numbers = (("r.partitions", "r.committed_offsets", "r.end_offsets") if dense
               else ("r.partition",))
    return {
        "read": lambda src, n: src.select(F.length("value").alias("n")),
        "parse": lambda src, n: src.select(parsed().alias("r")).select(
            F.size(F.concat(*numbers)).alias("n") if dense else F.col("r.partition"),
            F.length(F.concat("r.type", "r.group", "r.topic")).alias("c"), F.col("r.ts"),
            *(() if dense else (F.col("r.committed_offset") + F.col("r.end_offset"),))),
        "text to the step": lambda src, n: stateful(
            src.select(bucket(n), F.col("value").cast("string").alias("text")), _count_rows),
        "values to the step": shipped,
        "text parsed in Python": lambda src, n: stateful(
            src.select(bucket(n), F.col("value").cast("string").alias("text")), _parse_texts),
    }


def floor_runs(spark: Any, cfg: config.Config, scale: Scale, per_trigger: int, cpu: CpuSampler,
               work: Path, dense: bool) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """Every floor over ``cfg``'s lag topic at ``per_trigger`` records a batch: one report line
    each, and each floor's figures by name."""
    lines, found = [], {}
    for name, build in _floors(dense).items():
        figures = found[name] = _drain(spark, cfg, build, per_trigger, cpu,
                                       work / f"floor-{name.replace(' ', '-')}")
        lines.append(f"{scale.tag}, floor '{name}' at maxOffsetsPerTrigger {per_trigger:,}: "
                     f"{figures['records_per_s'] * (scale.partitions if dense else 1):,.0f} "
                     f"partition readings/s over {figures['batches']} full batches (median batch "
                     f"{figures['median_s']:.2f}s; {figures['cores']:.2f} cores busy; "
                     f"{figures['us_per_record']:.1f} us of the job's own processes' CPU per "
                     f"record: {by_kind_text(figures)})")
        print(lines[-1], flush=True)
    return lines, found


FRAME = "values to the step"
"""The floor the job is measured against: everything the job's shape pays before its own work."""


def beside_the_frame(scale: Scale, frame: dict[str, Any], job: dict[str, Any], dense: bool
                     ) -> list[str]:
    """The job's throughput run and the frame's (:data:`FRAME`) at the same batch size, side by
    side: readings/s and their ratio, and the CPU a record costs by process, the job's above the
    frame's."""
    per = scale.partitions if dense else 1
    ours, bare = job["steady_events_per_s"] * per, frame["records_per_s"] * per
    kinds = {**frame.get("own_cpu_us_by_kind", {}), **job.get("own_cpu_us_by_kind", {})}
    split = "; ".join(
        f"{k} {job.get('own_cpu_us_by_kind', {}).get(k, 0.0):.1f} against "
        f"{frame.get('own_cpu_us_by_kind', {}).get(k, 0.0):.1f}" for k in kinds)
    return [f"{scale.tag}, {'dense' if dense else 'per-partition'} at maxOffsetsPerTrigger "
            f"{job['per_trigger']:,}: the job {ours:,.0f} readings/s against the frame's "
            f"{bare:,.0f} (x{ours / bare if bare else 0:.2f}); CPU us a record, the job against "
            f"the frame: {job['own_cpu_us_per_event']:.1f} against {frame['us_per_record']:.1f} "
            f"({split})"]


def _drain(spark: Any, cfg: config.Config, build: Build, per_trigger: int, cpu: CpuSampler,
           checkpoint: Path) -> dict[str, float]:
    """Drain the lag topic through ``build``'s pipeline once (``availableNow``); its steady
    figures."""
    options = query.SOURCE_CONSUMER_DEFAULTS | spark_options(cfg.kafka)
    src = (spark.readStream.format("kafka").options(**options)
           .option("subscribe", cfg.kafka.lag_topic).option("startingOffsets", "earliest")
           .option("maxOffsetsPerTrigger", per_trigger).load())
    df = build(src, cfg.job.state_buckets)
    run = (df.writeStream.outputMode("update").option("checkpointLocation", str(checkpoint))
             .foreachBatch(lambda batch, _id: batch.write.format("noop").mode("overwrite").save())
             .trigger(availableNow=True).start())
    run.awaitTermination()
    data = [{"input_rows": p["numInputRows"], "started": p["timestamp"],
             "batch_ms": p["batchDuration"]}
            for p in run.recentProgress if p["numInputRows"] > 0]
    steady = steady_batches(data, per_trigger)
    spans = [(started_s(b), b["batch_ms"] / 1000) for b in steady]
    rows = sum(b["input_rows"] for b in steady)
    seconds = sum(s for _, s in spans)
    own = sum(cpu.busy_between(t0, t0 + s, own=True) for t0, s in spans)
    kinds: dict[str, float] = {}
    for t0, s in spans:
        for k, v in cpu.kinds_between(t0, t0 + s).items():
            kinds[k] = kinds.get(k, 0.0) + v
    return {"records_per_s": rows / seconds if seconds else 0.0, "batches": len(steady),
            "median_s": statistics.median(s for _, s in spans) if spans else 0.0,
            "cores": own / seconds if seconds else 0.0,
            "us_per_record": 1e6 * own / rows if rows else 0.0,
            "own_cpu_us_by_kind": {k: 1e6 * v / rows for k, v in kinds.items()} if rows else {}}

"""The two measurements on the embedded cluster: throughput (draining written polls) and latency
(live)."""

from __future__ import annotations

import dataclasses
import statistics
import time

from streaming import config
from streaming.contracts.tables import RECOMMENDATIONS, REJECTED
from streaming.job import query

from .configuration import Scale
from .load import members_events, produce, write_polls
from .report import throughput_line
from .sampling import CpuSampler, started_s


def throughput(spark, cfg: config.Config, scale: Scale, per_trigger: list[int],
               cpu: CpuSampler | None = None, dense: bool = False) -> list[dict]:
    """Drain the scale's polls once per batch size, each run from a new checkpoint (``dense``: the
    polls are ``lag_dense`` records, one per group poll, so a batch of ``size`` records holds up to
    ``size`` groups)."""
    runs = []
    for size in per_trigger:
        job = dataclasses.replace(cfg.job, max_offsets_per_trigger=size)
        paths = dataclasses.replace(cfg.paths, tables=f"{cfg.paths.tables}-{size}")
        tuned = dataclasses.replace(cfg, job=job, paths=paths)
        start = time.monotonic()
        checkpoint = cfg.checkpoint_path(f"throughput-{scale.tag}-{cfg.job.state_buckets}-{size}")
        batches = query.run(spark, tuned, available_now=True, checkpoint=checkpoint)
        wall = time.monotonic() - start
        data = [b for b in batches if b["input_rows"] > 0]
        steady = steady_batches(data, size)
        rows = sum(b["input_rows"] for b in steady)
        ms = sum(b["batch_ms"] for b in steady)
        median_s = statistics.median(b["batch_ms"] for b in steady) / 1000 if steady else 0.0
        share = {k: statistics.median(b[k] for b in steady) / 1000 if steady else 0.0
                 for k in ("state_update_ms", "state_commit_ms")}
        busy, own = ((sum(cpu.busy_between(started_s(b), started_s(b) + b["batch_ms"] / 1000, own=o)
                          for b in steady)
                      if cpu and steady else 0.0) for o in (False, True))
        kinds = _kinds(cpu, steady)
        groups_per_batch = max(1.0, min(scale.groups, size / _rows_per_poll(scale, dense)))
        runs.append({
            "phases": phases(steady),
            "per_trigger": size, "events": sum(b["input_rows"] for b in data), "batches": len(data),
            "steady_batches": len(steady), "wall_s": wall,
            "first_batch_ms": data[0]["batch_ms"] if data else 0,
            "steady_events_per_s": rows / (ms / 1000) if ms else 0.0,
            "median_batch_s": median_s,
            "median_state_update_s": share["state_update_ms"],
            "median_state_commit_s": share["state_commit_ms"],
            "ms_per_group": 1000 * median_s / groups_per_batch,
            "overall_events_per_s": sum(b["input_rows"] for b in data) / wall,
            "recommendations": sum(b["recommendations"] for b in batches),
            "rejected": sum(b["rejected"] for b in batches),
            "cores_busy": busy / (ms / 1000) if ms else 0.0,
            "cpu_us_per_event": 1e6 * busy / rows if rows else 0.0,
            "own_cpu_us_per_event": 1e6 * own / rows if rows else 0.0,
            "own_cpu_us_by_kind": {k: 1e6 * v / rows for k, v in kinds.items()} if rows else {},
        })
        print(throughput_line(scale, cfg.job.state_buckets, runs[-1]), flush=True)
        if runs[-1]["rejected"]:
            print(f"  rejected, by reason: {_reasons(spark, tuned)}", flush=True)
    return runs


def _kinds(cpu: CpuSampler | None, steady: list[dict]) -> dict[str, float]:
    """The job's own CPU seconds over the ``steady`` batches, by process kind
    (:data:`sampling.KINDS`)."""
    out: dict[str, float] = {}
    for b in steady if cpu else ():
        t0 = started_s(b)
        for k, v in cpu.kinds_between(t0, t0 + b["batch_ms"] / 1000).items():
            out[k] = out.get(k, 0.0) + v
    return out


def steady_batches(data: list[dict], size: int) -> list[dict]:
    """The batches a throughput figure counts: after the first (JVM warm-up, Python workers, table
    creation), the full ones (at least 90% of ``size`` input rows); ``data``: progress lines of
    batches that read something."""
    return [b for b in data[1:] if b["input_rows"] >= 0.9 * size] or data[1:] or data


def _reasons(spark, cfg: config.Config) -> str:
    """The rejected rows' reasons with their counts, the commonest first (a valid load should have
    none)."""
    from pyspark.sql import functions as F

    rows = (spark.read.format("delta").load(cfg.table_path(REJECTED)).groupBy("reason").count()
            .orderBy(F.desc("count")).limit(5).collect())
    return "; ".join(f"{r['count']:,} x {r['reason'][:120]}" for r in rows)


SPARK_PHASES = ("latestOffset", "getBatch", "queryPlanning", "walCommit", "commitOffsets")
WRITER_PHASES = ("check", "compute", "delta", "feed")


def phases(batches: list[dict]) -> dict[str, float]:
    """Median seconds per phase of a batch: Spark's own (offsets, planning, log writes) and the
    writer's (``compute`` is the batch itself up to the stateful step's output; ``delta``, ``feed``
    its writes)."""
    if not batches:
        return {}
    out = {k: statistics.median(b.get("durations", {}).get(k, 0) for b in batches) / 1000
           for k in SPARK_PHASES}
    out |= {k: statistics.median(b.get("writer_ms", {}).get(k, 0) for b in batches) / 1000
            for k in WRITER_PHASES}
    # task time summed over the stateful step's tasks (Spark's allUpdatesTimeMs), not wall time
    out["stateful tasks"] = statistics.median(b["state_update_ms"] for b in batches) / 1000
    return out


def latency(spark, cfg: config.Config, scale: Scale, polls: int, interval_s: int,
            poll_every_s: float, dense: bool = False) -> dict:
    """Run the query on a processing-time trigger while polls are written live (``dense``: one
    ``lag_dense`` record per group and poll, as the collector writes by default); delays and batch
    times."""
    tuned = dataclasses.replace(
        cfg,
        job=dataclasses.replace(cfg.job, trigger_interval=f"{interval_s} seconds",
                                max_offsets_per_trigger=None))
    query.ensure_topics(tuned)
    produce(tuned, members_events(int(time.time() * 1000), scale.groups, scale.partitions))
    q, printer = query.start(spark, tuned, checkpoint=cfg.checkpoint_path(
        f"latency-{scale.tag}-{cfg.job.state_buckets}"))
    try:
        written, lagging, load_s = _write_live(spark, tuned, scale, polls, poll_every_s, dense)
        time.sleep(3 * interval_s)
    finally:
        q.stop()
        spark.streams.removeListener(printer)
    live = {"polls": polls, "trigger_interval_s": interval_s, "load_events_per_s": written / load_s,
            "late_polls": lagging, "dense": dense}
    return (_delay_figures(_delays_ms(spark, tuned)) | live
            | _batch_figures(printer.batches, scale, dense))


def _write_live(spark, cfg: config.Config, scale: Scale, polls: int, poll_every_s: float,
                dense: bool) -> tuple[int, int, float]:
    """Write ``polls`` polls, one every ``poll_every_s``: records written, polls that fell behind,
    seconds taken."""
    from pyspark.sql import functions as F

    written, lagging = 0, 0
    start = time.monotonic()
    for i in range(polls):
        tick = time.monotonic()
        # a tenth of the groups turns skewed, a quarter of them at each poll from the second on;
        # each triggers at its third skewed poll
        skewed = (F.col("g") % 10 == 0) & (F.lit(i) >= 1 + (F.col("g") / 10).cast("int") % 4)
        written += write_polls(spark, cfg, [(int(time.time() * 1000), skewed)], scale.groups,
                               scale.partitions, dense)
        spent = time.monotonic() - tick
        lagging += spent > poll_every_s
        time.sleep(max(0.0, poll_every_s - spent))
    return written, lagging, time.monotonic() - start


def _delays_ms(spark, cfg: config.Config) -> list[float]:
    """Each recommendation's delay from its triggering event to its commit in Delta (Change Data
    Feed), sorted."""
    from pyspark.sql import functions as F

    cdf = (spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 0)
           .load(cfg.table_path(RECOMMENDATIONS))
           .select((F.col("_commit_timestamp").cast("double") * 1000
                    - F.col("event_time").cast("double") * 1000)
                   .alias("delay_ms")).collect())
    return sorted(r["delay_ms"] for r in cdf)


def _delay_figures(delays: list[float]) -> dict:
    """How many recommendations, and their delays' p50 and p95."""
    def pct(q_: float) -> float:
        return delays[min(len(delays) - 1, int(q_ * len(delays)))] if delays else float("nan")

    return {"recommendations": len(delays), "p50_ms": pct(0.5), "p95_ms": pct(0.95)}


def _rows_per_poll(scale: Scale, dense: bool) -> int:
    """Input rows of one group's poll: one ``lag_dense`` record, or one ``lag`` event per
    partition."""
    return 1 if dense else scale.partitions


def _batch_figures(batches: list[dict], scale: Scale, dense: bool = False) -> dict:
    """Batch times of a live run: after the first batch (mean, median, per group, phases) and with
    it."""
    data = [b for b in batches if b["input_rows"] > 0]
    # the first batch starts the JVM's code and reads the members backlog: left out, as in
    # throughput()
    steady = data[1:] or data
    mean_ms = statistics.fmean([b["batch_ms"] for b in steady]) if steady else 0
    mean_rows = statistics.fmean([b["input_rows"] for b in steady]) if steady else 0
    mean_state_ms = statistics.fmean([b["state_update_ms"] for b in steady]) if steady else 0
    groups = max(1.0, min(scale.groups, mean_rows / _rows_per_poll(scale, dense)))
    with_recs = [b for b in steady if b["recommendations"]]
    return {"mean_batch_ms": mean_ms, "mean_batch_rows": mean_rows,
            "mean_state_update_ms": mean_state_ms,
            "median_batch_ms": statistics.median(b["batch_ms"] for b in steady) if steady else 0,
            "first_batch_ms": data[0]["batch_ms"] if data else 0,
            "all_mean_batch_ms": statistics.fmean([b["batch_ms"] for b in data]) if data else 0,
            "ms_per_group": mean_ms / groups, "steady_batches": len(steady),
            "batches_with_recs": len(with_recs), "phases": phases(steady),
            "phases_recs": phases(with_recs),
            "phases_no_recs": phases([b for b in steady if not b["recommendations"]])}

"""Throughput and latency of the streaming rebalancer on this machine.

    .venv/bin/python -m benchmarks.job [--groups 1000] [--partitions 100] [--polls 6] [--save]

Two measurements on an embedded one-broker cluster, with the real job (Kafka -> parse/validate ->
applyInPandasWithState on RocksDB -> Delta + trigger feed):

1. throughput: ``groups x partitions`` lag events per poll for ``--polls`` polls are produced first, then
   the query drains them with ``availableNow`` and ``maxOffsetsPerTrigger``; events per second over the
   batches (Spark start-up excluded, first batch reported apart: it pays for the Python workers and the
   table creation);
2. latency: the query runs with a processing-time trigger while polls are produced live, one every
   trigger interval, with skew appearing on a tenth of the groups; for each recommendation, the delay from
   the wall time its triggering poll was produced (the events' ``ts``) to the commit of its row in Delta
   (``_commit_timestamp`` of the Change Data Feed); p50 and p95.

Peak memory of the driver JVM and the Python workers together (RSS of this process's descendants
other than the broker) is sampled every 0.5 s.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from streaming import config, jvm, kafka_clients
from streaming import events as ev
from streaming.job import query, sinks
from streaming.kafka_cluster import KafkaCluster

RESULTS = Path(__file__).parent / "results" / "job.txt"


class MemorySampler(threading.Thread):
    """Peak RSS of this process and its descendants, minus the pids to ignore (the brokers)."""

    def __init__(self, ignore: set[int]) -> None:
        super().__init__(daemon=True)
        self.ignore = ignore
        self.peak = 0
        self.stop_flag = threading.Event()

    def run(self) -> None:
        while not self.stop_flag.wait(0.5):
            self.peak = max(self.peak, _tree_rss(os.getpid(), self.ignore))


def _tree_rss(root: int, ignore: set[int]) -> int:
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(d.name))
            rss[int(d.name)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError, ValueError):
            continue
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        if pid in ignore:
            continue
        total += rss.get(pid, 0)
        todo += children.get(pid, [])
    return total


def poll_events(ts: int, groups: int, partitions: int, skewed: set[int]) -> list[dict]:
    out = []
    for g in range(groups):
        for p in range(partitions):
            lag = 20_000 if g in skewed and p < 5 else 100 + (p * 7 + g) % 50
            committed = ts // 10 + p
            out.append(ev.lag_event(ts, f"group-{g:04d}", f"topic-{g % 50:02d}", p, committed, committed + lag))
    return out


def members_events(ts: int, groups: int, partitions: int, consumers: int = 4) -> list[dict]:
    out = []
    for g in range(groups):
        per = partitions // consumers
        members = [ev.member_entry(f"m-{c}", [f"topic-{g % 50:02d}"],
                                   [(f"topic-{g % 50:02d}", p) for p in range(c * per, (c + 1) * per)],
                                   client_id=f"c-{c}", rack="abc"[c % 3]) for c in range(consumers)]
        out.append(ev.members_event(ts, f"group-{g:04d}", 1, "range", members))
    return out


def produce(cfg: config.Config, events: list[dict]) -> float:
    prod = kafka_clients.producer(cfg, linger_ms=50, batch_size=512 * 1024, acks=1, enable_idempotence=False)
    start = time.monotonic()
    try:
        for e in events:
            key, value = ev.encode(e)
            prod.send(ev.topic_for(e, cfg.kafka.lag_topic, cfg.kafka.metadata_topic), key=key, value=value)
        prod.flush(300)
    finally:
        prod.close()
    return time.monotonic() - start


def throughput(spark, cfg: config.Config, groups: int, partitions: int, polls: int, per_trigger: int) -> dict:
    t0 = int(time.time() * 1000) - polls * 10_000
    events = members_events(t0, groups, partitions)
    for i in range(polls):
        events += poll_events(t0 + i * 10_000, groups, partitions, skewed=set(range(0, groups, 10)))
    lag_events = groups * partitions * polls
    produced_s = produce(cfg, events)
    print(f"produced {len(events):,} events ({lag_events:,} lag) in {produced_s:.1f}s", flush=True)
    tuned = dataclasses.replace(cfg, job=dataclasses.replace(cfg.job, max_offsets_per_trigger=per_trigger))
    start = time.monotonic()
    batches = query.run(spark, tuned, available_now=True, checkpoint=cfg.checkpoint_path("throughput"))
    wall = time.monotonic() - start
    data = [b for b in batches if b["input_rows"] > 0]
    steady = data[1:] or data
    rows = sum(b["input_rows"] for b in steady)
    ms = sum(b["batch_ms"] for b in steady)
    return {
        "events": len(events), "batches": len(data), "wall_s": wall,
        "first_batch_ms": data[0]["batch_ms"] if data else 0,
        "steady_events_per_s": rows / (ms / 1000) if ms else 0.0,
        "overall_events_per_s": sum(b["input_rows"] for b in data) / wall,
        "recommendations": sum(b["recommendations"] for b in batches),
    }


def latency(spark, cfg: config.Config, groups: int, partitions: int, polls: int, interval_s: int) -> dict:
    tuned = dataclasses.replace(
        cfg,
        job=dataclasses.replace(cfg.job, trigger_interval=f"{interval_s} seconds", max_offsets_per_trigger=None),
        kafka=dataclasses.replace(cfg.kafka, lag_topic=cfg.kafka.lag_topic + ".live",
                                  metadata_topic=cfg.kafka.metadata_topic + ".live"),
        paths=dataclasses.replace(cfg.paths, tables=cfg.paths.tables + "-live"),
    )
    q, printer = query.start(spark, tuned, checkpoint=cfg.checkpoint_path("latency"))
    try:
        now = int(time.time() * 1000)
        produce(tuned, members_events(now, groups, partitions))
        for i in range(polls):
            tick = time.monotonic()
            # a tenth of the groups turns skewed, a quarter of them at each poll from the second on; each
            # triggers at its third skewed poll
            skewed = {g for g in range(0, groups, 10) if i >= 1 + (g // 10) % 4}
            produce(tuned, poll_events(int(time.time() * 1000), groups, partitions, skewed))
            time.sleep(max(0.0, interval_s - (time.monotonic() - tick)))
        time.sleep(3 * interval_s)
    finally:
        q.stop()
        spark.streams.removeListener(printer)
    from pyspark.sql import functions as F

    cdf = (spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 0)
           .load(tuned.table_path(sinks.RECOMMENDATIONS))
           .select((F.col("_commit_timestamp").cast("double") * 1000 - F.col("event_time").cast("double") * 1000)
                   .alias("delay_ms")).collect())
    delays = sorted(r["delay_ms"] for r in cdf)
    pct = lambda q_: delays[min(len(delays) - 1, int(q_ * len(delays)))] if delays else float("nan")  # noqa: E731
    return {"recommendations": len(delays), "p50_ms": pct(0.5), "p95_ms": pct(0.95),
            "trigger_interval_s": interval_s,
            "mean_batch_ms": statistics.fmean([b["batch_ms"] for b in printer.batches]) if printer.batches else 0}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="benchmarks.job", description=__doc__.split("\n")[0])
    ap.add_argument("--groups", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--polls", type=int, default=6)
    ap.add_argument("--per-trigger", type=int, default=200_000, help="maxOffsetsPerTrigger of the throughput run")
    ap.add_argument("--latency-polls", type=int, default=8)
    ap.add_argument("--interval", type=int, default=10, help="trigger interval (s) of the latency run")
    ap.add_argument("--save", action="store_true")
    args = ap.parse_args(argv)

    jvm.resolve()
    from streaming.spark_session import get_spark

    work = Path(tempfile.mkdtemp(prefix="rebalancer-bench-"))
    lines = [f"benchmarks.job: {args.groups} groups x {args.partitions} partitions, {os.cpu_count()} cores"]
    with KafkaCluster(brokers=1, base_dir=work / "kafka") as cluster:
        base = config.load()
        cfg = dataclasses.replace(
            base,
            kafka=dataclasses.replace(base.kafka, bootstrap_servers=cluster.bootstrap_servers),
            paths=config.PathSettings(checkpoints=str(work / "checkpoints"), tables=str(work / "tables")),
            spark=dataclasses.replace(base.spark, master="local[2]", conf={"spark.sql.shuffle.partitions": "4"}),
        )
        query.ensure_topics(cfg)
        sampler = MemorySampler(set(cluster.pids()))
        sampler.start()
        spark = get_spark(cfg)
        try:
            t = throughput(spark, cfg, args.groups, args.partitions, args.polls, args.per_trigger)
            lines.append(
                f"throughput: {t['events']:,} events in {t['batches']} batches; steady {t['steady_events_per_s']:,.0f} "
                f"events/s (target >= 50,000); overall incl. first batch {t['overall_events_per_s']:,.0f} events/s; "
                f"first batch {t['first_batch_ms'] / 1000:.1f}s; {t['recommendations']} recommendations")
            print(lines[-1], flush=True)
            la = latency(spark, cfg, args.groups, args.partitions, args.latency_polls, args.interval)
            lines.append(
                f"latency: trigger interval {la['trigger_interval_s']}s; {la['recommendations']} recommendations; "
                f"delay event -> Delta p50 {la['p50_ms'] / 1000:.1f}s, p95 {la['p95_ms'] / 1000:.1f}s "
                f"(target p95 <= {2 * la['trigger_interval_s']}s); mean batch {la['mean_batch_ms'] / 1000:.1f}s")
            print(lines[-1], flush=True)
        finally:
            spark.stop()
            sampler.stop_flag.set()
        lines.append(f"memory: peak RSS of driver JVM + Python workers + this process {sampler.peak / 2**30:.2f} GiB "
                     "(target < 4 GiB; state on RocksDB)")
        print(lines[-1])
    if args.save:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Collector throughput: partitions per second of polling, for 100 groups x 100 partitions.

    .venv/bin/python -m benchmarks.collector                  # 100 groups x 100 partitions, 10 topics
    .venv/bin/python -m benchmarks.collector --topics 100     # every group on a topic of its own
    .venv/bin/python -m benchmarks.collector --save           # also write benchmarks/results/collector.txt

Set-up: an embedded 1-broker cluster; ``--topics`` topics of ``--partitions`` partitions with a few records
each; ``--groups`` groups, group ``g`` reading topic ``g % topics``, created by committing an offset for
every partition with the admin API (no live members: a poll reads them exactly as a live group, minus
the member decoding). Then ``--polls`` timed polls after one warm-up:

- ``poll``: :meth:`Collector.poll_once` (ListGroups, DescribeGroups, OffsetFetch, Metadata, ListOffsets,
  and building the events);
- ``poll+publish``: the same plus publishing the events with kafka-python and waiting for the acks.

The figure is group-partitions (one lag event each) per second of wall time.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import platform
import random
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "collector.txt"


def _parser() -> argparse.ArgumentParser:
    """The command line's options."""
    ap = argparse.ArgumentParser(prog="benchmarks.collector", description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--groups", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--topics", type=int, default=10)
    ap.add_argument("--polls", type=int, default=5)
    ap.add_argument("--save", action="store_true", help=f"write {RESULTS.relative_to(ROOT)}")
    return ap


def main(argv: list[str] | None = None) -> int:
    """Set up the groups on an embedded broker, time the polls, report (and save)."""
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("kafka").setLevel(logging.ERROR)

    from streaming import config, jvm
    from streaming.embedded.cluster import KafkaCluster

    jvm.resolve()
    lines: list[str] = []

    def say(line: str) -> None:
        print(line, flush=True)
        lines.append(line)

    with KafkaCluster(brokers=1) as cluster:
        base = config.load()
        kafka = dataclasses.replace(base.kafka, bootstrap_servers=cluster.bootstrap_servers)
        cfg = dataclasses.replace(base, kafka=kafka)
        t0 = time.monotonic()
        _set_up(cfg, args)
        say(f"set-up: {args.groups} groups x {args.partitions} partitions over {args.topics} topic(s) on 1 broker "
            f"({time.monotonic() - t0:.1f}s)")
        expected = args.groups * args.partitions
        poll_s, total_s = _time_polls(cfg, args.polls, expected)

    med_poll, med_total = statistics.median(poll_s), statistics.median(total_s)
    say(f"poll (read + decide), median of {args.polls}: {med_poll:.3f}s -> {expected / med_poll:,.0f} partitions/s")
    say(f"poll + publish {expected} lag events, median: {med_total:.3f}s -> {expected / med_total:,.0f} partitions/s")
    say(f"python {platform.python_version()}, {platform.machine()}, {_cpus()} CPU(s)")
    if args.save:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(f"# .venv/bin/python -m benchmarks.collector {' '.join(argv or [])}".rstrip() + "\n"
                           + "".join(f"{ln}\n" for ln in lines))
        print(f"saved {RESULTS.relative_to(ROOT)}")
    return 0


def _set_up(cfg, args: argparse.Namespace) -> None:
    """The topics with a few records per partition, the event topics, and each group's committed offsets."""
    from kafka import TopicPartition
    from kafka.structs import OffsetAndMetadata

    from streaming.collector.publisher import ensure_event_topics
    from streaming.kafka_clients import factories as kafka_clients

    rnd = random.Random(7)
    topics = [f"bench-{i:03d}" for i in range(args.topics)]
    kafka_clients.ensure_topics(cfg, {t: {"num_partitions": args.partitions, "replication_factor": 1}
                                      for t in topics})
    ensure_event_topics(cfg)
    producer = kafka_clients.producer(cfg, linger_ms=50)
    per_partition = 20
    for t in topics:
        for p in range(args.partitions):
            for _ in range(per_partition):
                producer.send(t, value=b"x", partition=p)
    producer.flush()
    producer.close()
    admin = kafka_clients.admin(cfg)
    try:
        for g in range(args.groups):
            topic = topics[g % len(topics)]
            offsets = {TopicPartition(topic, p): OffsetAndMetadata(rnd.randint(0, per_partition), "", -1)
                       for p in range(args.partitions)}
            _retry(lambda g=g, offsets=offsets: admin.alter_group_offsets(f"bench-group-{g:03d}", offsets))
    finally:
        admin.close()


def _time_polls(cfg, polls: int, expected: int) -> tuple[list[float], list[float]]:
    """One warm-up poll (checked: ``expected`` lag events), then ``polls`` timed: poll, and poll + publish."""
    from streaming.collector import Collector, CollectorOptions
    from streaming.collector.publisher import Publisher

    opts = CollectorOptions(include=r"^bench-group-", full_refresh_every=0)
    collector = Collector(cfg, opts, out=None)
    publisher = Publisher(cfg)
    try:
        warm = collector.poll_once()
        got = sum(1 for e in warm if e["type"] == "lag")
        if got != expected:
            raise SystemExit(f"warm-up poll gave {got} lag events, expected {expected}")
        publisher.publish(warm)
        poll_s, total_s = [], []
        for _ in range(polls):
            started = time.monotonic()
            evs = collector.poll_once()
            read = time.monotonic() - started
            publisher.publish(evs)
            poll_s.append(read)
            total_s.append(time.monotonic() - started)
            assert collector.last_stats is not None and collector.last_stats.partitions == expected
    finally:
        publisher.close()
        collector.close()
    return poll_s, total_s


def _retry(call, attempts: int = 60):
    """The first commit waits for __consumer_offsets to exist (CoordinatorNotAvailable meanwhile)."""
    from kafka.errors import RetriableError

    for i in range(attempts):
        try:
            return call()
        except RetriableError:
            if i == attempts - 1:
                raise
            time.sleep(0.5)


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


if __name__ == "__main__":
    raise SystemExit(main())

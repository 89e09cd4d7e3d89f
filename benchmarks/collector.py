"""Collector throughput: partitions per second of polling, for 100 groups x 100 partitions.

    .venv/bin/python -m benchmarks.collector                 # 100 groups x 100 partitions,
                                                             # 10 topics
    .venv/bin/python -m benchmarks.collector --topics 100    # every group on a topic of its own
    .venv/bin/python -m benchmarks.collector --save          # also append to
                                                             # benchmarks/results/collector.txt
    .venv/bin/python -m benchmarks.collector --collectors 2  # two collectors side by side,
                                                             # --shard 0/2 and 1/2

Set-up: an embedded 1-broker cluster; ``--topics`` topics of ``--partitions`` partitions with a few
records each; ``--groups`` groups, group ``g`` reading topic ``g % topics``, created by committing
an offset for every partition with the admin API (no live members: a poll reads them exactly as a
live group, minus the member decoding). Then ``--polls`` timed polls after one warm-up:

- ``poll``: :meth:`~streaming.collector.collector.Collector.poll_once` (ListGroups, DescribeGroups,
OffsetFetch, Metadata, ListOffsets,
  and building the events);
- ``poll+publish``: the same plus publishing the events with kafka-python and waiting for the acks.

The figure is group-partitions (partition readings) per second of wall time. The lag goes out in the
collector's default form, one ``lag_dense`` record per group and topic (``--lag-form partition``:
one ``lag`` event per partition). ``--shard i/N`` polls that shard's groups alone. ``--collectors
N`` runs N collector processes side by side against the same broker, collector ``i`` with ``--shard
i/N`` (each attaches with ``--bootstrap-servers`` and skips the set-up; their timed polls start at
the same wall-clock second); the total is all readings over the slowest collector's time.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import platform
import random
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "collector.txt"


def _parser() -> argparse.ArgumentParser:
    """The command line's options."""
    ap = argparse.ArgumentParser(prog="benchmarks.collector",
                                 description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--groups", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--topics", type=int, default=10)
    ap.add_argument("--polls", type=int, default=5)
    ap.add_argument("--lag-form", choices=("dense", "partition"), default="dense")
    ap.add_argument("--shard", default=None, help="i/N: poll the groups of shard i of N alone")
    ap.add_argument("--collectors", type=int, default=1,
                    help="N collector processes side by side (--shard i/N)")
    ap.add_argument("--bootstrap-servers", default=None,
                    help="attach to this (already set-up) cluster instead of starting one (for "
                         "--collectors)")
    ap.add_argument("--start-at", type=float, default=0.0,
                    help="wall-clock second to start the timed polls at")
    ap.add_argument("--save", action="store_true",
                    help=f"append the figures to {RESULTS.relative_to(ROOT)}")
    return ap


def main(argv: list[str] | None = None) -> int:
    """Set up the groups on an embedded broker, time the polls, report (and save)."""
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("kafka").setLevel(logging.ERROR)

    from streaming import config, jvm
    from streaming.embedded.cluster import KafkaCluster

    lines: list[str] = []

    def say(line: str) -> None:
        print(line, flush=True)
        lines.append(line)

    def configured(bootstrap: str) -> config.Config:
        base = config.load()
        kafka = dataclasses.replace(base.kafka, bootstrap_servers=bootstrap)
        return dataclasses.replace(base, kafka=kafka)

    if args.bootstrap_servers:  # one of --collectors' processes: the cluster is set up already
        _measure(configured(args.bootstrap_servers), args, say)
        return 0
    jvm.resolve()
    with KafkaCluster(brokers=1) as cluster:
        cfg = configured(cluster.bootstrap_servers)
        t0 = time.monotonic()
        _set_up(cfg, args)
        say(f"set-up: {args.groups} groups x {args.partitions} partitions over {args.topics} "
            f"topic(s) on 1 broker ({time.monotonic() - t0:.1f}s)")
        if args.collectors > 1:
            _side_by_side(cluster.bootstrap_servers, args, say)
        else:
            _measure(cfg, args, say)
    say(f"python {platform.python_version()}, {platform.machine()}, {_cpus()} CPU(s)")
    if args.save:  # appended under a dated header, as the other results files keep their history
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        with RESULTS.open("a") as f:
            f.write(f"\n# {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, load average at "
                    f"the end {load}\n# .venv/bin/python -m benchmarks.collector "
                    f"{' '.join(argv or sys.argv[1:])}".rstrip() + "\n"
                    + "".join(f"{ln}\n" for ln in lines))
        print(f"appended to {RESULTS.relative_to(ROOT)}")
    return 0


def _set_up(cfg, args: argparse.Namespace) -> None:
    """The topics with a few records per partition, the event topics, and each group's committed
    offsets."""
    from kafka import TopicPartition
    from kafka.structs import OffsetAndMetadata

    from streaming.collector.publisher import ensure_event_topics
    from streaming.kafka_clients import factories as kafka_clients

    rnd = random.Random(7)
    topics = [f"bench-{i:03d}" for i in range(args.topics)]
    specs = {t: {"num_partitions": args.partitions, "replication_factor": 1} for t in topics}
    kafka_clients.ensure_topics(cfg, specs)
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
            offsets = {TopicPartition(topic, p):
                       OffsetAndMetadata(rnd.randint(0, per_partition), "", -1)
                       for p in range(args.partitions)}
            _retry(lambda g=g, offsets=offsets:
                   admin.alter_group_offsets(f"bench-group-{g:03d}", offsets))
    finally:
        admin.close()


def _measure(cfg, args: argparse.Namespace, say) -> None:
    """Time one collector's polls (of its shard's groups with ``--shard``) and say the figures."""
    from streaming.collector.shards import StaticShards

    shards = StaticShards.parse(args.shard) if args.shard else None
    groups = [f"bench-group-{g:03d}" for g in range(args.groups)]
    expected = args.partitions * sum(1 for g in groups if shards is None or shards.owns(g))
    poll_s, total_s, records = _time_polls(cfg, args, expected, shards)
    med_poll, med_total = statistics.median(poll_s), statistics.median(total_s)
    who = f"{shards.describe()}: " if shards else ""
    say(f"{who}poll (read + decide), median of {args.polls}: {med_poll:.3f}s -> "
        f"{expected / med_poll:,.0f} partitions/s")
    say(f"{who}poll + publish {expected} partition readings as {records} {args.lag_form} lag "
        f"record(s), median: {med_total:.3f}s -> {expected / med_total:,.0f} partitions/s; all "
        f"{args.polls} polls + publishes {sum(total_s):.3f}s")
    say(f"{who}peak RSS of the collector's process (Python, kafka-python; the broker apart) "
        f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


def _side_by_side(bootstrap: str, args: argparse.Namespace, say) -> None:
    """``--collectors N``: N processes with ``--shard i/N`` on the same broker, timed polls started
    together."""
    start_at = time.time() + 15 + 3 * args.collectors  # their imports and warm-up polls first
    common = ["--bootstrap-servers", bootstrap, "--start-at", str(start_at), "--groups",
              str(args.groups), "--partitions", str(args.partitions), "--topics", str(args.topics),
              "--polls", str(args.polls), "--lag-form", args.lag_form]
    procs = [subprocess.Popen([sys.executable, "-m", "benchmarks.collector", *common,
                               "--shard", f"{i}/{args.collectors}"], cwd=ROOT,
                              stdout=subprocess.PIPE, text=True)
             for i in range(args.collectors)]
    totals = []
    for p in procs:
        out, _ = p.communicate(timeout=600)
        if p.returncode:
            raise SystemExit(f"a collector exited {p.returncode}:\n{out}")
        for line in out.splitlines():
            say(f"  {line}")
            if "all " in line and "polls + publishes" in line:
                totals.append(float(line.rsplit(" ", 1)[1].rstrip("s")))
    if max(totals) > 0:
        expected = args.groups * args.partitions * args.polls
        say(f"{args.collectors} collectors side by side: {expected:,} partition readings polled "
            f"and published in {max(totals):.3f}s (the slowest collector's {args.polls} polls) -> "
            f"{expected / max(totals):,.0f} partitions/s")


def _time_polls(cfg, args: argparse.Namespace, expected: int,
                shards) -> tuple[list[float], list[float], int]:
    """One warm-up poll (checked: ``expected`` partition readings), then ``polls`` timed, from
    ``--start-at``: poll, and poll + publish; and the lag records of a poll."""
    from streaming.collector import Collector, CollectorOptions
    from streaming.collector.publisher import Publisher

    opts = CollectorOptions(include=r"^bench-group-", full_refresh_every=0, lag_form=args.lag_form)
    collector = Collector(cfg, opts, out=None, shards=shards)
    publisher = Publisher(cfg)
    try:
        warm = collector.poll_once()
        assert collector.last_stats is not None
        if collector.last_stats.partitions != expected:
            raise SystemExit(f"warm-up poll read {collector.last_stats.partitions} partitions, "
                             f"expected {expected}")
        records = collector.last_stats.lag_events
        publisher.publish(warm)
        time.sleep(max(0.0, args.start_at - time.time()))
        poll_s, total_s = [], []
        for _ in range(args.polls):
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
    return poll_s, total_s, records


def _retry(call, attempts: int = 60):
    """The first commit waits for __consumer_offsets to exist (CoordinatorNotAvailable
    meanwhile)."""
    from kafka.errors import RetriableError

    for i in range(attempts):
        try:
            return call()
        except RetriableError:
            if i == attempts - 1:
                raise
            time.sleep(0.5)


def _cpus() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


if __name__ == "__main__":
    raise SystemExit(main())

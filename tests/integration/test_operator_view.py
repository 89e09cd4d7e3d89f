"""What the lag exporters do not say, on the 3-broker cluster: a slow group's data-loss risk as
retention really moves the log start (then the records it lost), a hot partition named, in the
collector's ``/metrics`` and in ``rebalancer describe``, and the consumers a group needs read as
KEDA reads them."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid

import pytest

from streaming import exporter
from streaming.collector import Collector, CollectorOptions
from streaming.dev.workload import Workload, WorkloadOptions
from streaming.kafka_clients import factories as kafka_clients
from streaming.lag import hot, sizing

from .conftest import commit_offsets, topic_with_records
from .test_metrics_endpoint import scrape

pytestmark = [pytest.mark.integration]

SEGMENT = 1 << 20
"""segment.bytes: Kafka 4 allows no less than 1 MiB."""
RECORD = b"r" * (32 * 1024)
KEPT = 4 * SEGMENT
"""retention.bytes: the log keeps about four segments, so the log start rises a segment at a
time."""


def _collector(cfg, group: str, interval_s: float = 0.5, **policy) -> Collector:
    mc = dataclasses.replace(cfg, metrics=dataclasses.replace(cfg.metrics, enabled=True,
                                                              collector_port=0),
                             policy=dataclasses.replace(cfg.policy, **policy))
    return Collector(mc, CollectorOptions(include=f"^{group}$", interval_s=interval_s), out=None,
                     export=exporter.for_collector(mc))


def _describe(cfg, group: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "streaming.cli", "describe", "--group", group,
                           "--bootstrap", cfg.kafka.bootstrap_servers,
                           "--conf", f"paths.tables={cfg.paths.tables}",
                           "--lag-seconds-timeout", "0", *args], capture_output=True, text=True,
                           timeout=120)


def _described(cfg, group: str, *args: str) -> dict:
    out = _describe(cfg, group, "--format", "json", *args)
    assert out.returncode == 0, out.stderr
    (g,) = json.loads(out.stdout)["groups"]
    return g


def _gauge(samples: dict, name: str, group: str) -> float:
    """The group's gauge; NaN while it has none (a group made by an admin commit lists a poll or two
    late)."""
    return samples.get((f"kafka_rebalancer_{name}", (("group", group),)), math.nan)


def test_a_slow_group_sees_its_risk_then_the_records_it_lost(cfg):
    name = f"retention-{uuid.uuid4().hex[:6]}"
    kafka_clients.ensure_topics(cfg, {name: {
        "num_partitions": 1, "replication_factor": 1,
        "configs": {"segment.bytes": str(SEGMENT), "retention.bytes": str(KEPT)}}})
    producer = kafka_clients.producer(cfg, max_request_size=2 * SEGMENT)
    admin = kafka_clients.admin(cfg)

    def produce(records: int) -> None:
        for _ in range(records):
            producer.send(name, RECORD, partition=0)
        producer.flush()

    try:
        produce(4 * SEGMENT // len(RECORD))
        end = admin.list_partition_offsets({_tp(name): _latest()})[_tp(name)].offset
        # the slow group: it commits once and reads no more
        commit_offsets(admin, name, {(name, 0): end})
        risk = lost = None
        with _collector(cfg, name) as c:
            deadline = time.monotonic() + 240
            while lost is None and time.monotonic() < deadline:
                # production goes on, a quarter segment a poll; each poll sees the log after
                # retention has run on it, so the log start moves a segment at a time and some poll
                # sees it move before it passes the commit (unpaced, a loaded machine produced
                # several segments between two retention checks, and one check moved the log start
                # from 0 past the commit: lost seen, never the risk before it)
                produce(SEGMENT // len(RECORD) // 4)
                _retention_settles(admin, name)
                c.poll_once()
                s = scrape(c.export.server.url)[1]
                seconds = _gauge(s, "group_retention_loss_seconds", name)
                if _gauge(s, "group_lost_records", name) > 0:  # NaN (not listed yet) is not
                    lost = s
                elif risk is None and 0 < seconds < math.inf:
                    risk = (seconds, _gauge(s, "group_retention_headroom_records", name),
                            _described(cfg, name))
        assert risk is not None and lost is not None, \
            "retention never moved the log start past the commit"
        seconds, headroom, before = risk
        (row,) = before["partitions"]
        assert row["lost_records"] == 0 and row["retention_headroom"] > 0 \
            and row["log_start_offset"] > 0
        assert headroom > 0 and seconds > 0
        # the group stood still, so what it lost is exactly how far the log start passed its commit
        (row,) = (after := _described(cfg, name))["partitions"]
        assert row["lost_records"] == row["log_start_offset"] - end > 0
        assert any("already lost" in line for line in after["retention"])
        text = _describe(cfg, name).stdout
        assert f"Retention: {name}-0: already lost: " in text and "LOG-START-OFFSET" in text
    finally:
        producer.close()
        admin.close()


def test_a_hot_partition_is_named(cfg):
    name = f"hot-{uuid.uuid4().hex[:6]}"
    kafka_clients.ensure_topics(cfg, {name: {"num_partitions": 4, "replication_factor": 1}})
    admin = kafka_clients.admin(cfg)
    commit_offsets(admin, name, {(name, p): 0 for p in range(4)})
    admin.close()
    stop = threading.Event()
    producer = kafka_clients.producer(cfg, linger_ms=5)

    def produce() -> None:  # partition 0 at ten times the others' rate
        while not stop.is_set():
            for p, n in ((0, 10), (1, 1), (2, 1), (3, 1)):
                for _ in range(n):
                    producer.send(name, b"v", partition=p)
            stop.wait(0.05)

    worker = threading.Thread(target=produce, daemon=True)
    worker.start()
    try:
        with _collector(cfg, name) as c:
            c.run(polls=6)  # 0.5 s apart: the window's produce rates
            s = scrape(c.export.server.url)[1]
        hot_series = {labels: v for (metric, labels), v in s.items()
                      if metric == "kafka_rebalancer_hot_partition_records_per_second"}
        assert list(hot_series) == [(("group", name), ("partition", "0"), ("topic", name))]
        assert _gauge(s, "group_hot_partitions", name) == 1
        described = _described(cfg, name, "--rate-window", "2")
        assert [(h["topic"], h["partition"]) for h in described["hot_partitions"]] == [(name, 0)]
        assert described["hot_partitions"][0]["share"] > 0.5 and hot.NOTE in described["says"][0]
    finally:
        stop.set()
        worker.join(10)
        producer.close()


def _retention_settles(admin, name: str, timeout_s: float = 60.0) -> None:
    """Wait until the partition's log is within what retention keeps: ``retention.bytes`` plus the
    segment it may not yet delete (Kafka deletes the oldest segment only when the log exceeds the
    limit by that segment's size). A condition on the broker's own offsets, not a pause: retention
    runs every second here."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        earliest = admin.list_partition_offsets({_tp(name): _earliest()})[_tp(name)].offset
        end = admin.list_partition_offsets({_tp(name): _latest()})[_tp(name)].offset
        if (end - earliest) * len(RECORD) < KEPT + SEGMENT:
            return
        time.sleep(0.1)
    raise AssertionError(f"retention did not run on {name} within {timeout_s:.0f} s")


def _tp(topic: str):
    from kafka import TopicPartition

    return TopicPartition(topic, 0)


def _latest():
    from kafka.admin import OffsetSpec

    return OffsetSpec.LATEST


def _earliest():
    from kafka.admin import OffsetSpec

    return OffsetSpec.EARLIEST


def test_a_keda_read_of_the_consumers_needed_matches_the_workloads_rates(cfg):
    """One consumer of 100 records/s, 7,200 records behind, on 12 partitions producing 10/s each: a
    consumer may take 80/s (20% headroom), so two are needed (six partitions, 60/s, each; one would
    take 120/s), as the rule says of the workload's own rates, and as it says for any capacity
    measured in 75..150/s (what a loaded machine measures moves within that); KEDA's metrics-api
    scaler reads that number at ``/consumers?group=G``."""
    name = f"keda-{uuid.uuid4().hex[:6]}"
    capacity = 100.0
    # the backlog first, committed at 0 on every partition: a member that never caught up over 60 s
    # of its rate counts as backlogged at once (the collector's window holds committed partitions
    # only, so every one is committed)
    topic_with_records(cfg, name, 12, 7200)
    admin = kafka_clients.admin(cfg)
    commit_offsets(admin, name, {(name, p): 0 for p in range(12)})
    admin.close()
    opts = WorkloadOptions(topic=name, group=name, partitions=12, replication_factor=1,
                           produce_rate=120, zipf=None, consumers=1, consume_rate=capacity,
                           racks=())
    stop = threading.Event()
    # the workload's consumer drains the backlog a few partitions at a time (a poll's records come
    # from one or two), so the others stand still for many polls; the stuck rule (which would leave
    # them out of its capacity) is off
    with Workload(cfg, opts, out=None) as w, \
            _collector(cfg, name, 1.0, stuck_observations=cfg.policy.lag_history + 1) as c:
        expected = sizing.size(w.rates, capacity, cfg.policy.capacity_headroom)
        assert expected == sizing.Sizing(2, 12)
        runner = threading.Thread(target=c.run, kwargs={"stop": stop}, daemon=True)
        runner.start()
        url = f"http://127.0.0.1:{c.export.server.port}/consumers?group={name}"
        try:
            body: dict = {}
            deadline = time.monotonic() + 240
            while not body.get("known") and time.monotonic() < deadline:
                if stop.wait(1.0):
                    break
                # 404 until the group's first poll
                with contextlib.suppress(urllib.error.HTTPError):
                    body = json.loads(urllib.request.urlopen(url, timeout=5).read())
        finally:
            stop.set()
            runner.join(30)
    assert body.get("known"), body
    assert (body["group"], body["consumers"], body["fewest"], body["most"], body["members"]) \
        == (name, 2, 2, 12, 1)
    assert abs(body["capacity_records_per_s"] - capacity) / capacity < 0.25, body

"""What the lag exporters do not say, on the 3-broker cluster: a slow group's data-loss risk as retention really
moves the log start (then the records it lost), and a hot partition named, in the collector's ``/metrics`` and in
``rebalancer describe``."""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys
import threading
import time
import uuid

import pytest

from streaming import exporter
from streaming.collector import Collector, CollectorOptions
from streaming.kafka_clients import factories as kafka_clients
from streaming.lag import hot

from .conftest import commit_offsets
from .test_metrics_endpoint import scrape

pytestmark = [pytest.mark.integration]

SEGMENT = 1 << 20
"""segment.bytes: Kafka 4 allows no less than 1 MiB."""
RECORD = b"r" * (32 * 1024)
KEPT = 4 * SEGMENT
"""retention.bytes: the log keeps about four segments, so the log start rises a segment at a time."""


def _collector(cfg, group: str) -> Collector:
    mc = dataclasses.replace(cfg, metrics=dataclasses.replace(cfg.metrics, enabled=True, collector_port=0))
    return Collector(mc, CollectorOptions(include=f"^{group}$", interval_s=0.5), out=None,
                     export=exporter.for_collector(mc))


def _describe(cfg, group: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "streaming.cli", "describe", "--group", group, "--bootstrap",
                           cfg.kafka.bootstrap_servers, "--conf", f"paths.tables={cfg.paths.tables}",
                           "--lag-seconds-timeout", "0", *args], capture_output=True, text=True, timeout=120)


def _described(cfg, group: str, *args: str) -> dict:
    out = _describe(cfg, group, "--format", "json", *args)
    assert out.returncode == 0, out.stderr
    (g,) = json.loads(out.stdout)["groups"]
    return g


def _gauge(samples: dict, name: str, group: str) -> float:
    """The group's gauge; NaN while it has none (a group made by an admin commit lists a poll or two late)."""
    return samples.get((f"kafka_rebalancer_{name}", (("group", group),)), math.nan)


def test_a_slow_group_sees_its_risk_then_the_records_it_lost(cfg):
    name = f"retention-{uuid.uuid4().hex[:6]}"
    kafka_clients.ensure_topics(cfg, {name: {"num_partitions": 1, "replication_factor": 1, "configs": {
        "segment.bytes": str(SEGMENT), "retention.bytes": str(KEPT)}}})
    producer = kafka_clients.producer(cfg, max_request_size=2 * SEGMENT)
    admin = kafka_clients.admin(cfg)

    def produce(records: int) -> None:
        for _ in range(records):
            producer.send(name, RECORD, partition=0)
        producer.flush()

    try:
        produce(4 * SEGMENT // len(RECORD))
        end = admin.list_partition_offsets({_tp(name): _latest()})[_tp(name)].offset
        commit_offsets(admin, name, {(name, 0): end})  # the slow group: it commits once and reads no more
        risk = lost = None
        with _collector(cfg, name) as c:
            deadline = time.monotonic() + 240
            while lost is None and time.monotonic() < deadline:
                # production goes on, a quarter segment a poll: retention moves the log start a segment at a time
                produce(SEGMENT // len(RECORD) // 4)
                c.poll_once()
                s = scrape(c.export.server.url)[1]
                seconds = _gauge(s, "group_retention_loss_seconds", name)
                if _gauge(s, "group_lost_records", name) > 0:  # NaN (not listed yet) is not
                    lost = s
                elif risk is None and 0 < seconds < math.inf:
                    risk = (seconds, _gauge(s, "group_retention_headroom_records", name), _described(cfg, name))
        assert risk is not None and lost is not None, "retention never moved the log start past the commit"
        seconds, headroom, before = risk
        (row,) = before["partitions"]
        assert row["lost_records"] == 0 and row["retention_headroom"] > 0 and row["log_start_offset"] > 0
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


def _tp(topic: str):
    from kafka import TopicPartition

    return TopicPartition(topic, 0)


def _latest():
    from kafka.admin import OffsetSpec

    return OffsetSpec.LATEST

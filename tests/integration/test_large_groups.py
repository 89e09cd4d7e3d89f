"""A 10,000-member group on a 50,000-partition topic, from the collector's publisher to a
recommendation.

The members event (~2.3 MB of JSON) and the partitions event (~4 MB) are each several times Kafka's
default 1 MB message limit: the publisher sends them as parts, the real job reads them back from the
embedded broker and puts them together in its state, and a membership change is decided on the whole
group. The same run carries offsets next to 2**63-1 through Spark, which must arrive exact.
"""

from __future__ import annotations

import dataclasses
import json
import uuid

import pytest

from streaming.collector.publisher import Publisher
from streaming.config import Config
from streaming.contracts import event_parts
from streaming.contracts import events as ev
from streaming.contracts.tables import RECOMMENDATIONS, REJECTED
from streaming.job import query
from streaming.kafka_clients import factories as kafka_clients
from tests.integration.test_job import STEP, T0, job_config, rows

MEMBERS = 10_000
PARTITIONS = 50_000
TOPIC = "wide"
RACKS = "abc"
MAX_OFFSET = 2**63 - 1
FEED_BYTES = 16 * 1024 * 1024
"""The recommendation for this group names 50,000 partitions: its trigger feed message is several MB
too."""


def member(i: int) -> dict:
    # member i owns the partitions p with p % MEMBERS == i (5 each)
    return ev.member_entry(f"member-{i:05d}", [TOPIC],
                           [(TOPIC, p) for p in range(i % MEMBERS, PARTITIONS, MEMBERS)],
                           client_id=f"client-{i:05d}", host=f"/10.0.{i // 250}.{i % 250}",
                           rack=RACKS[i % 3])


def partition(p: int) -> dict:
    replicas = [p % 3, (p + 1) % 3, (p + 2) % 3]
    return ev.partition_entry(p, replicas[0], replicas, [RACKS[r] for r in replicas])


def metadata_values(cfg: Config) -> list[bytes]:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(cfg.kafka.metadata_topic,
                             bootstrap_servers=cfg.kafka.bootstrap_servers,
                             auto_offset_reset="earliest", consumer_timeout_ms=5000, group_id=None)
    try:
        return [m.value for m in consumer]
    finally:
        consumer.close()


@pytest.fixture(scope="module")
def large_run(spark, cfg):
    tag = uuid.uuid4().hex[:6]
    base = job_config(cfg, f"large{tag}")
    jc = dataclasses.replace(base, kafka=dataclasses.replace(
        base.kafka, options=base.kafka.options | {"max.request.size": FEED_BYTES}))
    kafka_clients.ensure_topics(jc, {jc.kafka.trigger_topic: {
        "num_partitions": 1, "replication_factor": -1,
        "configs": {"cleanup.policy": "compact", "max.message.bytes": str(FEED_BYTES)}}})
    query.ensure_topics(jc)

    group = "large"
    baseline = [ev.members_event(T0, group, 1, "range", [member(i) for i in range(MEMBERS)]),
                ev.partitions_event(T0, group, TOPIC, [partition(p) for p in range(PARTITIONS)])]
    # member-00000 leaves, member-10000 joins (taking over its partitions, as a rebalance would)
    changed = ev.members_event(T0 + STEP, group, 2, "range",
                               [member(i) for i in range(1, MEMBERS + 1)])
    # the member owning partition 7 has the only lag: 12,345 records just below the largest offset
    lag = ev.lag_event(T0 + STEP, group, TOPIC, 7, MAX_OFFSET - 12_345, MAX_OFFSET)
    # a poll of one partition of 50,000 is never whole: the next one closes it
    closing = ev.lag_event(T0 + 2 * STEP, group, TOPIC, 7, MAX_OFFSET - 12_345, MAX_OFFSET)
    publisher = Publisher(jc)
    try:
        sizes = [len(ev.encode(e)[1]) for e in [*baseline, changed]]
        sent = publisher.publish(baseline) + publisher.publish([changed, lag, closing])
    finally:
        publisher.close()
    batches = query.run(spark, jc, available_now=True)
    return jc, sizes, sent, batches, rows(spark, jc, RECOMMENDATIONS), rows(spark, jc, REJECTED)


def test_large_events_travel_as_parts_under_the_message_limit(large_run):
    jc, sizes, sent, *_ = large_run
    assert min(sizes) > 2 * 1024 * 1024  # each event is beyond Kafka's 1 MB default
    values = metadata_values(jc)
    assert len(values) == sent - 2 > 3  # the lag events went to the lag topic
    assert max(len(v) for v in values) <= event_parts.MAX_PART_BYTES
    parts = [json.loads(v) for v in values]
    assert {p["parts"] for p in parts if p["type"] == ev.PARTITIONS} \
        == {sum(p["type"] == ev.PARTITIONS for p in parts)}


def test_the_whole_group_is_decided_on(large_run):
    _, _, _, batches, recs, rejected = large_run
    assert rejected == []
    assert len(recs) == 1, [(r["group"], r["triggers"]) for r in recs]
    rec = recs[0]
    assert rec["triggers"] == ["membership_change"]
    details = json.loads(rec["trigger_details"])["membership_change"]
    assert details == {"joined": ["client:client-10000@/10.0.40.0"],
                       "left": ["client:client-00000@/10.0.0.0"]}
    assigned = [(p.topic, p.partition) for m in rec["assignment"] for p in m["partitions"]]
    assert len(assigned) == PARTITIONS and set(assigned) == {(TOPIC, p) for p in range(PARTITIONS)}
    assert {m["member_id"] for m in rec["assignment"]} == {f"member-{i:05d}"
                                                           for i in range(1, MEMBERS + 1)}
    # exact int64 offsets end to end: float64 would have made this lag a multiple of 2,048
    assert rec["before_max_lag"] == 12_345
    assert sum(b["recommendations"] for b in batches) == 1

"""The real feed reader thread on the real broker survives every kind of malformed trigger-feed
message."""

from __future__ import annotations

import json

import pytest

from streaming.apply.feed import RecommendationFeed
from streaming.contracts.recommendation import recommendation_id
from streaming.kafka_clients import factories as kafka_clients
from tests.unit.streaming.apply.test_feed_reader import MALFORMED, rec

pytestmark = pytest.mark.integration


def test_reader_thread_skips_malformed_messages_and_keeps_reading(cfg) -> None:
    topic = "feed-fuzz"
    kafka_clients.ensure_topics(cfg, {topic: {"num_partitions": 2, "replication_factor": 1,
                                              "configs": {"cleanup.policy": "compact"}}})
    producer = kafka_clients.producer(cfg, max_request_size=4 * 1024 * 1024)
    try:
        def send(value, key: bytes | None = b"g") -> None:
            raw = value if isinstance(value, bytes) else value.encode()
            producer.send(topic, key=key, value=raw).get(timeout=30)

        for raw in MALFORMED.values():
            send(raw)
        send(json.dumps(rec(version=2)), key=b"other")  # key is not the group
        send(json.dumps(rec(version=1)))
        send(json.dumps(rec(version=900_000)))  # a forged jump
        send(json.dumps(rec(version=3)))
        with RecommendationFeed(cfg.kafka, topic=topic) as feed:
            assert feed.wait_ready(60)
            latest = feed.latest("g")
            assert latest is not None and latest["version"] == 3
            assert latest["recommendation_id"] == recommendation_id("g", 3)
            assert feed.rejected == len(MALFORMED) + 2
            # still alive and reading after all of it
            send(json.dumps(rec(version=4)))
            for _ in range(100):
                if feed.latest("g")["version"] == 4:
                    break
                feed._stop.wait(0.2)
            assert feed.latest("g")["version"] == 4
            assert feed.failure is None and feed._thread is not None and feed._thread.is_alive()
    finally:
        producer.close()

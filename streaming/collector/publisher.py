"""Writing events to Kafka with kafka-python: key = group id, JSON value, topic by event type."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from streaming import events, kafka_clients
from streaming.config import Config

log = logging.getLogger(__name__)

def ensure_event_topics(cfg: Config) -> None:
    """Create the event topics (and the trigger feed) when they do not exist."""
    kafka_clients.ensure_rebalancer_topics(cfg)


class Publisher:
    """Sends events and waits for them: :meth:`publish` returns once every event is acknowledged, or raises."""

    def __init__(self, cfg: Config, timeout_s: float = 30.0) -> None:
        self.cfg = cfg
        self.timeout_s = timeout_s
        self._producer = kafka_clients.producer(
            cfg, linger_ms=20, request_timeout_ms=10000,
            delivery_timeout_ms=int(timeout_s * 1000), max_block_ms=10000, reconnect_backoff_max_ms=2000)

    def publish(self, batch: Sequence[dict[str, Any]]) -> int:
        futures = []
        for event in batch:
            key, value = events.encode(event)
            topic = events.topic_for(event, self.cfg.kafka.lag_topic, self.cfg.kafka.metadata_topic)
            futures.append(self._producer.send(topic, key=key, value=value))
        self._producer.flush(timeout=self.timeout_s)
        for f in futures:
            f.get(timeout=self.timeout_s)  # raises the delivery error, if any
        return len(futures)

    def __call__(self, batch: Sequence[dict[str, Any]]) -> int:
        return self.publish(batch)

    def close(self) -> None:
        try:
            self._producer.close(timeout=5)
        except Exception:
            log.debug("closing the producer failed", exc_info=True)

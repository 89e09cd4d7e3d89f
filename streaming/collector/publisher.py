"""Writing events to Kafka with kafka-python: key = group id, JSON value, topic by event type.

A metadata event larger than ``max_event_bytes`` (a members event of thousands of members, a
partitions event of tens of thousands of partitions) goes out as parts
(:mod:`streaming.contracts.event_parts`), all under the group's key, so they land on one partition
in order; the job puts them together again. The default of 512 KiB stays well inside Kafka's 1 MB
defaults (the broker's ``message.max.bytes``, the producer's ``max_request_size``), so no topic or
broker setting has to change.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from streaming.config import Config
from streaming.contracts import event_parts, events
from streaming.kafka_clients import factories as kafka_clients

log = logging.getLogger(__name__)

def ensure_event_topics(cfg: Config) -> None:
    """Create the event topics (and the trigger feed) when they do not exist."""
    kafka_clients.ensure_rebalancer_topics(cfg)


class Publisher:
    """Sends events and waits for them: :meth:`publish` returns once every event is acknowledged, or
    raises."""

    def __init__(self, cfg: Config, timeout_s: float = 30.0,
                 max_event_bytes: int = event_parts.MAX_PART_BYTES) -> None:
        self.cfg = cfg
        self.timeout_s = timeout_s
        self.max_event_bytes = max_event_bytes
        self._producer = kafka_clients.producer(
            cfg, linger_ms=20, request_timeout_ms=10000,
            delivery_timeout_ms=int(timeout_s * 1000), max_block_ms=10000,
            reconnect_backoff_max_ms=2000)

    def publish(self, batch: Sequence[dict[str, Any]]) -> int:
        """Send ``batch`` and wait for every acknowledgement; returns the number of messages
        sent. The metadata events go first and are acknowledged before any lag event is sent:
        the job decides on a poll once its lag readings are all in (:mod:`streaming.state.whole`),
        so a members event of the same poll must be readable by then, or the decision is made
        without it, and differently from one made with it (two topics, read by one micro-batch
        each time: the lag could otherwise come first)."""
        lag_topic, meta_topic = self.cfg.kafka.lag_topic, self.cfg.kafka.metadata_topic
        routed = [(events.topic_for(e, lag_topic, meta_topic), e) for e in batch]
        return (self._send([(t, e) for t, e in routed if t != lag_topic])
                + self._send([(t, e) for t, e in routed if t == lag_topic]))

    def _send(self, batch: Sequence[tuple[str, dict[str, Any]]]) -> int:
        """Send each (topic, event), then wait for every acknowledgement."""
        if not batch:
            return 0
        futures = []
        for topic, event in batch:
            for piece in event_parts.split(event, self.max_event_bytes):
                key, value = events.encode(piece)
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

"""Send event dicts (and raw records) to the rebalancer's topics: how tests and benchmarks feed the
job."""

from __future__ import annotations

from collections.abc import Iterable

from streaming.config import Config
from streaming.contracts import events as ev
from streaming.kafka_clients import factories as kafka_clients


def produce(cfg: Config, events: Iterable[dict],
            raw: Iterable[tuple[bytes | None, bytes]] = ()) -> None:
    """Each event to its topic (lag or metadata) keyed by its group; each ``(key, value)`` of
    ``raw`` as it is to the metadata topic. The topics are created first when missing; returns once
    everything is acked."""
    kafka_clients.ensure_rebalancer_topics(cfg)
    prod = kafka_clients.producer(cfg)
    try:
        for e in events:
            event_key, event_value = ev.encode(e)
            prod.send(ev.topic_for(e, cfg.kafka.lag_topic, cfg.kafka.metadata_topic), key=event_key,
                      value=event_value)
        for key, value in raw:
            prod.send(cfg.kafka.metadata_topic, key=key, value=value)
        prod.flush(60)
    finally:
        prod.close()

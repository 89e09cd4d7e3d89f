"""A live cluster for a configuration: the configured one, or an embedded one when it says
``embedded``."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator

from streaming.config import EMBEDDED, Config
from streaming.errors import KafkaClusterError


@contextlib.contextmanager
def kafka_for(cfg: Config) -> Iterator[Config]:
    """Yield ``cfg`` pointing at a live cluster: an embedded one started for the block when the
    configuration says ``embedded``, else the configured one unchanged."""
    if cfg.kafka.bootstrap_servers != EMBEDDED:
        yield cfg
        return
    from streaming.embedded.cluster import KafkaCluster

    brokers = cfg.kafka.embedded_brokers
    if brokers not in (1, 3):
        raise KafkaClusterError(f"kafka.embedded_brokers must be 1 or 3, got {brokers}")
    cluster = KafkaCluster(brokers=brokers)
    print(f"Starting an embedded Kafka cluster ({brokers} broker(s)) ...", flush=True)
    with cluster:
        live = dataclasses.replace(cfg.kafka, bootstrap_servers=cluster.bootstrap_servers)
        yield dataclasses.replace(cfg, kafka=live)

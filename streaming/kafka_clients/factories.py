"""kafka-python clients built from the configuration, and the embedded-cluster switch.

The configuration names Kafka settings the Java way (``security.protocol``), as Spark's ``kafka.*``
options do; :mod:`streaming.kafka_clients.properties` translates them for kafka-python, completely:
a setting it cannot use is an error naming the key, except the Java-only ones it lists, which go to
Spark alone.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from typing import Any

from streaming.config import Config, KafkaSettings
from streaming.errors import KafkaUnreachableError
from streaming.kafka_clients.retry import retry_call

log = logging.getLogger(__name__)


def python_client_options(cfg: Config, client: str) -> dict[str, Any]:
    """``cfg.kafka`` as keyword arguments for kafka-python's ``client`` (see
    :func:`client_options`)."""
    return client_options(cfg.kafka, client)


def client_options(kafka: KafkaSettings, client: str) -> dict[str, Any]:
    """The Kafka settings as keyword arguments for kafka-python's ``client`` (admin, producer,
    consumer), values typed as kafka-python wants them (``--conf`` values arrive as strings).

    Secured settings are checked against the broker the first time (one TLS handshake and SASL
    login, bounded): wrong credentials or an untrusted certificate raise KafkaSecurityError at
    once."""
    from streaming.kafka_clients.properties import to_kafka_python
    from streaming.kafka_clients.security import (
        check_access,
        install_log_redaction,
        register_secret,
        register_secrets,
    )

    register_secrets(kafka.options)  # from here on, kafka and py4j log records show them as ***
    opts = to_kafka_python({**kafka.options, "bootstrap.servers": kafka.bootstrap_servers}, client)
    for key in ("sasl_plain_password", "ssl_password"):
        register_secret(opts.get(key))
    install_log_redaction()
    check_access(opts)
    return opts


def admin(cfg: Config, **extra: Any):
    from kafka import KafkaAdminClient

    # the configuration's own settings win over the caller's defaults
    return KafkaAdminClient(client_id="rebalancer-admin",
                            **(extra | python_client_options(cfg, "admin")))


def producer(cfg: Config, **extra: Any):
    from kafka import KafkaProducer

    return KafkaProducer(client_id="rebalancer-producer",
                         **(python_client_options(cfg, "producer") | extra))


def ensure_topics(cfg: Config, topics: dict[str, dict[str, Any]], timeout_s: float = 30.0,
                  bootstrap_timeout_s: float = 30.0) -> None:
    """Create the topics that do not exist yet and wait until every broker sees every partition of
    each with a leader.

    ``topics``: name -> {num_partitions, replication_factor, configs}. Waiting matters: a client
    that subscribes before the metadata has spread sees no partitions, and kafka-python refreshes
    metadata only every ``metadata_max_age_ms`` (5 minutes by default). Every broker, not one: KRaft
    brokers apply the controller's records each at its own pace, and a client asks whichever broker
    is least loaded."""
    from kafka.errors import TopicAlreadyExistsError

    client = admin(cfg, bootstrap_timeout_ms=int(bootstrap_timeout_s * 1000))
    try:
        existing = set(client.list_topics())
        missing = {name: spec for name, spec in topics.items() if name not in existing}
        if not missing:
            return
        with contextlib.suppress(TopicAlreadyExistsError):
            client.create_topics(missing)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with contextlib.suppress(Exception):
                if client._manager.run(_seen_by_every_broker, client, missing):
                    return
            time.sleep(0.2)
        log.warning("topics %s were created but not every broker sees a leader for every partition "
                    "after %.0fs", sorted(missing), timeout_s)
    finally:
        client.close()


async def _seen_by_every_broker(client: Any, topics: dict[str, dict[str, Any]]) -> bool:
    """Whether each broker's own metadata has every partition of ``topics`` with a leader."""
    from kafka.protocol.metadata import MetadataRequest

    request = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=t) for t in topics],
                              allow_auto_topic_creation=False)
    # kafka-python's admin has no public per-broker metadata call; its send to a node id is what its
    # own calls use (as streaming.collector.kip848 does for group coordinators)
    for broker in client._manager.cluster.brokers():
        response = (await client._manager.send(request, node_id=broker.node_id)).to_dict()
        ready = {
            t["name"] for t in response["topics"]
            if t.get("error_code", 0) == 0
            and len(t["partitions"]) == topics[t["name"]]["num_partitions"]
            and all(p["leader_id"] is not None and p["leader_id"] >= 0 for p in t["partitions"])
        }
        if ready < set(topics):
            return False
    return True


EVENT_PARTITIONS = 6
FEED_MAX_MESSAGE_BYTES = 16 * 1024 * 1024
"""The trigger feed topic's message limit: one recommendation of a very large group is a few MB
(compressed less); the job's feed sink sends up to this much
(streaming.job.sinks.FEED_PRODUCER_DEFAULTS)."""


MEMBER_LOAD_RETENTION_MS = 3_600_000
"""An hour of the members' load reports: the collector reads the last half minute of them."""


def ensure_rebalancer_topics(cfg: Config) -> None:
    """The lag, metadata and member-load topics and the compacted trigger feed, created if missing,
    one definition for every process that may start first (collector, job, demo). Replication is
    the broker's default.

    This is where a process first touches Kafka: an unreachable cluster is retried
    ``job.start_retries`` times with exponential backoff (one warning line each), then ends in
    :class:`KafkaUnreachableError`."""
    from kafka.errors import KafkaError

    topics: dict[str, dict[str, Any]] = {
        cfg.kafka.lag_topic: {"num_partitions": EVENT_PARTITIONS, "replication_factor": -1},
        cfg.kafka.metadata_topic: {"num_partitions": EVENT_PARTITIONS, "replication_factor": -1},
        cfg.kafka.trigger_topic: {"num_partitions": 1, "replication_factor": -1,
                                  "configs": {"cleanup.policy": "compact",
                                              "max.message.bytes": str(FEED_MAX_MESSAGE_BYTES)}},
        # only the last half minute of reports is read (streaming.collector.member_load.FRESH_S)
        cfg.kafka.member_load_topic: {"num_partitions": EVENT_PARTITIONS, "replication_factor": -1,
                                      "configs": {"retention.ms": str(MEMBER_LOAD_RETENTION_MS)}},
    }
    where = cfg.kafka.bootstrap_servers
    with _quiet_kafka_logs():
        retry_call(
            lambda: ensure_topics(cfg, topics, bootstrap_timeout_s=cfg.job.start_timeout_s),
            attempts=cfg.job.start_retries, base_s=cfg.job.retry_backoff_s,
            max_s=cfg.job.retry_backoff_max_s, retry_on=(KafkaError, OSError),
            describe=lambda e, wait, k, n: (f"Kafka at {where} unreachable ({type(e).__name__}); "
                                            f"retrying in {wait:g}s (attempt {k}/{n})"),
            give_up=lambda e, n: KafkaUnreachableError(
                f"Kafka at {where} unreachable after {n} attempts "
                f"({str(e)[:200] or type(e).__name__}); "
                "check kafka.bootstrap_servers and that the brokers are up"),
        )


@contextlib.contextmanager
def _quiet_kafka_logs() -> Iterator[None]:
    """kafka-python logs every refused connection at ERROR; while we retry, our one line per attempt
    says it (with -v, i.e. the kafka logger at DEBUG, everything still shows)."""
    logger = logging.getLogger("kafka")
    level = logger.level
    if level != logging.DEBUG:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)

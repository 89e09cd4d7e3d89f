"""One real Kafka cluster (three KRaft brokers on racks a, b, c) and one SparkSession for the
session."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator

import pytest

from streaming import config, jvm
from streaming.dev import SUITE_BROKERS
from streaming.embedded.cluster import KafkaCluster
from streaming.embedded.detached import alive as _alive


@pytest.fixture(scope="session")
def kafka_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    jvm.resolve()
    cluster = KafkaCluster(brokers=3, base_dir=tmp_path_factory.mktemp("kafka"),
                           extra_config=SUITE_BROKERS)
    cluster.start()
    pids = cluster.pids()
    _SHARED.append(cluster)
    yield cluster
    _SHARED.clear()
    cluster.stop()
    left = [p for p in pids if _alive(p)]
    assert not left, f"Kafka JVMs still running after stop: {left}"


_SHARED: list[KafkaCluster] = []  # the session's cluster while it runs


@pytest.fixture(scope="module", autouse=True)
def _shared_topics_deleted_after_each_module() -> Iterator[None]:
    """Each test module's topics on the shared cluster go when the module ends (they are its own: a
    name is never shared between modules). Left in place they keep the brokers busy for the rest of
    the run, idle or not: 3 brokers with a run's ~300 topics use 0.35 of a core, 0.08 with none."""
    before = _topics(_SHARED[0]) if _SHARED else set()
    yield
    if _SHARED:
        _delete_topics(_SHARED[0], _topics(_SHARED[0]) - before)


def _topics(cluster: KafkaCluster) -> set[str]:
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, client_id="tests-cleanup")
    try:
        return {t for t in admin.list_topics() if not t.startswith("__")}
    finally:
        admin.close()


def _delete_topics(cluster: KafkaCluster, names: set[str]) -> None:
    from kafka import KafkaAdminClient
    from kafka.errors import UnknownTopicOrPartitionError

    if not names:
        return
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, client_id="tests-cleanup")
    try:
        admin.delete_topics(sorted(names), timeout_ms=30_000)
    except UnknownTopicOrPartitionError:
        pass  # deleted meanwhile by the test's own clean-up
    finally:
        admin.close()


@pytest.fixture(scope="session")
def cfg(kafka_cluster: KafkaCluster, tmp_path_factory: pytest.TempPathFactory) -> config.Config:
    base = config.load()
    work = tmp_path_factory.mktemp("work")
    session = dataclasses.replace(
        base,
        kafka=dataclasses.replace(base.kafka, bootstrap_servers=kafka_cluster.bootstrap_servers),
        paths=config.PathSettings(checkpoints=str(work / "checkpoints"),
                                  tables=str(work / "tables")),
        spark=dataclasses.replace(base.spark, master="local[2]", conf={
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
        }),
        # the tests check recommendations on the feed and applied by the helpers (the default,
        # observe, publishes nothing); tests of the other modes set theirs
        policy=dataclasses.replace(base.policy, mode=config.AUTO),
    )
    _map_class_archive(session, tmp_path_factory.mktemp("cds"))
    return session


def _map_class_archive(cfg: config.Config, work) -> None:
    """Every Spark driver started from here on (the session's, each job's child process) maps the
    class archive (:mod:`.class_archive`), made on the first run on a machine."""
    from . import class_archive

    archive = class_archive.ensure(cfg, work)
    if archive is not None:
        os.environ["SPARK_SUBMIT_OPTS"] = " ".join(
            o for o in (os.environ.get("SPARK_SUBMIT_OPTS"), class_archive.options(archive)) if o)


@pytest.fixture(scope="session")
def spark(cfg: config.Config):
    from streaming.spark_session import get_spark

    session = get_spark(cfg)
    yield session
    session.stop()


@pytest.fixture
def state_file(tmp_path, monkeypatch) -> str:
    """Point `rebalancer kafka up/down` at a state file of the test's own."""
    path = str(tmp_path / "cluster.json")
    monkeypatch.setenv("REBALANCER_KAFKA_STATE", path)
    return path


def env_with(**extra: str) -> dict[str, str]:
    return {**os.environ, **extra}


def topic_with_records(cfg: config.Config, name: str, partitions: int, records: int) -> None:
    """Topic ``name`` with ``records`` small records spread round-robin over its ``partitions``."""
    from streaming.kafka_clients import factories as kafka_clients

    kafka_clients.ensure_topics(cfg, {name: {"num_partitions": partitions,
                                             "replication_factor": 1}})
    producer = kafka_clients.producer(cfg)
    for i in range(records):
        producer.send(name, value=b"v", partition=i % partitions)
    producer.flush()
    producer.close()


def commit_offsets(admin, group: str, offsets: dict[tuple[str, int], int],
                   timeout_s: float = 60.0) -> None:
    """Commit ``offsets`` ((topic, partition) -> offset) for ``group``, retried while any
    partition's commit fails with a retriable error (a fresh cluster loads ``__consumer_offsets``
    for a few seconds; a broker may not know a new topic yet). OffsetCommit reports every error per
    partition, and kafka-python's admin returns them rather than raising: a commit that is not
    checked can fail silently, leaving the group missing."""
    import time

    from kafka import TopicPartition
    from kafka.errors import (
        CoordinatorLoadInProgressError,
        CoordinatorNotAvailableError,
        NoError,
        NotCoordinatorError,
    )
    from kafka.structs import OffsetAndMetadata

    wanted = {TopicPartition(t, p): OffsetAndMetadata(o, "", -1) for (t, p), o in offsets.items()}
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            failed = {tp: e for tp, e in admin.alter_group_offsets(group, wanted).items()
                      if e is not NoError}
        except (CoordinatorNotAvailableError, NotCoordinatorError,
                CoordinatorLoadInProgressError) as e:
            failed = {None: type(e)}
        if not failed:
            return
        if time.monotonic() > deadline or not all(getattr(e, "retriable", False)
                                                  for e in failed.values()):
            raise AssertionError(f"committing offsets of group {group} failed: {failed}")
        time.sleep(0.5)


@pytest.fixture(scope="module")
def assignor_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    """A one-broker cluster that loads the KIP-848 server-side assignor
    (``rebalancer kafka up --server-assignor``'s cluster, clients/java built first), one per test
    module that asks for it."""
    from streaming.embedded.broker_config import ServerAssignorCluster

    from .java_client import build_jar_once

    jvm.resolve()
    cluster = ServerAssignorCluster(brokers=1,
                                    base_dir=tmp_path_factory.mktemp("kafka-server-assignor"),
                                    jar=build_jar_once())
    cluster.start()
    yield cluster
    cluster.stop()


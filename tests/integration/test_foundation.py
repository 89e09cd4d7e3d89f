"""The real stack fits together: Kafka broker, Spark's Kafka source, Delta, kafka-python admin."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from pyspark import accumulators

from streaming import spark_session
from streaming.dev import smoke
from streaming.embedded.cluster import KafkaCluster
from streaming.embedded.detached import alive as _alive
from streaming.errors import KafkaClusterError
from streaming.kafka_clients import factories as kafka_clients

from .conftest import env_with


def test_records_go_through_kafka_spark_and_delta_unchanged(spark, cfg):
    result = smoke.run(spark, cfg, n=300)

    assert result.produced == 300
    assert result.written == 300
    assert result.matching, "the Delta table differs from what was produced"
    history = spark.sql(f"DESCRIBE HISTORY delta.`{result.table}`").collect()
    assert {r["operation"] for r in history} == {"STREAMING UPDATE"}


def test_a_stranger_at_the_accumulator_port_costs_one_warning_line_not_a_traceback(
        spark, capfd, caplog):
    # PySpark's accumulator server listens on a loopback port any local process can reach: a
    # connection without its token printed a traceback into a job's log (a stop test's "no
    # traceback" failed in a suite run). The server serves one connection at a time, and once the
    # JVM's (kept open) is in, a stranger waits unserved: it is served only at a session's start,
    # so this one is PySpark's server as a new session starts it, given get_spark's error handler.
    server = accumulators._start_update_server("a" * 32, False)
    try:
        spark_session.refuse_strangers_quietly(SimpleNamespace(_accumulatorServer=server))
        with socket.create_connection(server.server_address, timeout=10) as stranger:
            stranger.sendall(b"x" * 32)
            deadline = time.monotonic() + 10
            while "accumulator server" not in caplog.text and time.monotonic() < deadline:
                time.sleep(0.05)
    finally:
        server.shutdown()
    assert "refused a connection to PySpark's accumulator server" in caplog.text
    assert "Traceback" not in capfd.readouterr().err
    # and the suite's session's own server, given the same handler by get_spark, still serves
    # updates from a Python worker
    total = spark.sparkContext.accumulator(0)
    spark.sparkContext.parallelize(range(100), 2).foreach(lambda i: total.add(i))
    assert total.value == 4950


def test_replica_racks_come_back_through_the_admin_api(cfg, kafka_cluster):
    topic = f"racks-{time.monotonic_ns()}"
    kafka_clients.ensure_topics(cfg, {topic: {"num_partitions": 6, "replication_factor": 2}})
    admin = kafka_clients.admin(cfg)
    try:
        racks = {b["broker_id"]: b["rack"] for b in admin.describe_cluster()["brokers"]}
        (described,) = admin.describe_topics([topic])
    finally:
        admin.close()

    assert sorted(racks.values()) == ["a", "b", "c"]
    partitions = sorted(described["partitions"], key=lambda p: p["partition_index"])
    assert [p["partition_index"] for p in partitions] == list(range(6))
    for p in partitions:
        replica_racks = [racks[r] for r in p["replica_nodes"]]
        assert len(replica_racks) == 2
        # Kafka places the replicas of a partition on distinct racks when it can
        assert len(set(replica_racks)) == 2, replica_racks
    # and spreads leaders over every rack
    assert {racks[p["leader_id"]] for p in partitions} == {"a", "b", "c"}


def _rebalancer(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "streaming.cli", *args], capture_output=True,
                          text=True, timeout=timeout, env=env_with())


def test_kafka_up_prints_bootstrap_and_down_leaves_no_jvm(state_file):
    up = _rebalancer("kafka", "up")
    assert up.returncode == 0, up.stderr
    bootstrap = up.stdout.strip().splitlines()[-1]
    host, port = bootstrap.split(":")
    pids = json.loads(Path(state_file).read_text())["pids"]
    try:
        assert len(pids) == 1 and all(_alive(p) for p in pids)
        with socket.create_connection((host, int(port)), timeout=5):
            pass
        again = _rebalancer("kafka", "up")
        assert again.returncode == 1 and "already running" in again.stderr
    finally:
        down = _rebalancer("kafka", "down")
    assert down.returncode == 0, down.stderr
    assert "stopped 1 broker" in down.stdout
    assert not any(_alive(p) for p in pids), "a Kafka JVM survived `kafka down`"
    assert not Path(state_file).exists()


def test_a_cluster_ends_with_the_process_that_started_it_even_one_killed(tmp_path):
    """A test run or benchmark killed mid-way (SIGKILL: no atexit, no ``finally``) leaves no broker
    running to load what runs next on the machine."""
    code = ("import time; from streaming.embedded.cluster import KafkaCluster; "
            f"c = KafkaCluster(brokers=1, base_dir={str(tmp_path / 'kafka')!r}); c.start(); "
            "print(*c.pids(), flush=True); time.sleep(600)")
    owner = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                             env=env_with())
    try:
        assert owner.stdout is not None
        pids = [int(p) for p in owner.stdout.readline().split()]
        assert pids and all(_alive(p) for p in pids), pids
    finally:
        owner.kill()
        owner.wait(30)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.2)
    assert not any(_alive(p) for p in pids), "a broker outlived the process that started it"


def test_port_in_use_is_named(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        cluster = KafkaCluster(brokers=1, base_dir=tmp_path, ports=[port])
        with pytest.raises(KafkaClusterError, match=f"port {port} .* already in use"):
            cluster.start()
    assert cluster.pids() == []


def test_broker_that_does_not_come_up_names_its_log_and_is_cleaned_up(tmp_path):
    # a listener on a port the broker may not bind makes the broker die at start-up
    cluster = KafkaCluster(brokers=1, base_dir=tmp_path, extra_config={"num.io.threads": "0"})
    with pytest.raises(KafkaClusterError) as err:
        cluster.start(timeout_s=90)
    assert err.value.log_file and Path(err.value.log_file).exists(), str(err.value)
    assert "see " in str(err.value)
    assert not any(_alive(p) for p in cluster.pids())

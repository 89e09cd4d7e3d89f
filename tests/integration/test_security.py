"""The loop on a secured cluster: SASL/SCRAM-SHA-512 over TLS, StandardAuthorizer ACLs, secrets from
files.

One broker of its own (``EmbeddedSecurity``). Every client reads its settings the way
docs/security.md shows: a Kafka-style ``client.properties`` per principal whose password is a
``${ENV}`` reference, passed with ``--command-config`` (or ``config.load(command_config=...)``
in-process). The collector runs as the CLI (``-v``, DEBUG), the streaming job and the workload group
in this process at DEBUG logging; afterwards no password may appear in any log line, process argv,
Delta table or topic.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from streaming import config, jvm
from streaming.apply.feed import RecommendationFeed
from streaming.dev.demo.loop import GroupOptions, GroupRun, loop_config, stop_query
from streaming.embedded.cluster import KafkaCluster
from streaming.embedded.detached import alive as _alive
from streaming.embedded.sasl_ssl import PRINCIPALS, EmbeddedSecurity
from streaming.errors import ConfigError
from streaming.kafka_clients import factories as kafka_clients
from streaming.kafka_clients.security import KafkaSecurityError
from streaming.paths import PROJECT_ROOT

pytestmark = pytest.mark.integration

APP_PREFIX = "sec-"


def env_name(principal: str) -> str:
    return f"KAFKA_PASSWORD_{principal.upper()}"


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[tuple[KafkaCluster, EmbeddedSecurity]]:
    jvm.resolve()
    base = tmp_path_factory.mktemp("secured-kafka")
    security = EmbeddedSecurity(base / "security", app_prefixes=(APP_PREFIX,))
    cluster = KafkaCluster(brokers=1, base_dir=base, security=security)
    cluster.start()
    pids = cluster.pids()
    yield cluster, security
    cluster.stop()
    assert not [p for p in pids if _alive(p)]


@pytest.fixture(scope="module")
def client_files(secured, tmp_path_factory) -> dict[str, Path]:
    """docs/security.md's client.properties, one per principal: the password is
    ${KAFKA_PASSWORD_<PRINCIPAL>}."""
    cluster, security = secured
    folder = tmp_path_factory.mktemp("clients")
    files = {}
    for principal in PRINCIPALS:
        path = folder / f"{principal}.properties"
        path.write_text(
            f"bootstrap.servers={cluster.bootstrap_servers}\n"
            "security.protocol=SASL_SSL\n"
            "sasl.mechanism=SCRAM-SHA-512\n"
            "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
            f"    username=\"{principal}\" password=\"${{{env_name(principal)}}}\";\n"
            "ssl.truststore.type=PEM\n"
            f"ssl.truststore.location={security.ca_file}\n")
        files[principal] = path
    return files


@pytest.fixture
def secret_env(secured, monkeypatch) -> dict[str, str]:
    _, security = secured
    env = {env_name(p): security.passwords[p] for p in PRINCIPALS}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return env


def load(client_files: dict[str, Path], principal: str, *overrides: str) -> config.Config:
    return config.load(None, ["spark.master=local[2]", "spark.sql.shuffle.partitions=2",
                              *overrides],
                       command_config=client_files[principal])


def test_embedded_cluster_writes_private_client_files_that_work(secured, secret_env) -> None:
    cluster, security = secured
    for path in security.client_files().values():
        assert os.stat(path).st_mode & 0o777 == 0o600
        cfg = config.load(None, command_config=path)
        assert cfg.kafka.bootstrap_servers == cluster.bootstrap_servers
        client = kafka_clients.admin(cfg)
        client.close()
    assert not (security.directory / "format.args").exists()
    for node in cluster.nodes:
        assert os.stat(node.data_dir.parent / "server.properties").st_mode & 0o777 == 0o600


def test_kafka_up_sasl_ssl_prints_a_working_client_file_per_principal(state_file) -> None:
    def rebalancer(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "streaming.cli", *args], cwd=PROJECT_ROOT,
                              capture_output=True, text=True, timeout=180, env={**os.environ})

    up = rebalancer("kafka", "up", "--security", "sasl-ssl")
    try:
        assert up.returncode == 0, up.stderr[-2000:]
        bootstrap = next(ln for ln in up.stdout.splitlines()
                         if re.fullmatch(r"127\.0\.0\.1:\d+", ln))
        files = dict(re.findall(r"^\s+(\w+): --command-config (\S+)$", up.stdout, re.MULTILINE))
        assert set(files) == set(PRINCIPALS)
        for path in files.values():
            assert os.stat(path).st_mode & 0o777 == 0o600
        cfg = config.load(None, command_config=files["collector"])
        assert cfg.kafka.bootstrap_servers == bootstrap
        kafka_clients.admin(cfg).close()
    finally:
        down = rebalancer("kafka", "down")
    assert down.returncode == 0 and "stopped 1 broker" in down.stdout, down.stderr


def test_consumer_principal_cannot_write_the_feed(client_files, secret_env) -> None:
    from kafka.errors import TopicAuthorizationFailedError

    job = load(client_files, "rebalancer")
    kafka_clients.ensure_rebalancer_topics(job)
    producer = kafka_clients.producer(load(client_files, "consumer"), retries=0)
    try:
        with pytest.raises(TopicAuthorizationFailedError):
            producer.send(job.kafka.trigger_topic, key=b"g", value=b"{}").get(timeout=20)
    finally:
        producer.close()


def test_wrong_password_and_unknown_ca_fail_at_once_naming_the_cause(
        secured, client_files, secret_env, tmp_path) -> None:
    # the CLI: one clear error, exit status 1, well before kafka-python's own 30 s bootstrap timeout
    env = {**os.environ, env_name("collector"): "not-the-password"}
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "streaming.cli", "collect", "--command-config",
                           str(client_files["collector"]), "--polls", "1"],
                          cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=120)
    took = time.monotonic() - t0
    assert done.returncode == 1, done.stderr[-2000:]
    errors = [ln for ln in done.stderr.splitlines() if ln.startswith("rebalancer collect: error:")]
    assert len(errors) == 1 \
        and "refused SASL SCRAM-SHA-512 authentication as 'collector'" in errors[0], \
        done.stderr[-2000:]
    assert "not-the-password" not in done.stderr + done.stdout
    assert took < 25, took

    # a CA the broker's certificate was not signed by
    other = EmbeddedSecurity(tmp_path / "other")
    other.make_certificates()
    cfg = load(client_files, "collector", f"kafka.ssl.truststore.location={other.ca_file}")
    t0 = time.monotonic()
    with pytest.raises(KafkaSecurityError, match="certificate is not "
                                                 "trusted.*ssl.truststore.location"):
        kafka_clients.ensure_rebalancer_topics(cfg)
    assert time.monotonic() - t0 < 15

    with pytest.raises(ConfigError, match=r"\$\{KAFKA_PASSWORD_NOBODY\}"):
        load(client_files, "collector", 'kafka.sasl.password=${KAFKA_PASSWORD_NOBODY}')


def test_loop_on_the_secured_cluster_leaks_no_secret(secured, client_files, secret_env, tmp_path,
                                                     caplog, capfd):
    from streaming.job import query as job_query
    from streaming.spark_session import get_spark

    caplog.set_level(logging.DEBUG)
    for name in ("kafka", "py4j", "streaming"):
        caplog.set_level(logging.DEBUG, logger=name)
    _, security = secured
    passwords = list(security.passwords.values())
    tag = uuid.uuid4().hex[:6]
    job = loop_config(load(client_files, "rebalancer"), str(tmp_path / "tables"),
                      str(tmp_path / "checkpoints"), cooldown_s=600, trigger_interval="2 seconds",
                      min_total_lag=300)
    app = load(client_files, "consumer")
    options = GroupOptions(group=f"{APP_PREFIX}app-{tag}", topic=f"{APP_PREFIX}orders-{tag}",
                           apply=True, consume_rate=120.0, min_rejoin_interval_s=3)
    spark = get_spark(job)
    collector_log = tmp_path / "collector.log"
    feed = RecommendationFeed(app.kafka).start()
    query = printer = run = collector = None
    try:
        query, printer = job_query.start(spark, job, checkpoint=job.checkpoint_path("secured"))
        assert feed.wait_ready(30)
        run = GroupRun(app, options, feed).start()
        assert run.wait_assigned(120)
        with open(collector_log, "w") as out:
            collector = subprocess.Popen(
                [sys.executable, "-m", "streaming.cli", "-v", "collect", "--command-config",
                 str(client_files["collector"]), "--interval", "2", "--groups", f"^{APP_PREFIX}",
                 "--offset-reset", "earliest"],
                cwd=PROJECT_ROOT, env=os.environ.copy(), stdout=out, stderr=subprocess.STDOUT)

        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not any(d.applied for d in run.decisions):
            assert collector.poll() is None, collector_log.read_text()[-3000:]
            time.sleep(0.5)
        applied = next((d for d in run.decisions if d.applied), None)
        assert applied is not None, f"no recommendation applied; feed: {feed.latest(options.group)}"
        assert "lag_skew" in feed.latest(options.group)["triggers"]

        # every process on the machine, now, while collector, job, brokers and consumers all run
        argv = [p.read_bytes() for p in Path("/proc").glob("[0-9]*/cmdline") if _readable(p)]
        assert collector.pid in [int(p.parent.name) for p in Path("/proc").glob("[0-9]*/cmdline")]
        assert not [a for a in argv if any(pw.encode() in a for pw in passwords)]
    finally:
        with contextlib.ExitStack() as cleanup:
            cleanup.callback(feed.stop)
            if run is not None:
                cleanup.callback(run.stop)
            if collector is not None:
                cleanup.callback(_stop_process, collector)
            if query is not None:
                cleanup.callback(spark.streams.removeListener, printer)
                cleanup.callback(stop_query, query)

    seen = {
        "log records": "\n".join(r.getMessage() for r in caplog.records),
        "stdout/stderr": "".join(capfd.readouterr()),
        "collector -v output": collector_log.read_text(errors="replace"),
        "Delta and checkpoint files": b"".join(f.read_bytes() for d in ("tables", "checkpoints")
                                               for f in (tmp_path / d).rglob("*")
                                               if f.is_file()).decode("latin-1"),
        "Delta rows": "\n".join(
            str(row) for t in ("recommendations", "rejected_events")
            for row in spark.read.format("delta").load(job.table_path(t)).collect()),
        "topics": _topic_contents(load(client_files, "admin"),
                                  [job.kafka.lag_topic, job.kafka.metadata_topic,
                                   job.kafka.trigger_topic]),
    }
    assert "DEBUG" in seen["collector -v output"] \
        and "Starting KafkaAdminClient" in seen["log records"]
    assert options.group in seen["Delta rows"] and options.group in seen["topics"]
    leaks = [where for where, text in seen.items() for pw in passwords if pw in text]
    assert not leaks, f"a password appears in: {leaks}"


def _readable(p: Path) -> bool:
    try:
        p.read_bytes()
        return True
    except OSError:  # the process ended meanwhile, or is not ours to read
        return False


def _stop_process(p: subprocess.Popen) -> None:
    p.terminate()
    try:
        p.wait(30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait(10)


def _topic_contents(cfg: config.Config, topics: list[str]) -> str:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(group_id=None, enable_auto_commit=False,
                             **kafka_clients.python_client_options(cfg, "consumer"))
    try:
        parts = [TopicPartition(t, p)
                 for t in topics for p in consumer.partitions_for_topic(t) or ()]
        consumer.assign(parts)
        consumer.seek_to_beginning()
        end = consumer.end_offsets(parts)
        chunks: list[str] = []
        deadline = time.monotonic() + 60
        while any(consumer.position(tp) < end[tp] for tp in parts) and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                chunks += [(r.key or b"").decode("latin-1") + (r.value or b"").decode("latin-1")
                           for r in records]
        return "\n".join(chunks)
    finally:
        consumer.close()

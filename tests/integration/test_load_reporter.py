"""The Java LoadReporter (clients/java): a real Java KafkaConsumer that only names it in
``metric.reporters`` reports its load on the member-load topic in the format of
:mod:`streaming.contracts.member_load`, with the settings it was given (its ``rebalancer.*`` keys
reach the reporter), busy while it works through a backlog and about as busy as its pace says once
it keeps up with a paced producer, and without a secret of its configuration in its output."""

from __future__ import annotations

import json
import statistics
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest

from streaming import jvm
from streaming.contracts import member_load
from streaming.dev.java_process import JavaProcess
from streaming.kafka_clients import factories as kafka_clients

from .java_client import build_assignor, compile_member, wait_for

PACE = 250
"""Records/s the consumer can process (GroupMember's -Drate: 4 ms a record)."""
BACKLOG = 1000
"""Records waiting when it starts: 4 s of work at PACE, busy all the time."""
RATE = 50
"""Records/s produced from its start on: once the backlog is gone it is busy 4 ms in every 20."""

LOG4J = """status = warn
appender.out.type = Console
appender.out.name = out
appender.out.target = SYSTEM_OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = log %p %c{1}: %m%n
rootLogger.level = info
rootLogger.appenderRef.out.ref = out
logger.rebalancer.name = io.github.kafkarebalancer
logger.rebalancer.level = debug
"""
"""Kafka's INFO (the consumer's and the reporter producer's settings among it) and the reporter's
DEBUG: all that a secret must not be found in."""

IDS = ["orders-1", 'quote"and\\backslash', "new\nline\ttab\r", "ctl\x01\x1f\x7f", "naïve-日本-🙂",
       "</script>"]
LOOPS = [(0, 10), (10, 0), (10, 10), (5, 15), (200, 3), (1, 999)]
"""Steady poll loops: ms in poll(), ms outside it, each time round."""


@pytest.mark.java
def test_the_reporters_json_and_busy_share_are_what_the_contract_reads():
    classpath = ":".join([*build_assignor(), jvm.kafka_classpath()])
    # each loop's poll-idle-ratio-avg as kafka-clients 4.3.1 computes it: a poll's time against
    # itself plus the time since the previous poll started (KAFKA-17503)
    ratios = [p / (2 * p + w) for p, w in LOOPS]
    out = subprocess.run([jvm.java_executable(), "-Xmx128m", "-cp", classpath,
                          "io.github.kafkarebalancer.LoadReporterCases"],
                         input=json.dumps({"ids": IDS, "ratios": ratios}).encode(),
                         check=True, capture_output=True, timeout=120).stdout.splitlines()
    reports = [member_load.parse(line) for line in out[:len(IDS)]]
    assert [(r.group, r.client_id, r.member_id, r.busy, r.records_per_s, r.window_s)
            for r in reports if r is not None] == \
        [(i, i, None, pytest.approx(1 - 0.25 / 0.75), 12.5, 5.0) for i in IDS]
    shares = [json.loads(line) for line in out[len(IDS):len(IDS) + len(LOOPS)]]
    assert [d["busy"] for d in shares] == [pytest.approx(w / (p + w)) for p, w in LOOPS]
    edges = {d["case"]: d["report"] for d in map(json.loads, out[len(IDS) + len(LOOPS):])}
    carried = {name: member_load.parse(json.dumps(r).encode())
               for name, r in edges.items() if r is not None}
    assert set(edges) - set(carried) == {"before_the_first_poll", "ratio_above_one",
                                         "negative_ratio", "rate_nan", "rate_infinite",
                                         "rate_negative", "no_client_id"}
    assert {n: (r.records_per_s, r.window_s) for n, r in carried.items() if r is not None} == \
        {"tiny_rate": (1e-7, 2.5), "huge_rate": (1.2345678901e9, 2.5)}


@pytest.mark.java
def test_a_reporter_that_cannot_report_says_so_once_and_never_holds_up_close():
    classpath = ":".join([*build_assignor(), jvm.kafka_classpath()])
    secret = f"not-to-be-seen-{uuid.uuid4().hex}"
    log4j = Path(__file__).parents[1] / "java" / "log4j2.properties"  # WARN, the reporter's INFO
    out = subprocess.run([jvm.java_executable(), "-Xmx128m", f"-Dlog4j2.configurationFile={log4j}",
                          "-cp", classpath, "io.github.kafkarebalancer.LoadReporterCases",
                          "failures", secret],
                         check=True, capture_output=True, text=True, timeout=120)
    lines = out.stdout.splitlines()
    closed = {d["case"]: d["close_ms"] for d in map(json.loads, (ln for ln in lines
                                                                  if ln.startswith("{")))}
    assert set(closed) == {"unbuildable", "unreachable"}
    # close() comes back at once, even with a send waiting for a broker that is not there
    assert all(ms < 3000 for ms in closed.values()), closed
    warned = [ln for ln in lines if ln.startswith("log WARN LoadReporter")]
    assert len(warned) == 1 and "building the producer of load reports failed" in warned[0] \
        and "no more reports from this consumer" in warned[0], lines
    assert secret not in out.stdout + out.stderr


def _paced(cfg, topic: str, stop: threading.Event, sent: list[float]) -> None:
    """Produce to ``topic`` at RATE records/s until ``stop``; each send's time into ``sent``."""
    producer = kafka_clients.producer(cfg)
    try:
        due = time.monotonic()
        while not stop.is_set():
            producer.send(topic, value=b"v", partition=len(sent) % 2)
            sent.append(time.time())
            due += 1 / RATE
            stop.wait(max(0.0, due - time.monotonic()))
    finally:
        producer.close()


def _reports(cfg, topic: str) -> list[tuple[bytes | None, bytes | None]]:
    """Every (key, value) on ``topic`` (one partition) so far."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(group_id=None, enable_auto_commit=False,
                             **kafka_clients.python_client_options(cfg, "consumer"))
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        end = consumer.end_offsets([tp])[tp]
        out: list[tuple[bytes | None, bytes | None]] = []
        deadline = time.monotonic() + 10
        while consumer.position(tp) < end and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                out += [(r.key, r.value) for r in records]
        return out
    finally:
        consumer.close()


@pytest.mark.integration
def test_a_java_consumer_reports_its_load_by_configuration_alone(cfg, tmp_path):
    assignor = build_assignor()  # clients/java's classes, LoadReporter among them
    classes = compile_member(tmp_path / "classes")
    tag = uuid.uuid4().hex[:6]
    topic, load_topic = f"load-work-{tag}", f"load-reports-{tag}"
    group, client = f"load-{tag}", f"load-c-{tag}"
    secret = f"not-to-be-seen-{uuid.uuid4().hex}"
    kafka_clients.ensure_topics(cfg, {topic: {"num_partitions": 2, "replication_factor": 1},
                                      load_topic: {"num_partitions": 1, "replication_factor": 1}})
    producer = kafka_clients.producer(cfg)
    for i in range(BACKLOG):
        producer.send(topic, value=b"v", partition=i % 2)
    producer.flush()
    producer.close()
    (tmp_path / "consumer.properties").write_text("\n".join([
        "metric.reporters=io.github.kafkarebalancer.LoadReporter",
        f"rebalancer.load.topic={load_topic}",
        "rebalancer.load.interval.ms=1000",
        "metrics.sample.window.ms=1000",  # the metrics average 2 s, not 60: the reports follow soon
        # PLAINTEXT uses neither, but both reach the reporter's producer: its settings, logged
        # below, must show them [hidden]
        f"ssl.truststore.password={secret}",
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required"
        f' username="u" password="{secret}";',
    ]) + "\n")
    (tmp_path / "log4j2.properties").write_text(LOG4J)
    log = tmp_path / "jvm.log"
    classpath = ":".join([str(classes), *assignor, jvm.kafka_classpath()])
    member = JavaProcess(
        [jvm.java_executable(), "-Xmx128m", f"-Drate={PACE}",
         f"-Dconfig={tmp_path / 'consumer.properties'}",
         f"-Dlog4j2.configurationFile={tmp_path / 'log4j2.properties'}", "-cp", classpath,
         "GroupMember", "consume", cfg.kafka.bootstrap_servers, group, topic, "classic", "a",
         client],
        client, log=log.open("w"))
    stop, sent = threading.Event(), list[float]()
    pacer = threading.Thread(target=_paced, args=(cfg, topic, stop, sent), daemon=True)
    pacer.start()

    def reports() -> list[member_load.Report]:
        got = _reports(cfg, load_topic)
        assert all(key == group.encode() for key, _ in got), got
        parsed = [member_load.parse(value) for _, value in got]
        assert None not in parsed, got
        return [r for r in parsed if r is not None]

    seen: list[member_load.Report] = []

    def busy_then_paced() -> tuple[list, list] | None:
        """The reports while the backlog lasted and those since (once the metrics' 2 s are past
        it), when there are 4 of the latter."""
        assert member.alive, member.output()[-30:]
        seen[:] = rs = reports()
        busy = [k for k, r in enumerate(rs) if r.busy > 0.8 and r.records_per_s > 0]
        after = [r for r in rs[busy[-1] + 3:] if r.records_per_s > 0] if busy else []
        return (rs[:busy[-1] + 1], after) if len(after) >= 4 else None

    try:
        backlog, paced = wait_for(busy_then_paced, 40, 1.0, "busy reports, then paced ones")
    except AssertionError as e:
        raise AssertionError(f"{e}; the reports: {seen}") from None
    finally:
        stop.set()
        member.stop()
        pacer.join(10)
    every = backlog + paced
    assert {(r.group, r.client_id, r.member_id, r.window_s) for r in every} == \
        {(group, client, None, 1.0)}
    assert [r.ts for r in every] == sorted(r.ts for r in every)
    assert all(0.0 <= r.busy <= 1.0 for r in every)
    # at RATE records/s with 4 ms a record it is busy about a fifth of the time (1 - the idle
    # ratio as Kafka computes it would say more than half: LoadReporter.busy)
    produced = (len(sent) - 1) / (sent[-1] - sent[0])
    assert 0.02 < statistics.median(r.busy for r in paced) < 0.45, paced
    assert 0.5 * produced < statistics.median(r.records_per_s for r in paced) < 1.5 * produced, \
        (produced, paced)
    out = log.read_text()
    assert secret not in out
    assert f"reporting the load of {client} in group {group} to {load_topic}" in out, out[-3000:]
    # the settings of the reporter's producer, as Kafka logs them (the consumer's too)
    assert f"client.id = {client}-load" in out
    assert out.count("ssl.truststore.password = [hidden]") >= 2, out[-3000:]
    assert "WARN LoadReporter" not in out, out[-3000:]

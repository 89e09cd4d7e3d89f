"""One real, short invocation of each subcommand that no other test runs as a command.

Already run as commands elsewhere: ``kafka up`` / ``kafka down`` (test_foundation), ``collect``
(test_collector), ``run`` (test_faults, test_chaos), ``assign`` and ``bench quality`` (in-process,
tests/unit/streaming/commands/test_cli_paths.py). Here, each as a subprocess of the project's
interpreter against the session's three-broker cluster: ``setup``, ``kafka status``, ``workload``,
``smoke``, ``recommendations`` (on a table a ``run --available-now`` wrote, with
``[policy.assignor_options]`` set from ``--conf``), ``demo`` (12 s) and ``bench speed`` (one small
case, ours and Kafka's Java side by side).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from pathlib import Path

from kafka import KafkaConsumer, TopicPartition

from streaming.config import Config
from streaming.contracts import events as ev
from streaming.kafka_clients import factories as kafka_clients

from .conftest import env_with

T0 = 1_763_700_000_000
STEP = 10_000


def rebalancer(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "streaming.cli", *args], capture_output=True,
                          text=True, timeout=timeout, env=env_with())


def spark_conf(cfg: Config, tables: Path, checkpoints: Path) -> list[str]:
    conf = {"kafka.bootstrap_servers": cfg.kafka.bootstrap_servers, "paths.tables": str(tables),
            "paths.checkpoints": str(checkpoints), "spark.master": "local[2]",
            "spark.sql.shuffle.partitions": "2"}
    return [a for k, v in conf.items() for a in ("--conf", f"{k}={v}")]


def test_setup_finds_the_resolved_jars() -> None:
    done = rebalancer("setup")
    assert done.returncode == 0, done.stderr
    m = re.search(r"JVM artifacts ready in (.+): (\d+) jars for Spark, (\d+) for the Kafka broker",
                  done.stdout)
    assert m, done.stdout
    assert Path(m.group(1)).is_dir() and int(m.group(2)) > 0 and int(m.group(3)) > 0


def test_kafka_status_follows_up_and_down(state_file: str) -> None:
    before = rebalancer("kafka", "status")
    assert (before.returncode, before.stdout.strip()) == (1, "no embedded cluster is running")
    up = rebalancer("kafka", "up")
    assert up.returncode == 0, up.stderr
    bootstrap = up.stdout.strip().splitlines()[-1]
    try:
        status = rebalancer("kafka", "status")
        assert (status.returncode, status.stdout.strip()) == (0, bootstrap)
    finally:
        down = rebalancer("kafka", "down")
    assert down.returncode == 0 and "stopped 1 broker" in down.stdout, down.stderr
    after = rebalancer("kafka", "status")
    assert after.returncode == 1


def test_workload_creates_its_topic_produces_and_its_group_leaves(cfg: Config) -> None:
    topic, group = (f"cli-workload-{uuid.uuid4().hex[:6]}",
                    f"cli-workload-app-{uuid.uuid4().hex[:6]}")
    done = rebalancer("workload", "--bootstrap", cfg.kafka.bootstrap_servers, "--topic", topic,
                      "--group", group, "--partitions", "4", "--consumers", "2", "--rate", "200",
                      "--racks", "a,b", "--duration", "6", "--status-every", "2")
    assert done.returncode == 0, done.stderr
    said = done.stdout + done.stderr
    assert f"workload: topic {topic} (4 partitions" in said
    assert f"workload: stopped (2 consumer(s) left group {group})" in said
    consumer = KafkaConsumer(group_id=None, **kafka_clients.python_client_options(cfg, "consumer"))
    try:
        partitions = consumer.partitions_for_topic(topic)
        assert partitions == {0, 1, 2, 3}
        ends = consumer.end_offsets([TopicPartition(topic, p) for p in partitions])
        assert sum(ends.values()) > 0
    finally:
        consumer.close()


def test_smoke_round_trips_records(cfg: Config, tmp_path: Path) -> None:
    done = rebalancer("smoke", "--records", "200",
                      *spark_conf(cfg, tmp_path / "tables", tmp_path / "checkpoints"))
    assert done.returncode == 0, done.stderr[-3000:]
    assert re.search(r"produced 200 records, Delta table .* holds 200; identical: True",
                     done.stdout), done.stdout


def test_recommendations_show_what_run_wrote_with_the_configured_assignor_options(
        cfg: Config, tmp_path: Path) -> None:
    tag = uuid.uuid4().hex[:6]
    topics = {"kafka.lag_topic": f"cli.lag.{tag}", "kafka.metadata_topic": f"cli.meta.{tag}",
              "kafka.trigger_topic": f"cli.triggers.{tag}"}
    job_cfg = cfg.with_overrides(topics)
    # Two members, four partitions, the two hottest on C0 for three polls: one lag_skew
    # recommendation. Load alone would give C0 one partition and C1 three; max_count_skew=0 keeps
    # counts at two each.
    lags = {0: 9000, 1: 8000, 2: 100, 3: 100}
    events = [ev.members_event(T0, "g", 1, "range", [
        ev.member_entry("C0", ["t0"], [("t0", 0), ("t0", 1)], client_id="c0", host="/127.0.0.1"),
        ev.member_entry("C1", ["t0"], [("t0", 2), ("t0", 3)], client_id="c1", host="/127.0.0.1")])]
    for i in range(3):
        ts = T0 + i * STEP
        events += [ev.lag_event(ts, "g", "t0", p, 1_000_000 + ts // 100,
                                1_000_000 + ts // 100 + lag)
                   for p, lag in lags.items()]
    kafka_clients.ensure_rebalancer_topics(job_cfg)
    producer = kafka_clients.producer(job_cfg)
    try:
        for e in events:
            key, value = ev.encode(e)
            producer.send(ev.topic_for(e, topics["kafka.lag_topic"],
                                       topics["kafka.metadata_topic"]),
                          key=key, value=value)
        producer.flush(60)
    finally:
        producer.close()

    conf = [*spark_conf(cfg, tmp_path / "tables", tmp_path / "checkpoints"),
            *(a for k, v in topics.items() for a in ("--conf", f"{k}={v}")),
            "--conf", "policy.assignor_options.max_count_skew=0",
            "--conf", "job.query_name=cli_invocations"]
    run = rebalancer("run", "--available-now", *conf)
    assert run.returncode == 0, run.stderr[-3000:]

    shown = rebalancer("recommendations", "--format", "json", *conf)
    assert shown.returncode == 0, shown.stderr[-3000:]
    rows = json.loads(shown.stdout)
    assert [(r["group"], r["version"], r["triggers"], r["assignor"]) for r in rows] == [
        ("g", 1, ["lag_skew"], "balanced")]
    counts = sorted(len(m["partitions"]) for m in rows[0]["assignment"])
    assert counts == [2, 2]
    assert rows[0]["before_max_lag"] == 17000

    table = rebalancer("recommendations", "--latest", "--group", "g", *conf)
    assert table.returncode == 0, table.stderr[-3000:]
    assert re.search(r"^g\s+1\s", table.stdout, re.M), table.stdout
    assert "lag_skew" in table.stdout


def test_demo_runs_briefly_and_leaves_its_summary_plot_and_tables(cfg: Config,
                                                                  tmp_path: Path) -> None:
    out = tmp_path / "demo"
    done = rebalancer("demo", "--duration", "12", "--interval", "2", "--move-replicas-at", "-1",
                      "--out", str(out),
                      "--conf", f"kafka.bootstrap_servers={cfg.kafka.bootstrap_servers}",
                      "--conf", "spark.master=local[2]", "--conf", "spark.sql.shuffle.partitions=2",
                      timeout=400)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "summary: group" in done.stdout
    # the live display is not interleaved with log lines: they went to the file it named
    log_file = re.search(r"^logs: (\S+)", done.stdout, re.M)
    assert log_file is not None and Path(log_file.group(1)).stat().st_size > 0, done.stdout[:500]
    assert not re.search(r"^\d\d:\d\d:\d\d (DEBUG|INFO|WARNING) ", done.stdout + done.stderr, re.M)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["group"] and summary["duration_s"] > 0
    assert (out / "delta" / "recommendations" / "_delta_log").is_dir()
    assert (out / "lag.png").stat().st_size > 0


def test_bench_speed_times_ours_beside_kafkas_java() -> None:
    done = rebalancer("bench", "speed", "--quick", "--assignors", "range", "--cases", "split-2k")
    assert done.returncode == 0, done.stderr[-3000:]
    row = next((line.split() for line in done.stdout.splitlines() if line.startswith("range ")),
               None)
    assert row is not None and row[1] == "split-2k", done.stdout
    # a 2,000-partition range assignment takes milliseconds: the figures exist, cold and warm,
    # Java's included (columns: assignor case, ours cold/warm, Java cold/warm, ratio to warm Java,
    # our RSS, ...)
    assert all(float(v) >= 0 for v in row[2:7]) and row[7].endswith("M")
    assert "Java: kafka-clients 4.3.1" in done.stdout

"""The alert rules live: a real Prometheus (the binary `rebalancer setup` caches:
streaming/prometheus_bin.py) scrapes a running collector's and a running job's /metrics on loopback,
evaluates conf/prometheus/rebalancer-alerts.yml, and KafkaConsumerGroupStuckPartition fires for a
group whose committed offsets stand still below the end (nobody consumes it), as Prometheus's own
/api/v1/alerts reports it. The job runs (query.start, metrics on) on topics of its own, which
nothing feeds: this is about Prometheus scraping it, its batches are test_metrics_endpoint.py's.
The rules Prometheus loads are the shipped file with each rule's ``for:`` shortened to seconds
(every other line identical, checked); it scrapes and evaluates every second. Without Prometheus
this fails with what to run, never skips."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from streaming import exporter, prometheus_bin
from streaming.collector import Collector, CollectorOptions
from streaming.job import query
from streaming.kafka_clients import factories as kafka_clients

from .conftest import commit_offsets, topic_with_records
from .test_alert_rules import rule_count
from .test_job import job_config

pytestmark = [pytest.mark.integration]

RULES = Path(__file__).resolve().parents[2] / "conf" / "prometheus" / "rebalancer-alerts.yml"
FOR = "1s"
ALERT = "KafkaConsumerGroupStuckPartition"


def shortened_rules(dst: Path) -> Path:
    """The shipped rules with every ``for:`` set to :data:`FOR`; nothing else differs (asserted)."""
    shipped = RULES.read_text().splitlines(keepends=True)
    copy = [re.sub(r"^(\s+for: )\S+$", rf"\g<1>{FOR}", line) for line in shipped]
    changed = [(a, b) for a, b in zip(shipped, copy, strict=True) if a != b]
    assert changed and all(re.fullmatch(r"\s+for: \S+\n", a) for a, _ in changed), changed
    dst.write_text("".join(copy))
    return dst


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def api(base: str, path: str, **params: str) -> Any:
    url = f"{base}{path}" + (f"?{urllib.parse.urlencode(params)}" if params else "")
    body = json.loads(urllib.request.urlopen(url, timeout=5).read())
    assert body["status"] == "success", body
    return body["data"]


def wait_for(what: str, probe: Callable[[], Any], timeout_s: float, log: Path | None = None) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            got = probe()
        except OSError:
            got = None
        if got:
            return got
        time.sleep(0.5)
    tail = log.read_text()[-2000:] if log and log.exists() else ""
    raise AssertionError(f"{what} within {timeout_s:.0f}s\n{tail}")


@pytest.fixture
def prometheus(tmp_path: Path) -> Iterator[Callable[[dict[str, str]], str]]:
    """Starts Prometheus on a free loopback port over targets (job name -> host:port); its base URL.
    Stopped at the end, and checked gone."""
    procs: list[subprocess.Popen] = []
    binary = prometheus_bin.binary("prometheus")  # SetupError (a failure) without it

    def start(targets: dict[str, str]) -> str:
        conf = {"global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                "rule_files": [str(shortened_rules(tmp_path / "rules.yml"))],
                "scrape_configs": [{"job_name": j, "static_configs": [{"targets": [t]}]}
                                   for j, t in targets.items()]}
        (tmp_path / "prometheus.yml").write_text(json.dumps(conf, indent=1))  # JSON is YAML
        port = free_port()
        log = tmp_path / "prometheus.log"
        with log.open("w") as out:
            procs.append(subprocess.Popen(
                [str(binary), f"--config.file={tmp_path / 'prometheus.yml'}",
                 f"--storage.tsdb.path={tmp_path / 'data'}",
                 f"--web.listen-address=127.0.0.1:{port}"],
                stdout=out, stderr=subprocess.STDOUT))
        base = f"http://127.0.0.1:{port}"

        def ready() -> bool:
            assert procs[-1].poll() is None, f"prometheus exited:\n{log.read_text()[-2000:]}"
            return urllib.request.urlopen(f"{base}/-/ready", timeout=2).status == 200

        wait_for("prometheus ready", ready, 60, log)
        return base

    yield start
    for p in procs:
        p.terminate()
        try:
            p.wait(20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(10)
        assert p.returncode is not None


def _stuck_group(cfg, name: str) -> None:
    """A group that committed 2 of the 10 records of each of its 2 partitions and has no member: lag
    that stands still, the stuck partition the alert is about (nobody took the partitions over)."""
    topic_with_records(cfg, name, partitions=2, records=20)
    admin = kafka_clients.admin(cfg)
    try:
        commit_offsets(admin, name, {(name, 0): 2, (name, 1): 2})
    finally:
        admin.close()


@contextlib.contextmanager
def polling(collector: Collector) -> Iterator[threading.Thread]:
    """The collector polling every interval in a thread until the block ends (then stopped,
    joined)."""
    stop = threading.Event()
    thread = threading.Thread(target=collector.run, kwargs={"stop": stop}, daemon=True)
    thread.start()
    try:
        yield thread
    finally:
        stop.set()
        thread.join(30)


def firing(base: str, alert: str) -> list[dict]:
    return [a for a in api(base, "/api/v1/alerts")["alerts"]
            if a["labels"]["alertname"] == alert and a["state"] == "firing"]


def test_a_stuck_partition_fires_its_alert_in_a_real_prometheus(spark, cfg, prometheus):
    tag = uuid.uuid4().hex[:6]
    name = f"alerts-{tag}"
    jc = job_config(cfg, f"alerts{tag}", stuck_observations=3)
    jc = dataclasses.replace(
        jc, metrics=dataclasses.replace(jc.metrics, enabled=True, job_port=0, collector_port=0))
    _stuck_group(jc, name)
    t0 = time.monotonic()
    job, printer = query.start(spark, jc, checkpoint=jc.checkpoint_path("alerts"))
    try:
        with Collector(jc, CollectorOptions(include=f"^{name}$", interval_s=0.5), out=None,
                       export=exporter.for_collector(jc)) as collector, \
                polling(collector) as poller:
            assert collector.export is not None
            at = {"rebalancer-collector": f"127.0.0.1:{collector.export.server.port}",
                  "rebalancer-job": f"127.0.0.1:{exporter.job_server().port}"}
            t1 = time.monotonic()
            base = prometheus(at)
            alerts = wait_for(f"{ALERT} firing for {name}", lambda: [
                a for a in firing(base, ALERT) if a["labels"]["group"] == name], 60)
            t2 = time.monotonic()
            job_series = api(base, "/api/v1/query",
                             query="kafka_rebalancer_job_batches_total")["result"]
            every = api(base, "/api/v1/alerts")["alerts"]
            targets = api(base, "/api/v1/targets")["activeTargets"]
            rules = api(base, "/api/v1/rules")["groups"]
    finally:
        job.stop()
        spark.streams.removeListener(printer)
    print(f"job and collector up in {t1 - t0:.1f}s; Prometheus up and {ALERT} firing "
          f"{t2 - t1:.1f}s later; alerts then: "
          f"{sorted((a['labels']['alertname'], a['state']) for a in every)}")
    print(json.dumps(alerts, indent=1))
    (alert,) = alerts
    assert alert["labels"] == {"alertname": ALERT, "group": name, "severity": "warning",
                               "job": "rebalancer-collector",
                               "instance": at["rebalancer-collector"]}
    assert float(alert["value"]) == 2  # both partitions: lag, and a committed offset standing still
    assert alert["annotations"]["summary"] == f"{name} has 2 stuck partition(s)"
    # the job's page is scraped too (its batches are test_metrics_endpoint.py's): its series
    assert [r["metric"]["job"] for r in job_series] == ["rebalancer-job"]
    assert {t["labels"]["job"]: t["health"] for t in targets} == {j: "up" for j in at}
    # a job seconds old without a batch yet is not stalled: its last-batch time starts at its start
    assert "KafkaRebalancerJobStalled" not in {a["labels"]["alertname"] for a in every}, every
    (group,) = rules
    (rule,) = [r for r in group["rules"] if r["name"] == ALERT]
    assert len(group["rules"]) == rule_count()
    assert (rule["query"], rule["duration"]) == ("kafka_rebalancer_group_stuck_partitions > 0", 1)
    assert not poller.is_alive()

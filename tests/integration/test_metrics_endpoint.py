"""``/metrics`` of a real job run and a real collector, scraped over HTTP while they run: the job's
figures equal the Delta rows it wrote, the collector's equal what ``kafka-consumer-groups`` reports,
and every metric name the Grafana dashboard (conf/grafana/rebalancer.json) queries is in one of the
two scrapes."""

from __future__ import annotations

import dataclasses
import json
import math
import re
import threading
import time
import urllib.request
import uuid
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from streaming import exporter
from streaming.collector import Collector, CollectorOptions
from streaming.contracts import events as ev
from streaming.contracts.tables import RECOMMENDATIONS, REJECTED
from streaming.dev.produce import produce
from streaming.dev.workload import Workload, WorkloadOptions
from streaming.exporter.metrics import reason_kind
from streaming.job import query

from .java_client import consumer_groups, parse_table
from .test_job import STEP, T0, job_config, lag_poll, member

pytestmark = [pytest.mark.integration, pytest.mark.java]

DASHBOARD = Path(__file__).parents[2] / "conf" / "grafana" / "rebalancer.json"


def _same(gauge: float, column: float | None) -> bool:
    """A gauge equals its Delta column (NaN for null)."""
    return math.isnan(gauge) if column is None else gauge == column


def scrape(url: str) -> tuple[str, dict[tuple[str, tuple], float]]:
    text = urllib.request.urlopen(url, timeout=10).read().decode()
    return text, {(s.name, tuple(sorted(s.labels.items()))): s.value
                  for fam in text_string_to_metric_families(text) for s in fam.samples}


def _events() -> tuple[list[dict], list[tuple[bytes, bytes]]]:
    two = [member("C0", [("t0", 0), ("t0", 1)]), member("C1", [("t0", 2), ("t0", 3)])]
    events = [ev.members_event(T0, "skewed", 1, "range", two)]
    for i in range(6):
        events += lag_poll(T0 + i * STEP, "skewed", {0: 9000, 1: 8000, 2: 100, 3: 100})
    parts = lambda racks: [ev.partition_entry(p, 1, [1, 2], r)  # noqa: E731
                           for p, r in enumerate(racks)]
    events.append(ev.partitions_event(T0, "racks", "t0",
                                      parts([["a", "b"], ["b", "c"], ["c", "a"], ["a", "b"]])))
    events.append(ev.members_event(T0, "racks", 1, "range", [
        member("A", [("t0", 0), ("t0", 3)], rack="a"), member("B", [("t0", 1)], rack="b"),
        member("C", [("t0", 2)], rack="c")]))
    events += lag_poll(T0, "racks", {p: 500 for p in range(4)})
    events.append(ev.partitions_event(T0 + STEP, "racks", "t0",
                                      parts([["b", "c"], ["b", "c"], ["c", "a"], ["a", "b"]])))
    events += lag_poll(T0 + STEP, "racks", {p: 500 for p in range(4)})
    bad = [(b"bad", b"not json"), (b"bad", b"[1, 2]"),
           (b"bad", json.dumps({"ts": T0, "group": "bad"}).encode())]
    return events, bad


@pytest.fixture(scope="module")
def job_scrape(spark, cfg):
    jc = job_config(cfg, uuid.uuid4().hex[:6])
    jc = dataclasses.replace(jc, metrics=dataclasses.replace(jc.metrics, enabled=True, job_port=0))
    events, bad = _events()
    produce(jc, events, bad)
    stop = threading.Event()
    done: list = []
    # the job's metrics are the process's, kept across its queries (a restarted query counts on):
    # another query of this test process (test_alerts_live's) may have counted first, so what
    # this one counted is the difference
    earlier = exporter.job_server()
    baseline = scrape(earlier.url)[1] if earlier is not None else {}
    runner = threading.Thread(target=lambda: done.append(query.run(spark, jc, stop=stop)),
                              daemon=True)
    runner.start()
    try:
        deadline = time.monotonic() + 300
        samples: dict = {}
        # until every record is in a completed batch, as the job reports it
        while time.monotonic() < deadline:
            server = exporter.job_server()
            if server is not None:
                text, samples = scrape(server.url)
                samples = _since(samples, baseline)
                rows_in = samples.get(("kafka_rebalancer_job_input_rows_total", ()))
                if rows_in == len(events) + len(bad):
                    break
            time.sleep(1)
        else:
            raise AssertionError(f"the job did not report {len(events) + len(bad)} input rows: "
                                 f"{samples}")
        recs = spark.read.format("delta").load(jc.table_path(RECOMMENDATIONS)).collect()
        rejected = spark.read.format("delta").load(jc.table_path(REJECTED)).collect()
    finally:
        stop.set()
        runner.join(120)
    assert done, "the job did not stop"
    return text, samples, recs, rejected, done[0]


def _since(samples: dict, baseline: dict) -> dict:
    """``samples`` with each counter's (``_total``, and a histogram's ``_count``, ``_sum`` and
    ``_bucket``) value in ``baseline`` taken off: what was counted since."""
    cumulative = ("_total", "_count", "_sum", "_bucket")
    return {k: v - baseline.get(k, 0) if k[0].endswith(cumulative) else v
            for k, v in samples.items()}


def test_job_metrics_equal_the_delta_rows(job_scrape):
    _, s, recs, rejected, batches = job_scrape
    assert {r["group"] for r in recs} == {"skewed", "racks"}
    want: dict[tuple[str, str], int] = {}
    for r in recs:
        for t in r["triggers"]:
            want[(r["group"], t)] = want.get((r["group"], t), 0) + 1
    got = {(dict(k[1])["group"], dict(k[1])["trigger"]): v for k, v in s.items()
           if k[0] == "kafka_rebalancer_recommendations_total"}
    assert got == want
    for g in ("skewed", "racks"):
        latest = max((r for r in recs if r["group"] == g), key=lambda r: r["version"])
        label = (("group", g),)
        assert s[("kafka_rebalancer_last_recommendation_version", label)] == latest["version"]
        assert s[("kafka_rebalancer_last_recommendation_timestamp_seconds", label)] \
            == pytest.approx(latest["event_time"].timestamp(), abs=0.001)
        assert s[("kafka_rebalancer_last_recommendation_age_seconds", label)] > 0
        assert s[("kafka_rebalancer_recommendation_stuck_partitions", label)] \
            == len(latest["stuck_partitions"])
        for when in ("before", "after"):
            wl = (("group", g), ("when", when))
            assert s[("kafka_rebalancer_recommendation_max_member_lag_records", wl)] \
                == latest[f"{when}_max_lag"]
            assert s[("kafka_rebalancer_recommendation_imbalance_ratio", wl)] \
                == latest[f"{when}_imbalance"]
            assert s[("kafka_rebalancer_recommendation_cross_rack_partitions", wl)] \
                == latest[f"{when}_cross_rack"]
            assert _same(s[("kafka_rebalancer_recommendation_catch_up_seconds", wl)],
                         latest[f"{when}_catch_up_s"])
        assert _same(s[("kafka_rebalancer_recommendation_lag_age_seconds", label)],
                     latest["lag_age_s"])
    # what the rows say, worked out by hand: the skewed group's committed offsets grow 10/s per
    # partition and its end offsets as fast (constant lag), over a 20 s window at its third poll
    (skewed,) = [r for r in recs if r["group"] == "skewed"]
    assert (skewed["before_catch_up_s"], skewed["after_catch_up_s"], skewed["lag_age_s"]) \
        == (850.0, 450.0, 900.0)
    reasons: dict[str, int] = {}
    for r in rejected:
        reasons[reason_kind(r["reason"])] = reasons.get(reason_kind(r["reason"]), 0) + 1
    assert {dict(k[1])["reason"]: v for k, v in s.items()
            if k[0] == "kafka_rebalancer_job_rejected_rows_total"} \
        == reasons
    assert len(rejected) == 3
    # per batch: the progress lines the job printed (it may run more, empty, batches after the
    # scrape)
    n = s[("kafka_rebalancer_job_batches_total", ())]
    assert 0 < n == s[("kafka_rebalancer_job_batch_duration_seconds_count", ())] <= len(batches)
    assert sum(b["input_rows"] for b in batches[:int(n)]) \
        == s[("kafka_rebalancer_job_input_rows_total", ())]
    assert s[("kafka_rebalancer_job_state_rows", ())] == batches[int(n) - 1]["groups"] >= 2
    # Spark's phases came through the listener's JSON bridge (streaming.job.progress)
    assert all(0 <= b["durations"]["addBatch"] <= b["durations"]["triggerExecution"]
               for b in batches), batches
    assert all(b["durations"]["addBatch"] > 0 and b["state_update_ms"] > 0
               for b in batches if b["input_rows"]), batches


@pytest.fixture(scope="module")
def collector_scrape(cfg):
    name = f"metrics-{uuid.uuid4().hex[:6]}"
    mc = dataclasses.replace(cfg, metrics=dataclasses.replace(cfg.metrics, enabled=True,
                                                              collector_port=0),
                             policy=dataclasses.replace(cfg.policy, stuck_observations=3))
    opts = WorkloadOptions(topic=name, group=name, partitions=6, replication_factor=2,
                           produce_rate=400, zipf=1.2, consumers=2, consume_rate=60,
                           racks=("a", "b"))
    with Workload(cfg, opts, out=None) as w, \
            Collector(mc, CollectorOptions(include=f"^{name}$", interval_s=0.5), out=None,
                      export=exporter.for_collector(mc)) as c:
        assert w.wait_assigned(120)
        time.sleep(2)
        w.pause()
        # paused: offsets stand still, so lag seconds can only grow with the polls' own clock
        polls = []
        for _ in range(POLLS):
            c.poll_once()
            polls.append((c.last_snapshot.ts, scrape(c.export.server.url)[1]))
            time.sleep(1)
        text, samples = scrape(c.export.server.url)
        assert c.export.server.host == "127.0.0.1"
        tool = parse_table(consumer_groups(cfg.kafka.bootstrap_servers, "--describe",
                                           "--group", name))
    return name, text, samples, tool, polls


POLLS = 4


def test_collector_metrics_equal_kafka_consumer_groups(collector_scrape):
    group, _, s, tool, _ = collector_scrape
    per_member: dict[str, int] = {}
    for r in tool:
        per_member[r["CONSUMER-ID"]] = per_member.get(r["CONSUMER-ID"], 0) + int(r["LAG"] or 0)
    label = (("group", group),)
    assert s[("kafka_rebalancer_group_max_member_lag_records", label)] \
        == max(per_member.values()) > 0
    mean = sum(per_member.values()) / len(per_member)
    assert s[("kafka_rebalancer_group_imbalance_ratio", label)] \
        == pytest.approx(max(per_member.values()) / mean)
    assert s[("kafka_rebalancer_group_members", label)] == len(per_member) == 2
    assert s[("kafka_rebalancer_group_partitions", label)] == len(tool) == 6
    assert s[("kafka_rebalancer_group_topic_lag_records", (("group", group), ("topic", group)))] \
        == sum(per_member.values())
    assert s[("kafka_rebalancer_collector_polls_total", ())] == POLLS


def test_collector_lag_seconds_and_stuck_partitions_are_live(collector_scrape):
    """Paused: no end offset moves, so each lagging partition's oldest record is older than the
    window and its age is the window's span (a lower bound that grows with every poll); its
    committed offset stands still with lag, so after 3 polls every lagging partition is stuck (and
    left out of the time to catch up)."""
    group, _, _, tool, polls = collector_scrape
    label = (("group", group),)
    lagging = sum(1 for r in tool if int(r["LAG"] or 0) > 0)
    assert lagging > 0
    first = polls[0][0]
    # one poll: unknown
    assert math.isnan(polls[0][1][("kafka_rebalancer_group_max_member_lag_seconds", label)])
    for i, (ts, s) in enumerate(polls[1:], start=2):
        assert s[("kafka_rebalancer_group_max_member_lag_seconds", label)] == (ts - first) / 1000
        assert s[("kafka_rebalancer_group_stuck_partitions", label)] == (lagging if i >= 3 else 0)
        catch_up = s[("kafka_rebalancer_group_max_member_catch_up_seconds", label)]
        assert catch_up == (0.0 if i >= 3 else math.inf)  # consumed nothing; once stuck, left out


def test_the_dashboard_queries_only_exported_names(job_scrape, collector_scrape):
    exported = {k[0] for k in job_scrape[1]} | {k[0] for k in collector_scrape[2]}
    assert {"kafka_rebalancer_group_max_member_lag_seconds",
            "kafka_rebalancer_group_stuck_partitions",
            "kafka_rebalancer_recommendation_catch_up_seconds"} <= exported
    dash = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
    exprs += [v["definition"] for v in dash["templating"]["list"] if v.get("definition")]
    names = {n for e in exprs for n in re.findall(r"\bkafka_rebalancer_[a-z0-9_]+", e)}
    assert len(names) >= 20
    assert sorted(names - exported) == []
    assert all(p["datasource"]["uid"] == "${datasource}" for p in dash["panels"])

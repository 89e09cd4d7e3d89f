"""librdkafka consumers on ``group.protocol=consumer`` take the job's recommendation from the server-side assignor,
measured beside the same group on Kafka's ``uniform`` (#29).

On a one-broker cluster that loads ServerAssignor (``rebalancer kafka up --server-assignor``'s cluster) three groups
of three confluent-kafka (librdkafka) consumers read one skewed topic, every consumer processing RATE records/s:

- ``rebalancer``: ``group.protocol=consumer`` and ``group.remote.assignor=rebalancer``;
- ``uniform``: the same on Kafka's ``uniform``, the twin it is measured against;
- ``classic``: the classic protocol with ``cooperative-sticky``, where librdkafka runs no pluggable assignor.

The real job recommends for them (``lag_skew``). ConsumerGroupDescribe (target and current assignment) and the
consumers themselves then hold the first group's recommendation; over the WINDOW_S seconds that follow, its max
consumer lag ends below uniform's by at least half of what uniform's busiest member must add in that time (its load
beyond RATE, from the topic's partition rates and the partitions uniform gave it). The classic group's rows and
``describe`` say why it is not applied and what would apply it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from streaming import config
from streaming.contracts import serving
from streaming.contracts.tables import RECOMMENDATIONS
from streaming.dev.workload import partition_rates
from streaming.kafka_clients import factories as kafka_clients

from .groups import by_client, described
from .java_client import wait_for
from .rdk_worker import PacedRdkConsumer

PARTITIONS = 12
PRODUCE = 300.0
ZIPF = 1.0
RATE = 120.0
"""records/s each consumer processes: a third of the load and more, less than any four partitions that include the
hottest (its 97/s and the three coldest make 123/s), so every four-each split leaves one consumer behind."""
WINDOW_S = 40.0
KINDS = ("rebalancer", "uniform", "classic")


def _conf(kind: str, bootstrap: str, group: str, client_id: str, rack: str) -> dict:
    base = {"bootstrap.servers": bootstrap, "group.id": group, "client.id": client_id, "client.rack": rack,
            "topic.metadata.refresh.interval.ms": 5000}
    if kind == "classic":
        return {**base, "partition.assignment.strategy": "cooperative-sticky", "session.timeout.ms": 10000,
                "heartbeat.interval.ms": 1000}
    return {**base, "group.protocol": "consumer", "group.remote.assignor": kind}


def _p95(values: list[int]) -> float:
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)])


def _rows(spark, cfg, group: str) -> list:
    from pyspark.errors import AnalysisException

    try:
        return spark.read.format("delta").load(cfg.table_path(RECOMMENDATIONS)).where(f"`group` = '{group}'").collect()
    except AnalysisException:  # the job has not written the table yet
        return []


def _describe(cfg, capsys, groups: dict[str, str]) -> dict[str, dict]:
    from streaming.cli import main

    capsys.readouterr()
    pattern = "^(" + "|".join(groups.values()) + ")$"
    assert main(["describe", "--bootstrap", cfg.kafka.bootstrap_servers, "--groups", pattern, "--format", "json",
                 "--lag-seconds-timeout", "0", "--conf", f"paths.tables={cfg.paths.tables}"]) == 0
    out = {g["group"]: g for g in json.loads(capsys.readouterr().out)["groups"]}
    return {kind: out[group] for kind, group in groups.items()}


@dataclasses.dataclass
class Run:
    """The job, the collector and the three groups on one topic, started by :func:`_running`."""

    cfg: config.Config
    bootstrap: str
    topic: str
    groups: dict[str, str]
    members: dict[str, list[PacedRdkConsumer]]
    recs: list[tuple[float, dict]]
    """(monotonic time read, recommendation) of the rebalancer group, from the feed."""
    monitors: dict[str, Any] = dataclasses.field(default_factory=dict)
    t0: float = 0.0
    """When producing started (monotonic)."""

    def held(self, kind: str) -> dict[str, set]:
        return {m.client_id: m.assignment() for m in self.members[kind]}


@contextlib.contextmanager
def _running(spark, bootstrap: str, tmp_path) -> Iterator[Run]:
    from streaming.apply.feed import RecommendationFeed
    from streaming.dev.demo.loop import CollectorThread, loop_config, stop_query
    from streaming.dev.demo.monitor import GroupMonitor
    from streaming.dev.workload import Workload, WorkloadOptions
    from streaming.job import query as job_query

    base = config.load()
    cfg = dataclasses.replace(base, kafka=dataclasses.replace(base.kafka, bootstrap_servers=bootstrap))
    lcfg = loop_config(cfg, str(tmp_path / "tables"), str(tmp_path / "checkpoints"), cooldown_s=600,
                       trigger_interval="2 seconds", min_total_lag=300)
    kafka_clients.ensure_rebalancer_topics(lcfg)
    tag = uuid.uuid4().hex[:6]
    run = Run(lcfg, bootstrap, f"rdk-{tag}", {kind: f"rdk-{kind}-{tag}" for kind in KINDS}, {k: [] for k in KINDS}, [])
    load = Workload(lcfg, WorkloadOptions(topic=run.topic, group=f"rdk-producer-{tag}", partitions=PARTITIONS,
                                          produce_rate=PRODUCE, zipf=ZIPF, consumers=0, replication_factor=1), out=None)
    with contextlib.ExitStack() as cleanup:
        feed = RecommendationFeed(lcfg.kafka).start()
        cleanup.callback(feed.stop)
        feed.add_listener(lambda r: run.recs.append((time.monotonic(), r))
                          if r["group"] == run.groups["rebalancer"] else None)
        query, printer = job_query.start(spark, lcfg, checkpoint=lcfg.checkpoint_path("rdk"))
        cleanup.callback(stop_query, query)
        cleanup.callback(spark.streams.removeListener, printer)
        assert feed.wait_ready(30)
        # the topic first, records only once every group holds its partitions (test_server_assignor.py says why)
        kafka_clients.ensure_topics(lcfg, {run.topic: {"num_partitions": PARTITIONS, "replication_factor": 1}})
        for kind, group in run.groups.items():
            for i, rack in enumerate("abc"):
                run.members[kind].append(PacedRdkConsumer(_conf(kind, bootstrap, group, f"{kind[0]}-{i}-{tag}", rack),
                                                          run.topic, RATE))
                cleanup.callback(run.members[kind][-1].stop)
        everything = [(run.topic, p) for p in range(PARTITIONS)]
        for kind in KINDS:
            wait_for(lambda k=kind: sorted(tp for tps in run.held(k).values() for tp in tps) == everything, 120, 0.5,
                     f"the {kind} group assigned")
        load.start()
        cleanup.callback(load.stop)
        run.t0 = time.monotonic()
        run.monitors = {k: GroupMonitor(g, run.t0) for k, g in run.groups.items()}
        cleanup.callback(CollectorThread(lcfg, list(run.monitors.values()), interval_s=2.0).start().stop)
        yield run


def _applied(run: Run, cluster) -> tuple[dict, float]:
    """The first recommendation once ConsumerGroupDescribe and the members hold it; and when it was applied."""
    wait_for(lambda: run.recs, 180, 1.0, "a recommendation for the rebalancer group")
    _, rec = run.recs[0]
    assert "lag_skew" in rec["triggers"]
    wanted = {e["client_id"]: {(t, p) for t, p in e["partitions"]} for e in rec["assignment"]}

    def applied() -> bool:
        d = described(run.bootstrap, run.groups["rebalancer"])
        return by_client(d, "assignment") == wanted and by_client(d, "target_assignment") == wanted

    wait_for(applied, 90, 0.5, "the recommendation as the group's assignment (ConsumerGroupDescribe)")
    t_applied = time.monotonic()
    wait_for(lambda: run.held("rebalancer") == wanted, 30, 0.5, "the librdkafka members holding the recommendation")
    assert len(run.recs) == 1  # the cooldown: one recommendation, so the one applied is the one measured
    broker_log = cluster.nodes[0].log_file.read_text(errors="replace")
    assert f"recommendation v{rec['version']} is the target assignment of 3 member(s)" in broker_log
    return rec, t_applied


def _classic_said(spark, run: Run, capsys) -> None:
    """The classic group is recommended for too, its row unapplied with what would serve it; describe agrees."""
    wait_for(lambda: _rows(spark, run.cfg, run.groups["classic"]), 90, 2.0,
             "a recommendation row for the classic group")
    row = _rows(spark, run.cfg, run.groups["classic"])[0]
    assert row["serving"].startswith(serving.UNAPPLIED + ": ") and "librdkafka" in row["serving"]
    assert "group.protocol=consumer" in row["serving"]
    shown = _describe(run.cfg, capsys, run.groups)
    assert {k: g["serving"]["kind"] for k, g in shown.items()} == {
        "rebalancer": serving.SERVED, "uniform": serving.UNAPPLIED, "classic": serving.UNAPPLIED}
    assert "group.protocol=consumer" in shown["classic"]["serving"]["reason"]


@pytest.mark.integration
def test_librdkafka_consumers_take_the_recommendation_on_the_consumer_protocol(assignor_cluster, spark, tmp_path,
                                                                               capsys):
    from streaming.dev.demo.monitor import final_max_lag

    rates = partition_rates(PARTITIONS, PRODUCE, ZIPF)
    with _running(spark, assignor_cluster.bootstrap_servers, tmp_path) as run:
        rec, t_applied = _applied(run, assignor_cluster)
        _classic_said(spark, run, capsys)
        start, end = t_applied - run.t0, t_applied - run.t0 + WINDOW_S
        wait_for(lambda: all(m.samples and m.samples[-1].t >= end for m in run.monitors.values()), WINDOW_S + 30,
                 1.0, "the collector's samples through the measuring window")
        window = {k: run.monitors[k].window(start, end) for k in ("rebalancer", "uniform")}
        p95 = {k: _p95([s.max_lag for s in samples]) for k, samples in window.items()}
        ends = {k: final_max_lag(samples) for k, samples in window.items()}
        busiest = max(sum(rates[p] for _, p in tps) for tps in run.held("uniform").values())
        errors = [e for ms in run.members.values() for m in ms for e in m.errors]
    margin = (busiest - RATE) * WINDOW_S / 2
    ratio = ends["rebalancer"] / max(ends["uniform"], 1.0)
    print(f"librdkafka: recommendation v{rec['version']} on the feed {run.recs[0][0] - run.t0:.1f}s after producing "
          f"started, the group's assignment {t_applied - run.recs[0][0]:.1f}s later; over the {WINDOW_S:.0f}s after "
          f"it, max consumer lag p95 / end: rebalancer {p95['rebalancer']:,.0f} / {ends['rebalancer']:,.0f}, uniform "
          f"{p95['uniform']:,.0f} / {ends['uniform']:,.0f} (end ratio {ratio:.2f}); uniform's busiest member "
          f"{busiest:.0f}/s for {RATE:.0f}/s, margin {margin:,.0f}")
    assert ends["rebalancer"] <= ends["uniform"] - margin, (ends, margin)
    assert not errors

"""KIP-848 consumers take the real job's recommendation from the server-side assignor (clients/java
ServerAssignor, docs/server-assignor.md), measured beside the same groups on Kafka's ``uniform``
(#29).

One one-broker cluster that loads ServerAssignor (``rebalancer kafka up --server-assignor``'s
cluster) and one job with its trigger feed serve both cases, run at the same time, each on groups
and topics of its own:

1. Java: two groups of three Java KIP-848 consumers under the same skewed load, one asking for
   ``uniform``, one for ``rebalancer``: the job's recommendation becomes the second group's
   assignment, as ConsumerGroupDescribe reports it, and its max lag ends below half of uniform's.
2. librdkafka: three groups of three confluent-kafka consumers read one skewed topic, every consumer
   processing RATE records/s: ``rebalancer`` (``group.protocol=consumer``,
   ``group.remote.assignor=rebalancer``), ``uniform`` (the same on Kafka's ``uniform``, the twin it
   is measured against) and ``classic`` (``cooperative-sticky``, where librdkafka runs no pluggable
   assignor). The job recommends for them (``lag_skew``); ConsumerGroupDescribe and the consumers
   hold the first group's recommendation, and over the WINDOW_S seconds that follow its max consumer
   lag ends below uniform's by at least half of what uniform's busiest member must add in that time
   (its load beyond RATE, from the topic's partition rates and the partitions uniform gave it). The
   classic group's rows and ``describe`` say why it is not applied and what would apply it.

In both, the records start only once every group holds its partitions: a backlog made while the
members start (tens of seconds for six JVMs on a loaded machine) sits mostly on the hot partition,
which no assignment drains faster than its owner's spare capacity, so the end figures would measure
the machine's start-up time rather than the assignment.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from streaming import config
from streaming.dev.workload import partition_rates
from streaming.kafka_clients import factories as kafka_clients

from .groups import by_client, described
from .java_client import JavaMember, compile_remote_member, wait_for
from .served import (
    PARTITIONS,
    PRODUCE,
    RATE,
    WINDOW_S,
    ZIPF,
    Served,
    applied,
    classic_said,
    first_skew,
    p95,
    running,
)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def served(assignor_cluster, spark, tmp_path_factory) -> Iterator[Served]:
    """The job (a batch every 2 s, one recommendation per group: a long cooldown) and its trigger
    feed on the assignor cluster, for every case of this module."""
    from streaming.apply.feed import RecommendationFeed
    from streaming.dev.demo.loop import loop_config, stop_query
    from streaming.job import query as job_query

    base = config.load()
    cfg = dataclasses.replace(base, kafka=dataclasses.replace(
        base.kafka, bootstrap_servers=assignor_cluster.bootstrap_servers))
    work = tmp_path_factory.mktemp("served")
    lcfg = loop_config(cfg, str(work / "tables"), str(work / "checkpoints"), cooldown_s=600,
                       trigger_interval="2 seconds", min_total_lag=300)
    kafka_clients.ensure_rebalancer_topics(lcfg)
    with contextlib.ExitStack() as cleanup:
        feed = RecommendationFeed(lcfg.kafka).start()
        cleanup.callback(feed.stop)
        query, printer = job_query.start(spark, lcfg, checkpoint=lcfg.checkpoint_path("served"))
        cleanup.callback(stop_query, query)
        cleanup.callback(spark.streams.removeListener, printer)
        assert feed.wait_ready(30)
        yield Served(assignor_cluster, lcfg, feed)
    assert feed.failure is None


@pytest.fixture(scope="module")
def cases(served, spark, tmp_path_factory) -> Iterator[dict[str, Future]]:
    """Both cases at once, each in a thread of its own, their measuring windows overlapping: the
    broker, the job and the machine serve both, and each case compares its own groups, side by side
    under the same load, as before. A case's failed assertion is raised by its test."""
    with ThreadPoolExecutor(2, thread_name_prefix="served") as pool:
        yield {"java": pool.submit(_java_case, served, tmp_path_factory.mktemp("java")),
               "librdkafka": pool.submit(_librdkafka_case, served, spark)}


def test_a_kip848_java_group_on_the_server_assignor_takes_the_jobs_recommendation(cases):
    cases["java"].result()


def test_librdkafka_consumers_take_the_recommendation_on_the_consumer_protocol(cases):
    cases["librdkafka"].result()


def _java_case(served: Served, tmp_path: Path) -> None:
    from streaming.dev.demo.monitor import final_max_lag

    server, tag = served.cluster, uuid.uuid4().hex[:6]
    names = {"uniform": f"srv-uniform-{tag}", "rebalancer": f"srv-app-{tag}"}
    recs = served.recommendations(names["rebalancer"])
    classes = compile_remote_member(tmp_path / "classes")
    with _java_groups(served, names, classes, tag) as (held, mon, t0):
        # 1. the job recommends; the broker's assignor makes it the group's target, and the members
        #    run it
        t_rec, _ = first_skew(recs)

        def wanted() -> dict[str, set]:
            return {e["client_id"]: {(t, p) for t, p in e["partitions"]}
                    for e in recs[-1][1]["assignment"]}

        def applied_now() -> bool:
            d = described(server.bootstrap_servers, names["rebalancer"])
            return by_client(d, "assignment") == wanted() \
                and by_client(d, "target_assignment") == wanted()

        wait_for(applied_now, 90, 0.5,
                 "the recommendation as the group's assignment (ConsumerGroupDescribe)")
        t_applied = time.monotonic()
        # the coordinator records the new assignment when a member acknowledges it in a heartbeat;
        # the member's own report of it comes from its next poll(), a moment later
        want = wanted()
        wait_for(lambda: held("rebalancer") == want, 30, 0.5,
                 "the members holding the recommendation")
        broker_log = server.nodes[0].log_file.read_text(errors="replace")
        version = recs[-1][1]["version"]
        assert f"group {names['rebalancer']}: recommendation v{version} differs from the target " \
               "assignment; a member joined and left to have it computed again" in broker_log
        assert f"group {names['rebalancer']}: recommendation v{version} is the target assignment " \
               "of 3 member(s)" in broker_log

        # 2. the max consumer lag falls below half of what the same load reaches under uniform
        end = t_applied - t0 + 45.0
        # the measuring window, not a wait for anything
        time.sleep(max(0.0, end - (time.monotonic() - t0)))
        uniform_lag = final_max_lag(mon["uniform"].samples)
        app_lag = final_max_lag(mon["rebalancer"].samples)
        print(f"server assignor: recommendation v{version} read at {t_rec - t0:.0f}s, the group's "
              f"assignment {t_applied - t_rec:.1f}s later; max consumer lag at {end:.0f}s: uniform "
              f"{uniform_lag:,.0f}, rebalancer {app_lag:,.0f}")
        assert app_lag < uniform_lag / 2, (app_lag, uniform_lag)


@contextlib.contextmanager
def _java_groups(served: Served, names: dict[str, str], classes, tag: str):
    """Three Java members in each group of ``names`` (kind -> group, its topic of the same name),
    the records started once both groups hold their partitions, and the collector: (held, monitors,
    when records started)."""
    from streaming.dev.demo.loop import CollectorThread
    from streaming.dev.demo.monitor import GroupMonitor
    from streaming.dev.workload import Workload, WorkloadOptions

    lcfg, bootstrap = served.cfg, served.cluster.bootstrap_servers
    members: dict[str, list[JavaMember]] = {k: [] for k in names}

    def held(kind: str) -> dict[str, set]:
        return {m.client_id: m.assignment() for m in members[kind] if m.proc.poll() is None}

    with contextlib.ExitStack() as cleanup:
        kafka_clients.ensure_topics(lcfg, {n: {"num_partitions": PARTITIONS,
                                               "replication_factor": 1}
                                           for n in names.values()})
        for kind, group in names.items():
            for i, rack in enumerate("abc"):
                members[kind].append(JavaMember(classes, bootstrap, group, group, "consumer", rack,
                                                f"{kind[0]}-{i}-{tag}", rate=int(RATE),
                                                remote_assignor=kind))
                cleanup.callback(members[kind][-1].stop)
        for kind, topic in names.items():
            wait_for(lambda k=kind, t=topic: sorted(tp for tps in held(k).values() for tp in tps)
                     == [(t, p) for p in range(PARTITIONS)], 120, 0.5, f"the {kind} group assigned")
        for n in names.values():
            load = Workload(lcfg, WorkloadOptions(topic=n, group=n, partitions=PARTITIONS,
                                                  produce_rate=PRODUCE, zipf=ZIPF, consumers=0,
                                                  replication_factor=1), out=None)
            load.start()
            cleanup.callback(load.stop)
        t0 = time.monotonic()
        mon = {k: GroupMonitor(n, t0) for k, n in names.items()}
        cleanup.callback(CollectorThread(lcfg, list(mon.values()), interval_s=2.0).start().stop)
        yield held, mon, t0


def _librdkafka_case(served: Served, spark) -> None:
    from streaming.dev.demo.monitor import final_max_lag

    rates = partition_rates(PARTITIONS, PRODUCE, ZIPF)
    with running(served) as run:
        rec, t_applied = applied(run, served.cluster)
        t_read = next(t for t, r in run.recs if r is rec)
        classic_said(spark, run)
        start, end = t_applied - run.t0, t_applied - run.t0 + WINDOW_S
        wait_for(lambda: all(m.samples and m.samples[-1].t >= end for m in run.monitors.values()),
                 WINDOW_S + 30, 1.0, "the collector's samples through the measuring window")
        window = {k: run.monitors[k].window(start, end) for k in ("rebalancer", "uniform")}
        p95s = {k: p95([s.max_lag for s in samples]) for k, samples in window.items()}
        ends = {k: final_max_lag(samples) for k, samples in window.items()}
        busiest = max(sum(rates[p] for _, p in tps) for tps in run.held("uniform").values())
        errors = [e for ms in run.members.values() for m in ms for e in m.errors]
    margin = (busiest - RATE) * WINDOW_S / 2
    ratio = ends["rebalancer"] / max(ends["uniform"], 1.0)
    print(f"librdkafka: recommendation v{rec['version']} on the feed "
          f"{t_read - run.t0:.1f}s after producing started, the group's assignment "
          f"{t_applied - t_read:.1f}s later; over the {WINDOW_S:.0f}s after it, max "
          f"consumer lag p95 / end: rebalancer {p95s['rebalancer']:,.0f} / "
          f"{ends['rebalancer']:,.0f}, uniform {p95s['uniform']:,.0f} / {ends['uniform']:,.0f} "
          f"(end ratio {ratio:.2f}); uniform's busiest member {busiest:.0f}/s for {RATE:.0f}/s, "
          f"margin {margin:,.0f}")
    assert ends["rebalancer"] <= ends["uniform"] - margin, (ends, margin)
    assert not errors

"""The closed loop with Java consumers: workload -> collector -> streaming job -> trigger feed -> the Java
RecommendationAssignor (clients/java) -> the group rebalances onto the recommendation.

As tests/integration/test_loop.py, with three Java consumers per group instead of kafka-python ones: one
group on Kafka's RangeAssignor, one on RecommendationAssignor (cooperative-sticky until a recommendation
arrives), same skewed load side by side. The second must apply the job's recommendation and end with a max
consumer lag below half of range's; then, with the collector stopped (so no newer recommendation comes), a
member leaves and the leader falls back and logs why.
"""

from __future__ import annotations

import contextlib
import time
import uuid

import pytest

from streaming import kafka_clients
from streaming.apply.feed import RecommendationFeed
from streaming.dev.demo.loop import CollectorThread, loop_config, stop_query
from streaming.dev.demo.monitor import GroupMonitor, Sample
from streaming.dev.workload import Workload, WorkloadOptions
from streaming.job import query as job_query

from .java_client import JavaMember, build_assignor, compile_member, wait_for

pytestmark = pytest.mark.integration

PARTITIONS = 12
RATE = 120
"""records/s each Java consumer processes: a third of the load, not range's first share (Zipf over 300/s)."""


def final_max_lag(samples: list[Sample], window_s: float = 6.0) -> float:
    """The mean of the max consumer lag over the samples of the last ``window_s`` seconds."""
    last = [s.max_lag for s in samples if s.t >= samples[-1].t - window_s]
    return sum(last) / len(last)


def test_java_group_applies_the_jobs_recommendation_and_lag_falls_below_range(cfg, spark, tmp_path):
    tag = uuid.uuid4().hex[:6]
    lcfg = loop_config(cfg, str(tmp_path / "tables"), str(tmp_path / "checkpoints"), cooldown_s=600,
                       trigger_interval="2 seconds", min_total_lag=300)
    assignor = build_assignor()
    classes = compile_member(tmp_path / "classes", assignor)
    kafka_clients.ensure_rebalancer_topics(lcfg)
    bootstrap = lcfg.kafka.bootstrap_servers
    names = {"range": f"jloop-range-{tag}", "app": f"jloop-app-{tag}"}
    load = {k: Workload(lcfg, WorkloadOptions(topic=n, group=n, partitions=PARTITIONS, produce_rate=300.0, zipf=1.0,
                                              consumers=0, replication_factor=1), out=None)
            for k, n in names.items()}
    feed = RecommendationFeed(lcfg).start()
    recs: list[dict] = []
    feed.add_listener(lambda r: recs.append(r) if r["group"] == names["app"] else None)
    members: dict[str, list[JavaMember]] = {"range": [], "app": []}
    query, printer, collector = None, None, None

    def held(kind: str) -> dict[str, set]:
        return {m.client_id: m.assignment() for m in members[kind] if m.proc.poll() is None}

    def logs() -> list[str]:
        return [ln for m in members["app"] for ln in m.output() if ln.startswith("log ")]

    try:
        query, printer = job_query.start(spark, lcfg, checkpoint=lcfg.checkpoint_path("jloop"))
        assert feed.wait_ready(30)
        for w in load.values():
            w.start()
        for i, rack in enumerate("abc"):
            members["range"].append(JavaMember(classes, bootstrap, names["range"], names["range"], "classic", rack,
                                               f"r-{i}-{tag}", rate=RATE))
            members["app"].append(JavaMember(classes, bootstrap, names["app"], names["app"], "classic", rack,
                                             f"a-{i}-{tag}", assignor_classes=assignor,
                                             trigger_topic=lcfg.kafka.trigger_topic, rate=RATE))
        for kind, topic in names.items():
            wait_for(lambda k=kind, t=topic: sorted(tp for tps in held(k).values() for tp in tps)
                     == [(t, p) for p in range(PARTITIONS)], 120, 0.5, f"the {kind} group assigned")
        assert any("no recommendation for the group yet" in ln for ln in logs()), logs()

        t0 = time.monotonic()
        mon = {k: GroupMonitor(n, t0) for k, n in names.items()}
        collector = CollectorThread(lcfg, list(mon.values()), interval_s=2.0).start()

        # 1. the job's lag-skew recommendation reaches the Java leader, which applies it
        wait_for(lambda: any("applying recommendation v" in ln for ln in logs()), 240, 1.0,
                 "the Java leader applying a recommendation")
        t_applied = time.monotonic() - t0
        rec = recs[-1]
        assert "lag_skew" in rec["triggers"]
        wanted = {e["client_id"]: {(t, p) for t, p in e["partitions"]} for e in rec["assignment"]}
        wait_for(lambda: held("app") == wanted, 60, 0.5, "the recommended assignment")

        # 2. the max consumer lag falls below half of what the same load reaches under range
        end = max(t_applied + 45.0, 90.0)
        time.sleep(max(0.0, end - (time.monotonic() - t0)))
        range_lag, app_lag = final_max_lag(mon["range"].samples), final_max_lag(mon["app"].samples)
        peak_before = max([s.max_lag for s in mon["app"].samples if s.t <= t_applied] or [0])
        print(f"Java group: recommendation v{rec['version']} applied at {t_applied:.0f}s; max consumer lag at "
              f"{end:.0f}s: range {range_lag:,.0f}, recommendation {app_lag:,.0f} (peak before {peak_before:,})")
        assert held("app") == wanted
        assert app_lag < range_lag / 2, (app_lag, range_lag)

        # 3. no newer recommendation from here on: a member leaves -> the leader falls back and says why
        collector.stop()
        collector = None
        gone = members["app"][2]
        gone.stop()
        wait_for(lambda: len(held("app")) == 2 and set().union(*held("app").values())
                 == {(names["app"], p) for p in range(PARTITIONS)}, 90, 0.5, "the two remaining members")
        named = f"recommended member {gone.client_id} is no longer in the group"
        assert any(ln.startswith("log WARN") and named in ln and "cooperative-sticky fallback" in ln
                   for ln in logs()), logs()
    finally:
        with contextlib.ExitStack() as cleanup:
            cleanup.callback(feed.stop)
            for w in load.values():
                cleanup.callback(w.stop)
            for group_members in members.values():
                for m in group_members:
                    cleanup.callback(m.stop)
            if collector is not None:
                cleanup.callback(collector.stop)
            if query is not None:
                cleanup.callback(spark.streams.removeListener, printer)
                cleanup.callback(stop_query, query)

"""The KIP-848 server-side assignor (clients/java ServerAssignor, docs/server-assignor.md).

1. Its core decides every shared fit vector (tests/data/fit) as streaming/apply/plan.py does, falls back on
   the job's load model as streaming/apply/fallback.py does (tests/data/fallback), and handles the shapes of
   Kafka's own assignor tests (empty group, topic deleted, partitions added, a nudge member, no feed) with
   Kafka's uniform assignor as the fallback.
2. On a one-broker embedded cluster that loads it (``rebalancer kafka up --server-assignor``'s cluster), two
   groups of three Java KIP-848 consumers under the same skewed load, one asking for ``uniform``, one for
   ``rebalancer``: the real job's recommendation becomes the second group's assignment, as ConsumerGroupDescribe
   reports it, and its max lag ends below half of uniform's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from streaming import config, jvm
from streaming.embedded.broker_config import ASSIGNOR_BUILD, build_jar
from streaming.kafka_clients import factories as kafka_clients

from .groups import by_client, described
from .java_client import JavaMember, compile_remote_member, wait_for

VECTORS = Path(__file__).parents[1] / "data" / "fit"
FALLBACK_VECTORS = Path(__file__).parents[1] / "data" / "fallback"
PARTITIONS = 12
RATE = 120
"""records/s each Java consumer processes: a third of the load, less than the busiest share under uniform."""


def _cases() -> dict[tuple[str, str], dict]:
    build_jar()
    classpath = ":".join([str(ASSIGNOR_BUILD / "classes"), str(ASSIGNOR_BUILD / "test-classes"),
                          jvm.kafka_classpath()])
    out = subprocess.run([jvm.java_executable(), "-Xmx128m", "-cp", classpath,
                          "io.github.kafkarebalancer.ServerAssignorCases", str(VECTORS), str(FALLBACK_VECTORS)],
                         check=True, capture_output=True, text=True, timeout=120).stdout
    return {(d["case"], d["name"]): d["outcome"] for d in map(json.loads, out.splitlines())}


def _flat(outcome: dict) -> list[str]:
    return [tp for tps in outcome["assignment"].values() for tp in tps]


@pytest.mark.java
def test_the_server_assignor_decides_the_fit_vectors_and_kafkas_assignor_shapes():
    cases = _cases()
    for path in VECTORS.glob("*.json"):
        want = json.loads(path.read_text())["expect"]
        got = cases["vector", path.stem]
        if want["applied"]:
            assert got["applied"], (path.stem, got)
            assert got["assignment"] == {m: sorted(f"{t}-{p}" for t, p in tps)
                                         for m, tps in want["assignment"].items()}, path.stem
        else:
            assert (got["applied"], got["kind"]) == (False, want["reason"]), (path.stem, got)
    for path in FALLBACK_VECTORS.glob("*.json"):
        want = json.loads(path.read_text())["expect"]
        got = cases["fallback", path.stem]
        assert not got["applied"], path.stem
        if want["fallback"] == "default":  # the given fallback (one that assigns nothing) ran
            assert (got["assignor"], got["assignment"]) == ("none", {}), (path.stem, got)
        else:
            assert got["assignor"] == "load-model", (path.stem, got)
            assert got["assignment"] == {m: sorted(f"{t}-{p}" for t, p in tps)
                                         for m, tps in want["assignment"].items()}, path.stem
    shape = {name: out for (kind, name), out in cases.items() if kind == "shape"}
    every = [f"t-{p}" for p in range(4)]
    assert shape["fits"] == {"applied": True, "kind": None, "assignor": "recommendation",
                             "assignment": {"m1": ["t-0", "t-1", "t-2"], "m2": ["t-3"]}}
    # no member left to match the recommendation's member ids: not applied, nothing to assign
    assert shape["empty_group"] == {"applied": False, "kind": "no_identity", "assignor": "uniform", "assignment": {}}
    # partitions added: the recommendation misses t-4 and t-5, so uniform spreads all six
    added = shape["partitions_added"]
    assert (added["applied"], added["kind"]) == (False, "partition_missing")
    assert sorted(_flat(added), key=lambda s: int(s[2:])) == [f"t-{p}" for p in range(6)]
    assert sorted(len(v) for v in added["assignment"].values()) == [3, 3]
    deleted = shape["topic_deleted"]  # the recommendation gives u-0, whose topic is gone
    assert (deleted["applied"], deleted["kind"]) == (False, "not_subscribed")
    assert sorted(_flat(deleted)) == every
    nudge = shape["fits_with_a_nudge_member"]
    assert nudge["applied"] and nudge["assignment"] == {"m1": ["t-0", "t-1", "t-2"], "m2": ["t-3"], "n1": []}
    fallback = shape["uniform_with_a_nudge_member"]
    assert not fallback["applied"] and fallback["assignment"]["n1"] == []
    assert sorted(len(fallback["assignment"][m]) for m in ("m1", "m2")) == [3, 3]
    unknown = shape["feed_unknown"]
    assert (unknown["applied"], unknown["kind"]) == (False, "no_view")
    assert sorted(_flat(unknown)) == every


@pytest.mark.integration
def test_a_kip848_group_on_the_server_assignor_takes_the_jobs_recommendation(assignor_cluster, spark, tmp_path):
    server = assignor_cluster
    # the session's shared SparkSession (the Kafka source takes this cluster's bootstrap per query); stopping
    # a session of its own would stop that shared one too (getOrCreate returns it) and fail later tests
    from streaming.apply.feed import RecommendationFeed
    from streaming.dev.demo.loop import CollectorThread, loop_config, stop_query
    from streaming.dev.demo.monitor import GroupMonitor, final_max_lag
    from streaming.dev.workload import Workload, WorkloadOptions
    from streaming.job import query as job_query

    base = config.load()
    cfg = dataclasses.replace(base, kafka=dataclasses.replace(base.kafka, bootstrap_servers=server.bootstrap_servers))
    lcfg = loop_config(cfg, str(tmp_path / "tables"), str(tmp_path / "checkpoints"), cooldown_s=600,
                       trigger_interval="2 seconds", min_total_lag=300)
    classes = compile_remote_member(tmp_path / "classes")
    kafka_clients.ensure_rebalancer_topics(lcfg)
    tag = uuid.uuid4().hex[:6]
    names = {"uniform": f"srv-uniform-{tag}", "rebalancer": f"srv-app-{tag}"}
    load = {k: Workload(lcfg, WorkloadOptions(topic=n, group=n, partitions=PARTITIONS, produce_rate=300.0, zipf=1.0,
                                              consumers=0, replication_factor=1), out=None)
            for k, n in names.items()}
    feed = RecommendationFeed(lcfg.kafka).start()
    recs: list[tuple[float, dict]] = []
    feed.add_listener(lambda r: recs.append((time.monotonic(), r)) if r["group"] == names["rebalancer"] else None)
    members: dict[str, list[JavaMember]] = {k: [] for k in names}
    query, printer, collector = None, None, None

    def held(kind: str) -> dict[str, set]:
        return {m.client_id: m.assignment() for m in members[kind] if m.proc.poll() is None}

    try:
        query, printer = job_query.start(spark, lcfg, checkpoint=lcfg.checkpoint_path("srvassign"))
        assert feed.wait_ready(30)
        # the topics first, the records only once both groups hold their partitions: a backlog made while six
        # JVMs start (tens of seconds on a loaded machine) sits mostly on the hot partition, which no assignment
        # drains faster than its owner's spare capacity, so the end figures would measure the machine's start-up
        # time rather than the assignment
        kafka_clients.ensure_topics(lcfg, {n: {"num_partitions": PARTITIONS, "replication_factor": 1}
                                           for n in names.values()})
        for kind, group in names.items():
            for i, rack in enumerate("abc"):
                members[kind].append(JavaMember(classes, server.bootstrap_servers, group, group, "consumer", rack,
                                                f"{kind[0]}-{i}-{tag}", rate=RATE, remote_assignor=kind))
        for kind, topic in names.items():
            wait_for(lambda k=kind, t=topic: sorted(tp for tps in held(k).values() for tp in tps)
                     == [(t, p) for p in range(PARTITIONS)], 120, 0.5, f"the {kind} group assigned")
        for w in load.values():
            w.start()
        t0 = time.monotonic()
        mon = {k: GroupMonitor(n, t0) for k, n in names.items()}
        collector = CollectorThread(lcfg, list(mon.values()), interval_s=2.0).start()

        # 1. the job recommends; the broker's assignor makes it the group's target, and the members run it
        wait_for(lambda: recs, 180, 1.0, "a recommendation for the rebalancer group")
        t_rec, rec = recs[0]
        assert "lag_skew" in rec["triggers"]

        def applied() -> bool:
            latest = recs[-1][1]
            want = {e["client_id"]: {(t, p) for t, p in e["partitions"]} for e in latest["assignment"]}
            d = described(server.bootstrap_servers, names["rebalancer"])
            return by_client(d, "assignment") == want and by_client(d, "target_assignment") == want

        wait_for(applied, 90, 0.5, "the recommendation as the group's assignment (ConsumerGroupDescribe)")
        t_applied = time.monotonic()
        delay = t_applied - t_rec
        wanted = {e["client_id"]: {(t, p) for t, p in e["partitions"]} for e in recs[-1][1]["assignment"]}
        # the coordinator records the new assignment when a member acknowledges it in a heartbeat; the
        # member's own report of it comes from its next poll(), a moment later
        wait_for(lambda: held("rebalancer") == wanted, 30, 0.5, "the members holding the recommendation")
        broker_log = server.nodes[0].log_file.read_text(errors="replace")
        assert "a member joined and left to have it computed again" in broker_log
        assert f"recommendation v{recs[-1][1]['version']} is the target assignment of 3 member(s)" in broker_log

        # 2. the max consumer lag falls below half of what the same load reaches under uniform
        end = t_applied - t0 + 45.0
        time.sleep(max(0.0, end - (time.monotonic() - t0)))
        uniform_lag, app_lag = final_max_lag(mon["uniform"].samples), final_max_lag(mon["rebalancer"].samples)
        print(f"server assignor: recommendation v{recs[-1][1]['version']} read at {t_rec - t0:.0f}s, the group's "
              f"assignment {delay:.1f}s later; max consumer lag at {end:.0f}s: uniform {uniform_lag:,.0f}, "
              f"rebalancer {app_lag:,.0f}")
        assert app_lag < uniform_lag / 2, (app_lag, uniform_lag)
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

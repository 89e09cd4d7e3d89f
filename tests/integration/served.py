"""Helpers of test_served.py: the shared job's handle (:class:`Served`), and the librdkafka case's
groups (:func:`running`), its wait for the recommendation applied (:func:`applied`) and its classic
group's rows and ``describe`` (:func:`classic_said`)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from typing import Any

from streaming import config
from streaming.contracts import serving
from streaming.contracts.tables import RECOMMENDATIONS
from streaming.kafka_clients import factories as kafka_clients

from .groups import by_client, described
from .java_client import wait_for
from .rdk_worker import PacedRdkConsumer

PARTITIONS = 12
PRODUCE = 300.0
ZIPF = 1.0
RATE = 120.0
"""records/s each consumer processes: a third of the load and more, less than any four partitions
that include the hottest (its 97/s and the three coldest make 123/s), so every four-each split
leaves one consumer behind."""
WINDOW_S = 40.0
KINDS = ("rebalancer", "uniform", "classic")


@dataclasses.dataclass
class Served:
    """The assignor cluster, the job's config on it (tables, checkpoints, trigger topic) and its
    trigger feed."""

    cluster: Any
    cfg: config.Config
    feed: Any

    def recommendations(self, group: str) -> list[tuple[float, dict]]:
        """(monotonic time read, recommendation) of ``group`` from the feed, filled from now on."""
        recs: list[tuple[float, dict]] = []
        self.feed.add_listener(lambda r: recs.append((time.monotonic(), r)) if r["group"] == group
                               else None)
        return recs


def _conf(kind: str, bootstrap: str, group: str, client_id: str, rack: str) -> dict:
    base = {"bootstrap.servers": bootstrap, "group.id": group, "client.id": client_id,
            "client.rack": rack, "topic.metadata.refresh.interval.ms": 5000}
    if kind == "classic":
        return {**base, "partition.assignment.strategy": "cooperative-sticky",
                "session.timeout.ms": 10000, "heartbeat.interval.ms": 1000}
    return {**base, "group.protocol": "consumer", "group.remote.assignor": kind}


def p95(values: list[int]) -> float:
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)])


def _rows(spark, cfg, group: str) -> list:
    from pyspark.errors import AnalysisException

    try:
        return spark.read.format("delta").load(cfg.table_path(RECOMMENDATIONS)) \
            .where(f"`group` = '{group}'").collect()
    except AnalysisException:  # the job has not written the table yet
        return []


def _describe(cfg, groups: dict[str, str]) -> dict[str, dict]:
    """``rebalancer describe --format json`` of ``groups`` (kind -> group), per kind; a command of
    its own, as an operator runs it (the case runs in a thread: this process's stdout is not its
    own)."""
    pattern = "^(" + "|".join(groups.values()) + ")$"
    done = subprocess.run([sys.executable, "-m", "streaming.cli", "describe", "--bootstrap",
                           cfg.kafka.bootstrap_servers, "--groups", pattern, "--format", "json",
                           "--lag-seconds-timeout", "0",
                           "--conf", f"paths.tables={cfg.paths.tables}"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    out = {g["group"]: g for g in json.loads(done.stdout)["groups"]}
    return {kind: out[group] for kind, group in groups.items()}


@dataclasses.dataclass
class Run:
    """The collector and the three librdkafka groups on one topic, started by :func:`running`."""

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
def running(served: Served) -> Iterator[Run]:
    from streaming.dev.demo.loop import CollectorThread
    from streaming.dev.demo.monitor import GroupMonitor
    from streaming.dev.workload import Workload, WorkloadOptions

    lcfg, bootstrap, tag = served.cfg, served.cluster.bootstrap_servers, uuid.uuid4().hex[:6]
    groups = {kind: f"rdk-{kind}-{tag}" for kind in KINDS}
    recs = served.recommendations(groups["rebalancer"])
    run = Run(lcfg, bootstrap, f"rdk-{tag}", groups, {k: [] for k in KINDS}, recs)
    load = Workload(lcfg, WorkloadOptions(topic=run.topic, group=f"rdk-producer-{tag}",
                                          partitions=PARTITIONS, produce_rate=PRODUCE, zipf=ZIPF,
                                          consumers=0, replication_factor=1), out=None)
    with contextlib.ExitStack() as cleanup:
        # the topic first, records only once every group holds its partitions (test_served.py says
        # why)
        kafka_clients.ensure_topics(lcfg, {run.topic: {"num_partitions": PARTITIONS,
                                                       "replication_factor": 1}})
        for kind, group in run.groups.items():
            for i, rack in enumerate("abc"):
                run.members[kind].append(PacedRdkConsumer(_conf(kind, bootstrap, group,
                                                                f"{kind[0]}-{i}-{tag}", rack),
                                                          run.topic, RATE))
                cleanup.callback(run.members[kind][-1].stop)
        everything = [(run.topic, p) for p in range(PARTITIONS)]
        for kind in KINDS:
            wait_for(lambda k=kind: sorted(tp for tps in run.held(k).values() for tp in tps)
                     == everything, 120, 0.5, f"the {kind} group assigned")
        load.start()
        cleanup.callback(load.stop)
        run.t0 = time.monotonic()
        run.monitors = {k: GroupMonitor(g, run.t0) for k, g in run.groups.items()}
        cleanup.callback(CollectorThread(lcfg, list(run.monitors.values()),
                                         interval_s=2.0).start().stop)
        yield run


def first_skew(recs: list[tuple[float, dict]]) -> tuple[float, dict]:
    """The first ``lag_skew`` recommendation of ``recs`` (:meth:`Served.recommendations`), waited
    for. A member that joins the group after the job first saw it gives a ``membership_change``
    recommendation before it (applied too, as the group's target): right, but the skew's is what
    these cases measure (a suite run failed on taking the first one for it). Such a recommendation
    also starts the group's cooldown (600 s here), so no ``lag_skew`` one can follow within the
    wait: then it is the one the group takes (a CI run failed on waiting for a skew's after it: v1
    ``membership_change``, 4 partitions moved, then nothing)."""
    def found() -> tuple[float, dict] | None:
        held = list(recs)
        skew = next(((t, r) for t, r in held if "lag_skew" in r["triggers"]), None)
        return skew or next(((t, r) for t, r in held if r.get("partitions_moved")), None)

    try:
        wait_for(found, 180, 1.0, "a lag_skew recommendation for the rebalancer group")
    except AssertionError as e:  # say what came instead: the cause of a miss is in them
        seen = [(r.get("version"), sorted(r.get("triggers") or ()), r.get("partitions_moved"))
                for _, r in recs]
        raise AssertionError(f"{e}; the group's recommendations (version, triggers, partitions "
                             f"moved): {seen}") from None
    first = found()
    assert first is not None
    return first


def applied(run: Run, cluster) -> tuple[dict, float]:
    """The first ``lag_skew`` recommendation once ConsumerGroupDescribe and the members hold it; and
    when it was applied."""
    _, rec = first_skew(run.recs)
    wanted = {e["client_id"]: {(t, p) for t, p in e["partitions"]} for e in rec["assignment"]}
    group = run.groups["rebalancer"]

    def now_applied() -> bool:
        d = described(run.bootstrap, group)
        return by_client(d, "assignment") == wanted and by_client(d, "target_assignment") == wanted

    wait_for(now_applied, 90, 0.5,
             "the recommendation as the group's assignment (ConsumerGroupDescribe)")
    t_applied = time.monotonic()
    wait_for(lambda: run.held("rebalancer") == wanted, 30, 0.5,
             "the librdkafka members holding the recommendation")
    # the cooldown: one recommendation, so the one applied is the one measured
    assert len(run.recs) == 1
    broker_log = cluster.nodes[0].log_file.read_text(errors="replace")
    assert f"group {group}: recommendation v{rec['version']} is the target assignment of " \
           "3 member(s)" in broker_log
    return rec, t_applied


def classic_said(spark, run: Run) -> None:
    """The classic group is recommended for too, its row unapplied with what would serve it;
    describe agrees."""
    wait_for(lambda: _rows(spark, run.cfg, run.groups["classic"]), 90, 2.0,
             "a recommendation row for the classic group")
    row = _rows(spark, run.cfg, run.groups["classic"])[0]
    assert row["serving"].startswith(serving.UNAPPLIED + ": ") and "librdkafka" in row["serving"]
    assert "group.protocol=consumer" in row["serving"]
    shown = _describe(run.cfg, run.groups)
    assert {k: g["serving"]["kind"] for k, g in shown.items()} == {
        "rebalancer": serving.SERVED, "uniform": serving.UNAPPLIED, "classic": serving.UNAPPLIED}
    assert "group.protocol=consumer" in shown["classic"]["serving"]["reason"]

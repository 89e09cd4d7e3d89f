"""Modes on the real stack: one job run where a group matching an ``approve`` override gets a
proposal and a group left in ``observe`` (the default) gets a Delta row only; two real kafka-python
consumers of the approve group running the apply helpers do not move for the proposal (``verify``
says awaiting approval), then ``rebalancer approve`` publishes the approval and the helpers apply it
(``verify`` says applied)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from kafka import KafkaConsumer

from streaming.apply import plan
from streaming.apply.assignor import strategy
from streaming.apply.feed import RecommendationFeed
from streaming.apply.rejoin import RejoinOnRecommendation, find_assignor
from streaming.contracts import events as ev
from streaming.contracts.recommendation import MEMBER_FIGURES_TYPE
from streaming.contracts.tables import RECOMMENDATIONS, RECOMMENDATIONS_DDL
from streaming.job import query
from streaming.kafka_clients import factories as kafka_clients

from .jobrun import feed
from .test_job import STEP, T0, job_config, lag_poll, produce, rows

SKEWED = {0: 9000, 1: 8000, 2: 100, 3: 100}


def wait_until(f: Callable[[], Any], timeout_s: float, what: str) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = f()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


class Member(threading.Thread):
    """A consumer of the group with the apply helpers: RecommendationAssignor (fallback range) and
    the rejoin helper, polling until stopped."""

    def __init__(self, jc, group: str, topic: str, client_id: str,
                 recs: RecommendationFeed) -> None:
        super().__init__(daemon=True, name=client_id)
        self.stopping = threading.Event()
        self.consumer = KafkaConsumer(
            topic, group_id=group, client_id=client_id,
            bootstrap_servers=jc.kafka.bootstrap_servers,
            partition_assignment_strategy=strategy(recs, group, client_id=client_id,
                                                   fallback="range"),
            enable_auto_commit=False, session_timeout_ms=10000, heartbeat_interval_ms=1000,
            metadata_max_age_ms=2000)
        self.assignor = find_assignor(self.consumer)
        self.helper = RejoinOnRecommendation(self.consumer, recs, group, min_interval_s=1.0,
                                             check_s=0.2)

    def run(self) -> None:
        self.helper.start()
        while not self.stopping.is_set():
            self.consumer.poll(timeout_ms=200)

    def stop(self) -> None:
        self.stopping.set()
        self.join(20)
        self.helper.stop()
        self.consumer.close(autocommit=False)


def cli(jc, *args: str) -> subprocess.CompletedProcess:
    conf = {"kafka.trigger_topic": jc.kafka.trigger_topic, "paths.tables": jc.paths.tables}
    return subprocess.run([sys.executable, "-m", "streaming.cli", *args,
                           "--bootstrap", jc.kafka.bootstrap_servers,
                           *(a for k, v in conf.items() for a in ("--conf", f"{k}={v}"))],
                          capture_output=True, text=True, timeout=120)


def test_a_proposal_moves_nothing_until_approved_then_the_helpers_apply_it(spark, cfg):
    tag = uuid.uuid4().hex[:6]
    # the events are stamped in 2025 and a proposal expires an hour of event time after it was made
    # (streaming.proposals.expiry): its expiry is put past today here
    jc = job_config(cfg, f"modes{tag}", mode="observe", mode_overrides={"^approve-": "approve"},
                    proposal_expiry_s=10 * 365 * 86400.0)
    topic, approved, observed = f"modes.{tag}", f"approve-{tag}", f"observe-{tag}"
    kafka_clients.ensure_topics(jc, {topic: {"num_partitions": 4, "replication_factor": 1}})
    clients = [f"{tag}-c0", f"{tag}-c1"]

    # both groups: c0 holds the two hot partitions for 5 polls -> one lag_skew recommendation each
    events = []
    for g in (approved, observed):
        # as the collector names the consumers started below (host without Java's slash): the same
        # members
        members = [ev.member_entry(f"{c}-old", [topic], [(topic, p) for p in ps], client_id=c,
                                   host="127.0.0.1")
                   for c, ps in zip(clients, ([0, 1], [2, 3]), strict=True)]
        events.append(ev.members_event(T0, g, 1, "range", members))
        for i in range(5):
            events += lag_poll(T0 + i * STEP, g, SKEWED, topic=topic)
    produce(jc, events)
    query.run(spark, jc, available_now=True)

    recs = {r["group"]: r for r in rows(spark, jc, RECOMMENDATIONS)}
    assert {g: (r["version"], r["mode"]) for g, r in recs.items()} == {approved: (1, "approve"),
                                                                       observed: (1, "observe")}
    published = feed(jc)
    assert [(m["group"], m["version"], m["status"]) for m in published] \
        == [(approved, 1, "proposed")]
    wanted = {e["client_id"]: sorted(tuple(tp) for tp in e["partitions"])
              for e in published[0]["assignment"]}

    with RecommendationFeed(jc.kafka) as recs_feed:
        assert recs_feed.wait_ready(30)
        group = [Member(jc, approved, topic, c, recs_feed) for c in clients]
        for m in group:
            m.start()
        try:
            def settled() -> bool:
                gens = {m.assignor.generation for m in group}
                owned = [tp for m in group for tp in m.assignor.owned]
                return len(gens) == 1 and None not in gens and len(owned) == 4

            wait_until(settled, 60, "both members assigned")
            # the proposal is on the feed, and nobody acts on it: the fallback (range), no rebalance
            # asked for
            assert plan.status_of(recs_feed.latest(approved)) == "proposed"
            time.sleep(3)
            assert all(m.assignor.source == "fallback" and m.assignor.applied_version is None
                       for m in group)
            assert [m.helper.requests for m in group] == [[], []]
            leader = [m.assignor.last_decision for m in group
                      if m.assignor.last_decision is not None]
            assert leader and leader[-1].reason == "recommendation v1 is proposed, not approved"

            result = cli(jc, "verify", approved)
            assert result.returncode == 7, result.stderr
            assert f"awaiting approval (rebalancer approve {approved} --version 1)" in result.stdout

            result = cli(jc, "approve", approved, "--version", "1")
            assert result.returncode == 0, result.stderr
            assert "approved" in result.stdout

            wait_until(lambda: all(m.assignor.applied_version == 1 for m in group), 60,
                       "the approval applied")
            assert {m.consumer.config["client_id"]: sorted(m.assignor.owned)
                    for m in group} == wanted
            # a member asked for the rebalance
            assert sum(len(m.helper.requests) for m in group) >= 1
            result = cli(jc, "verify", approved)
            assert result.returncode == 0 and "applied: all 4 partitions" in result.stdout, \
                result.stdout
        finally:
            for m in group:
                m.stop()

    # the feed keeps the approval as the group's latest record; the observe group still has nothing
    # to decide on
    latest = [m for m in feed(jc) if m["group"] == approved][-1]
    assert latest["status"] == "approved" and isinstance(latest["decided_at"], int)
    result = cli(jc, "reject", observed)
    assert result.returncode != 0 and f"no recommendation of group {observed}" in result.stderr
    assert latest["recommendation_id"] == recs[approved]["recommendation_id"]


def test_a_recommendations_table_from_before_modes_gets_the_columns_added_since(spark, cfg):
    from streaming.operations import delta_tables

    jc = job_config(cfg, f"modesold{uuid.uuid4().hex[:6]}")
    old_ddl = RECOMMENDATIONS_DDL.replace(", mode STRING", "").replace(", rack_placement "
                                                                       "STRING", "").replace(
        f", member_figures {MEMBER_FIGURES_TYPE}", "")
    assert "member_figures" not in old_ddl
    location = jc.table_path(RECOMMENDATIONS)
    spark.sql(f"CREATE TABLE delta.`{location}` ({old_ddl}) USING DELTA "
              "TBLPROPERTIES (delta.enableChangeDataFeed = true)")
    spark.createDataFrame([("g", 1)], "`group` STRING, version "
                                      "LONG").write.format("delta").mode("append").save(
        location)  # Delta fills the other columns with NULL
    delta_tables.prepare(spark, jc, jc.checkpoint_path("old"))
    assert [(r["group"], r["version"], r["mode"], r["rack_placement"], r["member_figures"])
            for r in rows(spark, jc, RECOMMENDATIONS)] == [("g", 1, None, None, None)]

"""Proposals reviewed on the real stack (Kafka, Spark, Delta, the CLI as a child process): one job
run in ``approve`` mode makes a proposal for two groups. ``rebalancer recommendations --diff`` shows
the fresh one member by member, each figure checked against the events and the Delta row. Real
consumers of that group join under the proposal's members: it awaits approval; a third joins: it has
expired (``verify`` exit 10, ``approve`` refuses with the reason, the feed keeps it a proposal). The
other group's proposal was made on observations older than ``policy.proposal_expiry_s``: expired by
age while its members are the same."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import threading
import time
import uuid

import pytest
from kafka import KafkaConsumer

from streaming.contracts import events as ev
from streaming.contracts.tables import RECOMMENDATIONS
from streaming.dev.produce import produce
from streaming.job import query
from streaming.kafka_clients import factories as kafka_clients
from streaming.kafka_clients.join_guard import keep_rejoin_until_joined

from .jobrun import feed
from .test_job import STEP, job_config, lag_poll, rows
from .test_modes import cli, wait_until

pytestmark = pytest.mark.integration

LAGS = {0: 9000, 1: 8000, 2: 100, 3: 100}
OWNED = {"c0": [0, 1], "c1": [2, 3]}
RACKS = {"c0": "a", "c1": "b"}
REPLICAS = [["a"], ["b"], ["b"], ["c"]]
EXPIRY_S = 1800.0


class Consumer(threading.Thread):
    """A plain member of the group (range assignor), polling until stopped. A leader that had no
    metadata of the topic yet assigns nothing; the short metadata age has it see the topic, and
    rebalance, within seconds."""

    def __init__(self, bootstrap: str, group: str, topic: str, client_id: str) -> None:
        super().__init__(daemon=True, name=client_id)
        self.stopping = threading.Event()
        # guarded as every group consumer of the project: kafka-python 3.0.12 can leave a member of
        # a fresh group "rebalancing" for good (streaming.kafka_clients.join_guard,
        # tests/integration/test_join_guard.py)
        self.consumer = keep_rejoin_until_joined(KafkaConsumer(
            topic, group_id=group, client_id=client_id, bootstrap_servers=bootstrap,
            enable_auto_commit=False, session_timeout_ms=10000, heartbeat_interval_ms=1000,
            metadata_max_age_ms=2000))

    def run(self) -> None:
        while not self.stopping.is_set():
            self.consumer.poll(timeout_ms=200)

    def stop(self) -> None:
        self.stopping.set()
        self.join(20)
        self.consumer.close(autocommit=False)


def recommendations(jc, *args: str) -> subprocess.CompletedProcess:
    """``rebalancer recommendations ARGS`` on the job's table (it reads Delta only: no cluster to
    name)."""
    return subprocess.run([sys.executable, "-m", "streaming.cli", "recommendations", *args,
                           "--conf", f"paths.tables={jc.paths.tables}"], capture_output=True,
                           text=True, timeout=120)


def group_events(group: str, topic: str, tag: str, ts0: int) -> list[dict]:
    """c0 (rack a) holds the two hot partitions for five polls: a lag_skew proposal. Members are
    named as the collector names the consumers started later (client id, host without Java's
    slash)."""
    members = [ev.member_entry(f"{tag}-{c}-old", [topic], [(topic, p) for p in ps],
                               client_id=f"{tag}-{c}", host="127.0.0.1", rack=RACKS[c])
               for c, ps in OWNED.items()]
    out = [ev.members_event(ts0, group, 1, "range", members),
           ev.partitions_event(ts0, group, topic,
                               [ev.partition_entry(p, 1, [1], r) for p, r in enumerate(REPLICAS)])]
    for i in range(5):
        out += lag_poll(ts0 + i * STEP, group, LAGS, topic=topic)
    return out


@pytest.fixture(scope="module")
def proposed(spark, cfg):
    tag = uuid.uuid4().hex[:6]
    jc = job_config(cfg, f"prop{tag}", mode="approve", proposal_expiry_s=EXPIRY_S)
    # the aged group's events are 45 minutes older than the fresh one's: a watermark that keeps them
    # all
    jc = dataclasses.replace(jc, job=dataclasses.replace(jc.job, watermark_delay="2 hours"))
    topic, fresh, aged = f"prop.{tag}", f"fresh-{tag}", f"aged-{tag}"
    kafka_clients.ensure_topics(jc, {topic: {"num_partitions": 4, "replication_factor": 1}})
    now = int(time.time() * 1000) - 5 * STEP
    produce(jc, group_events(fresh, topic, tag, now)
            + group_events(aged, topic, tag, now - 45 * 60_000))
    query.run(spark, jc, available_now=True)
    recs = {r["group"]: r.asDict(recursive=True) for r in rows(spark, jc, RECOMMENDATIONS)}
    assert {g: (r["version"], r["mode"]) for g, r in recs.items()} \
        == {fresh: (1, "approve"), aged: (1, "approve")}
    return jc, tag, topic, fresh, aged, recs


def test_the_diff_shows_each_member_as_the_row_and_the_events_say(proposed):
    jc, tag, topic, fresh, _, recs = proposed
    row = recs[fresh]
    out = recommendations(jc, "--group", fresh, "--diff", "--format", "json")
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout)
    assert (found["group"], found["version"]) == (fresh, 1)
    gets = {e["client_id"]: {p["partition"] for p in e["partitions"]} for e in row["assignment"]}
    by = {m["label"]: m for m in found["members"]}
    assert set(by) == {f"{tag}-c0", f"{tag}-c1"}
    crosses = lambda c, ps: sum(1 for p in ps if RACKS[c] not in REPLICAS[p])  # noqa: E731
    for c, owned in OWNED.items():
        m, wanted = by[f"{tag}-{c}"], gets[f"{tag}-{c}"]
        assert m["gains"] == [f"{topic}-{p}" for p in sorted(wanted - set(owned))]
        assert m["loses"] == [f"{topic}-{p}" for p in sorted(set(owned) - wanted)]
        assert m["keeps"] == len(set(owned) & wanted)
        # horizon 0: the lag
        assert m["load"] == [sum(LAGS[p] for p in owned), sum(LAGS[p] for p in wanted)]
        assert m["cross_rack"] == [crosses(c, owned), crosses(c, wanted)]
        assert m["rack"] == RACKS[c]
    members = found["members"]
    assert found["moved"] == row["partitions_moved"] >= 1 and found["new"] == 0
    assert max(m["load"][0] for m in members) == row["before_max_lag"] == 17_000
    assert max(m["load"][1] for m in members) == row["after_max_lag"] < 17_000
    assert [sum(m["cross_rack"][i] for m in members) for i in (0, 1)] == \
        [row["before_cross_rack"], row["after_cross_rack"]]
    for i, when in enumerate(("before", "after")):
        each = [m["catch_up_s"][i] for m in members]
        assert None not in each and max(each) == pytest.approx(row[f"{when}_catch_up_s"], rel=1e-12)

    table = recommendations(jc, "--group", fresh, "--diff")
    assert table.returncode == 0, table.stderr
    print(table.stdout)
    head, columns, *lines = table.stdout.splitlines()
    assert head.startswith(f"Recommendation v1 of group {fresh} (approve)") and "17,000 ->" in head
    assert columns.split()[:5] == ["MEMBER", "RACK", "GAINS", "LOSES", "KEEPS"]
    assert sorted(line.split()[0] for line in lines) == [f"{tag}-c0", f"{tag}-c1"]
    assert recommendations(jc, "--diff").returncode == 2  # --diff needs --group


def test_a_proposal_expires_when_a_member_joins_and_approve_refuses_it(proposed):
    jc, tag, topic, fresh, _, _ = proposed
    group = [Consumer(jc.kafka.bootstrap_servers, fresh, topic, f"{tag}-{c}") for c in OWNED]
    try:
        for c in group:
            c.start()
        wait_until(lambda: all(c.consumer.assignment() for c in group), 120,
                   "both members assigned")
        waiting = cli(jc, "verify", fresh)
        print(waiting.stdout)
        # the same members: awaiting approval
        assert waiting.returncode == 7, waiting.stdout + waiting.stderr

        group.append(Consumer(jc.kafka.bootstrap_servers, fresh, topic, f"{tag}-c2"))
        group[-1].start()
        wait_until(lambda: all(c.consumer.assignment() for c in group), 120,
                   "the third member assigned")
        why = f"member client:{tag}-c2@127.0.0.1 joined since the proposal"
        expired = cli(jc, "verify", fresh)
        print(expired.stdout)
        assert expired.returncode == 10, expired.stdout + expired.stderr
        assert f"expired: the proposal expired: {why}." in expired.stdout
        refused = cli(jc, "approve", fresh, "--version", "1")
        print(refused.stderr)
        assert refused.returncode == 2 \
            and f"recommendation v1 of group {fresh} has expired: {why}" in refused.stderr
    finally:
        for c in group:
            c.stop()
    # nothing was approved
    assert [m["status"] for m in feed(jc) if m["group"] == fresh] == ["proposed"]


def test_a_proposal_older_than_its_expiry_is_expired_with_the_same_members(proposed):
    jc, tag, topic, _, aged, _ = proposed
    group = [Consumer(jc.kafka.bootstrap_servers, aged, topic, f"{tag}-{c}") for c in OWNED]
    try:
        for c in group:
            c.start()
        wait_until(lambda: all(c.consumer.assignment() for c in group), 120,
                   "both members assigned")
        (message,) = [m for m in feed(jc) if m["group"] == aged]
        assert message["proposal"]["expires_at"] == message["event_ts"] + EXPIRY_S * 1000
        assert message["proposal"]["members"] == [f"client:{tag}-{c}@127.0.0.1" for c in OWNED]
        expired = cli(jc, "verify", aged)
        print(expired.stdout)
        assert expired.returncode == 10, expired.stdout + expired.stderr
        assert "past its expiry at" in expired.stdout and "joined" not in expired.stdout
        refused = cli(jc, "approve", aged)
        assert refused.returncode == 2 and "past its expiry at" in refused.stderr, refused.stderr
    finally:
        for c in group:
            c.stop()

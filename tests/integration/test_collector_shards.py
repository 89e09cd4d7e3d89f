"""Collectors sharing the groups on the shared 3-broker cluster: three
`rebalancer collect --shards 6` processes, one killed mid-run; and the offset requests of one poll,
counted on the wire."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter, defaultdict

import pytest

from streaming.collector import Collector, CollectorOptions
from streaming.kafka_clients import factories as kafka_clients

from .conftest import commit_offsets, env_with, topic_with_records
from .java_client import wait_for

pytestmark = pytest.mark.integration

GROUPS = 9
SHARDS = 6
SESSION_MS = 6000  # the broker's group.min.session.timeout.ms


@pytest.fixture(scope="module")
def nine_groups(cfg) -> str:
    """Topic NAME (3 partitions, 10 records each) and groups NAME-g0..g8 committed at offset 1 on
    it."""
    name = f"shards-{uuid.uuid4().hex[:6]}"
    topic_with_records(cfg, name, 3, 30)
    admin = kafka_clients.admin(cfg)
    try:
        for i in range(GROUPS):
            commit_offsets(admin, f"{name}-g{i}", {(name, p): 1 for p in range(3)})
    finally:
        admin.close()
    return name


class CollectorProcess:
    """`rebalancer collect --shards` in a process of its own, writing lag to a topic of its own (so
    each event says which collector sent it); its stdout lines are kept with their arrival time."""

    ANNOUNCE = re.compile(r"now polling (?:no shard|shards? (?P<shards>[\d, ]+)) of \d+")

    def __init__(self, cfg, name: str, k: int) -> None:
        self.k, self.lag_topic = k, f"{name}.lag.{k}"
        cmd = [sys.executable, "-m", "streaming.cli", "collect",
               "--bootstrap", cfg.kafka.bootstrap_servers,
               "--groups", f"^{name}-g", "--interval", "1", "--full-refresh-every", "0",
               "--conf", f"kafka.lag_topic={self.lag_topic}",
               "--conf", f"kafka.metadata_topic={name}.meta",
               "--shards", str(SHARDS), "--shard-group", f"rebalancer.collectors.{name}",
               "--shard-option", f"session.timeout.ms={SESSION_MS}",
               "--shard-option", "heartbeat.interval.ms=500"]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, env=env_with())
        self.lines: list[tuple[float, str]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append((time.time(), line.rstrip()))

    def shards(self, since: float = 0.0) -> tuple[float, frozenset[int]] | None:
        """(when, shards) of the latest 'now polling' line after ``since``."""
        for at, line in reversed(self.lines):
            m = self.ANNOUNCE.search(line)
            if m and at > since:
                return at, frozenset(int(s) for s in (m["shards"] or "").replace(",", " ").split())
        return None

    def output(self) -> str:
        """Its first lines (start-up, joining) and its last ones."""
        lines = [line for _, line in self.lines]
        return "\n".join(lines if len(lines) <= 40 else [*lines[:20], "...", *lines[-20:]])

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(30)
        self._reader.join(10)


class LagReader:
    """Every lag event of the collectors' lag topics so far, as (collector, group, record timestamp
    s)."""

    def __init__(self, cfg, collectors: list[CollectorProcess]) -> None:
        from kafka import KafkaConsumer, TopicPartition

        self.topic_of = {c.lag_topic: c.k for c in collectors}
        self.consumer = KafkaConsumer(group_id=None,
                                      **kafka_clients.python_client_options(cfg, "consumer"))
        self.consumer.assign([TopicPartition(t, 0) for t in self.topic_of])
        self.consumer.seek_to_beginning()
        self.events: list[tuple[int, str, float]] = []

    def read(self) -> list[tuple[int, str, float]]:
        for records in self.consumer.poll(timeout_ms=200).values():
            for r in records:
                e = json.loads(r.value)
                if e["type"] == "lag_dense":
                    self.events.append((self.topic_of[r.topic], e["group"], r.timestamp / 1000))
        return self.events

    def senders_after(self, t: float) -> dict[str, set[int]]:
        out: dict[str, set[int]] = defaultdict(set)
        for k, g, at in self.read():
            if at > t:
                out[g].add(k)
        return out

    def close(self) -> None:
        self.consumer.close()


def _settled(live: list[CollectorProcess], since: float, seen: dict) -> float | None:
    """The time the test first saw the live collectors' announced shards (each announced after
    ``since``) disjoint, non-empty and covering every shard, once they have stayed so for 2 s (two
    poll rounds: a collector announces a change at its next round, so a stale set cannot pass for a
    settled one)."""
    latest = [c.shards(since) for c in live]
    sets = tuple(s[1] for s in latest if s is not None and s[1])
    complete = (len(sets) == len(live) and sum(map(len, sets)) == SHARDS
                and frozenset().union(*sets) == frozenset(range(SHARDS)))
    if not complete or seen.get("sets") != sets:
        seen.clear()
        if complete:
            seen.update(sets=sets, at=time.time())
        return None
    return seen["at"] if time.time() - seen["at"] >= 2.0 else None


def _each_group_from_one_collector(reader: LagReader, after: float, groups: list[str], polls: int):
    """Wait until every group has ``polls`` lag events after ``after``; then each must have one
    sender."""
    def enough():
        counts = Counter(g for _, g, at in reader.read() if at > after)
        return all(counts[g] >= polls for g in groups)

    wait_for(enough, 30, 0.3, f"{polls} lag events of every group")
    senders = reader.senders_after(after)
    twice = {g: sorted(ks) for g, ks in senders.items() if len(ks) > 1}
    assert not twice, f"groups polled by two collectors after the rebalance settled: {twice}"
    return {g: next(iter(ks)) for g, ks in senders.items()}


def test_three_collectors_share_the_groups_and_one_killed_hands_its_shards_over(cfg, nine_groups):
    name = nine_groups
    groups = [f"{name}-g{i}" for i in range(GROUPS)]
    kafka_clients.ensure_topics(cfg, {f"{name}.lag.{k}": {"num_partitions": 1,
                                                          "replication_factor": 1}
                                      for k in range(3)})
    started = time.time()
    collectors = [CollectorProcess(cfg, name, k) for k in range(3)]
    reader = LagReader(cfg, collectors)
    try:
        seen: dict = {}
        settled = wait_for(lambda: _settled(collectors, started, seen), 60, 0.3,
                           "three collectors' shards")
        owner = _each_group_from_one_collector(reader, settled, groups, polls=2)
        assert set(owner) == set(groups)

        victim = max(collectors, key=lambda c: sum(k == c.k for k in owner.values()))
        victims_groups = sorted(g for g, k in owner.items() if k == victim.k)
        assert victims_groups, owner
        killed_at = time.time()
        # SIGKILL: no LeaveGroup, the group notices only when its session times out
        victim.proc.kill()
        live = [c for c in collectors if c is not victim]

        seen = {}
        settled = wait_for(lambda: _settled(live, killed_at, seen), 60, 0.3,
                           "the survivors' shards")
        handover_s = settled - killed_at
        owner = _each_group_from_one_collector(reader, settled, groups, polls=3)
        assert set(owner) == set(groups), "every group keeps getting lag events"
        assert victim.k not in owner.values()
        print(f"shards of the killed collector taken over {handover_s:.1f}s after the kill; "
              f"its groups {victims_groups} "
              f"now polled by {sorted({owner[g] for g in victims_groups})}")
    except BaseException:
        for c in collectors:
            print(f"--- collector {c.k} (exit {c.proc.poll()}):\n{c.output()}")
        print("--- the coordination group as the broker sees it: "
              f"{_described(cfg, f'rebalancer.collectors.{name}')}")
        raise
    finally:
        reader.close()
        for c in collectors:
            c.stop()


def _described(cfg, group: str) -> object:
    """The group's state and members (client id, host, assignment) from the broker, for a failure's
    output."""
    try:
        admin = kafka_clients.admin(cfg)
        try:
            return admin.describe_groups([group])
        finally:
            admin.close()
    except Exception as e:  # only diagnostics: never hide the test's own failure
        return f"describe failed: {e!r}"


def _counting(admin) -> Counter:
    """Count the requests ``admin`` sends, by request type."""
    sent: Counter = Counter()
    manager = admin._manager
    send = manager.send

    def counting(request, node_id=None, request_timeout_ms=None):
        sent[type(request).__name__] += 1
        return send(request, node_id=node_id, request_timeout_ms=request_timeout_ms)

    manager.send = counting
    return sent


def test_one_poll_fetches_offsets_per_coordinator_and_per_leader_not_per_group(cfg, nine_groups):
    name = nine_groups
    groups = [f"{name}-g{i}" for i in range(GROUPS)]
    admin = kafka_clients.admin(cfg)
    sent = _counting(admin)
    with Collector(cfg, CollectorOptions(include=f"^{name}-g"), admin=lambda: admin, out=None) as c:
        c.poll_once()  # coordinators found and cached, metadata read
        sent.clear()
        evs = c.poll_once()
    assert {e["group"] for e in evs if e["type"] == "lag_dense"} == set(groups)
    ours = {k: v for k, v in sent.items() if "Offset" in k}

    per_group = kafka_clients.admin(cfg)  # the same reads group by group, for comparison
    try:
        from kafka import TopicPartition
        from kafka.admin import OffsetSpec

        # coordinators cached, as in the poll
        per_group.list_group_offsets({g: None for g in groups})
        counted = _counting(per_group)
        for g in groups:
            per_group.list_group_offsets({g: None})
            per_group.list_partition_offsets({TopicPartition(name, p): OffsetSpec.LATEST
                                              for p in range(3)})
    finally:
        per_group.close()
    print(f"one poll of {GROUPS} groups: {dict(sorted(ours.items()))}; "
          f"group by group: {dict(sorted((k, v) for k, v in counted.items() if 'Offset' in k))}")
    offset_fetch = sum(v for k, v in ours.items() if k.startswith("OffsetFetch"))
    list_offsets = sum(v for k, v in ours.items() if k.startswith("ListOffsets"))
    assert 1 <= offset_fetch <= 3, ours  # one per group coordinator (3 brokers)
    # two per partition leader (log start, then end: one request holds one timestamp per partition),
    # for all 9 groups' partitions
    assert 2 <= list_offsets <= 6, ours

"""Collectors sharing the groups (fake admin and fake coordination consumer): each group has one
owner, a shard that moves during a poll is fenced before publishing, and the requests of a poll do
not grow with the number of groups."""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from kafka import TopicPartition
from kafka.admin import OffsetSpec
from kafka.structs import OffsetAndMetadata, OffsetAndTimestamp

from streaming import config
from streaming.collector import Collector, CollectorOptions
from streaming.collector import coordination as coord
from streaming.collector.shards import StaticShards, shard_of


class ManyGroups:
    """``groups`` groups without members, each committed on topic t (3 partitions led by brokers 1,
    2, 3); counts the admin calls a poll makes."""

    def __init__(self, groups: int) -> None:
        self.ids = [f"app-{i}" for i in range(groups)]
        self.calls: Counter[str] = Counter()

    def describe_cluster(self):
        self.calls["describe_cluster"] += 1
        return {"brokers": [{"broker_id": b, "rack": "abc"[b - 1]} for b in (1, 2, 3)]}

    def list_groups(self, broker_ids=None):
        self.calls["list_groups"] += 1
        return [{"group_id": g, "protocol_type": ""} for i, g in enumerate(self.ids)
                if i % 3 + 1 == broker_ids[0]]

    def describe_groups(self, ids):
        self.calls["describe_groups"] += 1
        return {g: {"group_state": "Empty", "protocol_type": "", "error": None, "members": []}
                for g in ids}

    def list_group_offsets(self, specs):
        self.calls["list_group_offsets"] += 1
        return {g: {TopicPartition("t", p): OffsetAndMetadata(1, "", -1) for p in range(3)}
                for g in specs}

    def describe_topics(self, topics):
        self.calls["describe_topics"] += 1
        return [{"name": "t", "error_code": 0, "partitions": [
            {"partition_index": p, "leader_id": p + 1, "replica_nodes": [p + 1], "error_code": 0}
            for p in range(3)]}]

    def list_partition_offsets(self, specs):
        self.calls["list_partition_offsets"] += 1
        return {tp: OffsetAndTimestamp(9 if spec == OffsetSpec.LATEST else 0, -1, None)
                for tp, spec in specs.items()}

    def close(self):
        pass


def _collector(admin, shards=None, **opts):
    return Collector(config.Config(), CollectorOptions(**opts), admin=lambda: admin, out=None,
                     shards=shards)


def _lag_groups(evs):
    return {e["group"] for e in evs if e["type"] == "lag_dense"}


def test_static_shards_give_each_group_to_exactly_one_of_three_collectors():
    admin = ManyGroups(30)
    seen = [_lag_groups(_collector(admin, StaticShards(i, 3)).poll_once()) for i in range(3)]
    assert set().union(*seen) == set(admin.ids)
    assert sum(len(s) for s in seen) == 30, "no group in two collectors' events"
    assert all(seen), "30 groups over 3 shards: each shard has some"
    for i, groups in enumerate(seen):
        assert all(shard_of(g, 3) == i for g in groups)


@pytest.mark.parametrize("groups", [3, 30, 300])
def test_a_poll_asks_for_offsets_once_for_all_its_groups_not_once_per_group(groups):
    """kafka-python sends one OffsetFetch per group coordinator for all the groups it is given (v8,
    Kafka 3.0+) and one ListOffsets per partition leader for all the partitions; so the reader hands
    it every group's at once, and the calls (hence requests) of a poll do not grow with the groups
    (two ListOffsets calls: log start and end offsets)."""
    admin = ManyGroups(groups)
    evs = _collector(admin).poll_once()
    assert len(_lag_groups(evs)) == groups
    assert admin.calls == Counter({"describe_cluster": 1, "list_groups": 3, "describe_groups": 1,
                                   "list_group_offsets": 1, "describe_topics": 1,
                                   "list_partition_offsets": 2})


class MovingShards:
    """Shards whose owner changes on the ``move_at``-th sync (a rebalance in the middle of a poll
    round)."""

    def __init__(self, count: int, owned: set[int], move_at: int, then: set[int]) -> None:
        self.count, self._owned, self.move_at, self.then = (count, frozenset(owned), move_at,
                                                            frozenset(then))
        self.syncs = 0
        self.waits: list[float] = []
        self.closed = False

    def owns(self, group_id):
        return shard_of(group_id, self.count) in self._owned

    def owned(self):
        return self._owned

    def sync(self):
        self.syncs += 1
        if self.syncs == self.move_at:
            self._owned = self.then

    def wait(self, stop, seconds):
        self.waits.append(seconds)

    def describe(self):
        return f"shards {sorted(self._owned)} of {self.count}"

    def close(self):
        self.closed = True


def test_events_of_a_shard_revoked_during_the_poll_are_not_published():
    admin = ManyGroups(30)
    # sync 1: start of the round; sync 2: the fence
    shards = MovingShards(3, {0, 1}, move_at=2, then={1})
    published: list[dict] = []
    c = _collector(admin, shards)
    c.sink = published.extend
    c.run(polls=1)
    assert shards.syncs == 2
    assert c.last_stats is not None and c.last_stats.shards == "shards [0, 1] of 3"
    groups = {e["group"] for e in published}
    assert groups and all(shard_of(g, 3) == 1 for g in groups), (
        "shard 0 moved away before publishing")
    assert {g for g in admin.ids if shard_of(g, 3) == 1} == _lag_groups(published)


def test_the_collector_waits_through_its_shards_and_closes_them():
    shards = MovingShards(3, {0, 1, 2}, move_at=0, then=set())
    c = _collector(ManyGroups(3), shards, interval_s=5.0)
    c.run(polls=2)
    assert len(shards.waits) == 1 and 4.0 < shards.waits[0] <= 5.0
    c.close()
    assert shards.closed


class FakeConsumer:
    """The coordination consumer: the group assigns ``assignment`` at the first poll."""

    def __init__(self, partitions: int, assignment: list[int]) -> None:
        self.partitions, self.assignment_on_join = partitions, assignment
        self.listener = None
        self.polls: list[int] = []
        self._assigned: set[TopicPartition] = set()
        self._paused: set[TopicPartition] = set()
        self.closed_with: dict | None = None

    def partitions_for_topic(self, topic):
        return set(range(self.partitions))

    def subscribe(self, topics, listener):
        (self.topic,) = topics
        self.listener = listener

    def poll(self, timeout_ms, max_records):
        self.polls.append(timeout_ms)
        if len(self.polls) == 1:
            self._assigned = {TopicPartition(self.topic, p) for p in self.assignment_on_join}
            self.listener.on_partitions_assigned(set(self._assigned))
        return {}

    def assignment(self):
        return set(self._assigned)

    def paused(self):
        return set(self._paused)

    def pause(self, *partitions):
        self._paused |= set(partitions)

    def close(self, **kwargs):
        self.closed_with = kwargs


def _dynamic(monkeypatch, consumer, count=6):
    created = []
    monkeypatch.setattr(coord.kafka_clients, "ensure_topics",
                        lambda cfg, topics: created.append(topics))
    shards = coord.DynamicShards(config.Config(), count, "rebalancer.collectors.x",
                                 consumer_factory=lambda: consumer)
    return shards.start(), created


def test_dynamic_shards_are_the_coordination_partitions_assigned_paused_and_given_back_on_close(
        monkeypatch):
    consumer = FakeConsumer(6, [1, 4])
    shards, created = _dynamic(monkeypatch, consumer)
    assert created == [{"rebalancer.collectors.x": {"num_partitions": 6, "replication_factor": -1}}]
    assert shards.owned() == frozenset() and consumer.listener is not None
    shards.sync()
    assert shards.owned() == {1, 4} and consumer.polls == [0]
    assert consumer.paused() == consumer.assignment(), (
        "no fetches from a topic that carries no records")
    assert shards.describe() == "shards 1, 4 of 6 (dynamic, group rebalancer.collectors.x)"
    shards.wait(threading.Event(), 0.5)
    assert len(consumer.polls) >= 3 and max(consumer.polls) <= 200, (
        "polled at least every TICK_S while waiting")
    shards.close()
    assert consumer.closed_with == {"autocommit": False}


def test_the_coordination_topics_partition_count_wins_over_shards(monkeypatch, caplog):
    shards, _ = _dynamic(monkeypatch, FakeConsumer(4, [0, 1, 2, 3]), count=6)
    assert shards.count == 4 and "4 partitions, not the 6" in caplog.text


def test_collect_command_parses_and_checks_its_shard_options():
    from streaming.cli import build_parser
    from streaming.commands.collect import _shards
    from streaming.errors import UsageError

    parse = build_parser().parse_args
    assert _shards(parse(["collect"])) is None
    assert _shards(parse(["collect", "--shard", "1/3"]))(config.Config()) == StaticShards(1, 3)
    assert callable(_shards(parse(["collect", "--shards", "6", "--shard-group", "x",
                                   "--shard-option", "session.timeout.ms=6000"])))
    for bad in (["--shard", "3/3"], ["--shards", "0"],
                ["--shard-option", "session.timeout.ms=6000"],
                ["--shards", "3", "--shard-option", "session.timeout.ms"]):
        with pytest.raises(UsageError):
            _shards(parse(["collect", *bad]))
    with pytest.raises(SystemExit):
        parse(["collect", "--shard", "0/3", "--shards", "3"])


def test_a_kafka_error_while_waiting_is_logged_not_raised(monkeypatch, caplog):
    consumer = FakeConsumer(6, [0])
    shards, _ = _dynamic(monkeypatch, consumer)
    shards.sync()

    def broken(timeout_ms, max_records):
        raise ConnectionError("coordinator gone")

    consumer.poll = broken
    shards.wait(threading.Event(), 0.3)
    assert "coordinator gone" in caplog.text and shards.owned() == {0}

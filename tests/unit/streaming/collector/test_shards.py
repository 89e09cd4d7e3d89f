"""The shard rule (Kafka's murmur2 of the group id, modulo N) and the shard sets built on it,
without Kafka."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from kafka import TopicPartition
from kafka.partitioner.default import DefaultPartitioner
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from streaming.collector.coordination import _Listener
from streaming.collector.errors import ShardSpecError
from streaming.collector.shards import ShardSet, StaticShards, describe_shards, murmur2, shard_of

# org.apache.kafka.common.utils.UtilsTest#testMurmur2: Java's signed ints
JAVA_MURMUR2 = {b"21": -973932308, b"foobar": -790332482, b"a-little-bit-long-string": -985981536,
                b"a-little-bit-longer-string": -1486304829,
                b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971, b"abc": 479470107}


def test_murmur2_is_kafkas_own_on_its_test_vectors_and_agrees_with_kafka_python():
    for data, java in JAVA_MURMUR2.items():
        assert murmur2(data) == java & 0xFFFFFFFF
    rnd = random.Random(7)
    for _ in range(500):
        data = bytes(rnd.randrange(256) for _ in range(rnd.randrange(0, 40)))
        assert murmur2(data) == kafka_python_murmur2(data)


class _SixPartitions:
    """The two questions kafka-python's partitioner asks of cluster metadata: a topic of 6
    partitions."""

    def topics(self):
        return {"coordination"}

    def partitions_for_topic(self, topic):
        return set(range(6))

    available_partitions_for_topic = partitions_for_topic


def test_a_groups_shard_is_the_partition_kafkas_default_partitioner_gives_its_id_as_key():
    for g in ("orders-app", "payments", "ünïcode-grøup", "", "a" * 300):
        assert shard_of(g, 6) == DefaultPartitioner().partition(
            "coordination", g, g.encode("utf-8"), None, None, _SixPartitions())


def test_shards_are_stable_in_range_and_spread_evenly():
    groups = [f"app-{i}" for i in range(12000)]
    counts = Counter(shard_of(g, 6) for g in groups)
    assert set(counts) == set(range(6))
    assert max(counts.values()) / min(counts.values()) < 1.15, counts
    assert [shard_of(g, 6) for g in groups[:50]] == [shard_of(g, 6) for g in groups[:50]]
    assert {shard_of(g, 1) for g in groups[:50]} == {0}
    with pytest.raises(ShardSpecError):
        shard_of("g", 0)


@pytest.mark.parametrize("spec", ["3/3", "-1/3", "0/0", "a/b", "1", "1/", "/3", "1/2/3"])
def test_static_shard_specs_outside_0_to_n_are_refused(spec):
    with pytest.raises(ShardSpecError, match="0 <= i < N"):
        StaticShards.parse(spec)


def test_n_static_shards_give_every_group_exactly_one_owner():
    shards = [StaticShards.parse(f"{i}/4") for i in range(4)]
    for g in (f"group-{i}" for i in range(400)):
        assert sum(s.owns(g) for s in shards) == 1
    assert shards[2].owned() == {2} and shards[2].describe() == "shard 2 of 4 (static)"


def test_a_shard_set_follows_revoke_and_assign_and_counts_changes():
    s = ShardSet(6)
    g = next(f"g{i}" for i in range(100) if shard_of(f"g{i}", 6) == 4)
    assert not s.owns(g) and s.changes == 0
    s.assign([1, 4])
    assert s.owns(g) and s.owned() == {1, 4} and s.changes == 1
    s.assign([1, 4])
    assert s.changes == 1, "the same set again is no change"
    s.revoke([1, 4])
    assert s.owned() == frozenset() and not s.owns(g) and s.changes == 2
    s.revoke([3])
    assert s.changes == 2
    s.assign([4, 7])  # a partition past N (the topic grew) is held but owns no group
    assert s.owns(g) and not any(shard_of(f"x{i}", 6) == 7 for i in range(100))
    with pytest.raises(ShardSpecError):
        ShardSet(0)


def test_describe_shards():
    assert describe_shards([3, 0], 6) == "shards 0, 3 of 6"
    assert describe_shards([2], 6) == "shard 2 of 6"
    assert describe_shards([], 6) == "no shard of 6"


def _tps(topic, parts):
    return {TopicPartition(topic, p) for p in parts}


def _round_robin(members, count):
    ordered = sorted(members)
    return {m: [p for p in range(count) if p % len(ordered) == i] for i, m in enumerate(ordered)}


def test_listeners_through_eager_rebalances_never_let_two_live_collectors_hold_one_shard():
    """Three collectors, then one dies (no revoke: it is gone) and the survivors rebalance. Kafka's
    eager protocol calls every live member's revoke before any assign; at every step no shard has
    two live owners, and once the rebalance completes the survivors hold every shard."""
    count, topic = 6, "rebalancer.collectors"
    sets = {m: ShardSet(count) for m in "abc"}
    listeners = {m: _Listener(s, topic) for m, s in sets.items()}

    def held_twice(live):
        owners = Counter(p for m in live for p in sets[m].owned())
        return [p for p, n in owners.items() if n > 1]

    def rebalance(live, previous):
        for m in live:
            listeners[m].on_partitions_revoked(_tps(topic, previous.get(m, ()))
                                               | _tps("other-topic", [0]))
            assert not held_twice(live)
        assignment = _round_robin(live, count)
        for m in live:
            listeners[m].on_partitions_assigned(_tps(topic, assignment[m]))
            assert not held_twice(live)
        return assignment

    first = rebalance("abc", {})
    assert [sets[m].owned() for m in "abc"] == [{0, 3}, {1, 4}, {2, 5}]
    # c was killed: it never revokes, the group drops it after its session timeout
    rebalance("ab", first)
    assert sets["a"].owned() | sets["b"].owned() == set(range(count)) and not held_twice("ab")
    groups = [f"group-{i}" for i in range(90)]
    assert all(sum(sets[m].owns(g) for m in "ab") == 1 for g in groups)


def test_a_member_evicted_loses_its_shards():
    s = ShardSet(3)
    listener = _Listener(s, "t")
    listener.on_partitions_assigned(_tps("t", [0, 1, 2]))
    listener.on_partitions_lost(_tps("t", [0, 1, 2]))
    assert s.owned() == frozenset()

"""The Java collection orders the sticky assignors follow (:mod:`assignors._java`): String.hashCode,
HashMap and HashSet iteration, UTF-16 sorting, and the order of the owned partitions in sticky user
data as Kafka serializes them."""

from __future__ import annotations

from assignors._java import (
    JavaHashSet,
    hashmap_order,
    java_sorted,
    string_hash,
    topic_partition_hash,
)
from assignors.sticky.eager import as_user_data


def test_string_hash_matches_java():
    assert string_hash("") == 0
    assert string_hash("hello") == 99162322
    assert string_hash("consumer1") == -421004549
    # overflow wraps in 32 bits, and non-BMP text hashes its UTF-16 surrogates
    assert string_hash("polygenelubricants") == -2147483648
    assert string_hash("\U0001F600") == 31 * 0xD83D + 0xDE00


def test_topic_partition_hash():
    assert topic_partition_hash("t", 3) == 31 * (31 + 3) + string_hash("t")


def test_hashmap_order_examples_from_kafka_tests():
    assert (hashmap_order(["consumer1", "consumer2", "consumer3"])
            == ["consumer3", "consumer2", "consumer1"])
    assert hashmap_order(["consumer0", "consumer1", "consumer2"], initial_capacity=3) == [
        "consumer1", "consumer0", "consumer2"]
    assert hashmap_order(["c0", "c1"]) == ["c0", "c1"]


def test_hashmap_order_resizes_and_keeps_insertion_order_in_bucket():
    keys = [f"member-{i}" for i in range(40)]
    order = hashmap_order(keys)
    assert sorted(order) == sorted(keys)
    # "Aa" and "BB" share a hash code: same bucket, insertion order decides
    assert hashmap_order(["BB", "Aa"]) == ["BB", "Aa"]
    assert hashmap_order(["Aa", "BB"]) == ["Aa", "BB"]


def test_java_hashset_first_follows_bucket_then_insertion():
    s = JavaHashSet(lambda tp: topic_partition_hash(*tp))
    for p in (5, 1, 17):
        s.add(("t", p))
    expected = min([("t", 5), ("t", 1), ("t", 17)], key=lambda tp: (topic_partition_hash(*tp) ^ (
        (topic_partition_hash(*tp) & 0xFFFFFFFF) >> 16)) & 15)
    assert s.first() == expected
    s.discard(expected)
    assert s.first() != expected and len(s) == 2


def test_java_sorted_uses_utf16_order():
    # U+FF5E is above the surrogates in code points but below them in UTF-16 code units
    assert java_sorted(["\uff5e", "\U0001F600"]) == ["\U0001F600", "\uff5e"]


def test_compute_if_absent_puts_new_keys_at_the_head_of_their_bucket():
    assert hashmap_order(["t6", "t10"]) == ["t6", "t10"]  # same bucket
    assert hashmap_order(["t6", "t10"], compute_if_absent=True) == ["t10", "t6"]


def test_user_data_order_matches_kafka_serialization():
    # StickyAssignor.serializeTopicPartitionAssignment + deserialize on kafka-clients 4.3.1
    owned = (("t1", 1), ("t1", 15), ("t2", 7), ("t4", 0), ("t4", 3), ("t6", 8), ("t7", 0),
             ("t8", 5), ("t9", 6), ("t10", 0))
    assert as_user_data(owned) == (("t4", 0), ("t4", 3), ("t10", 0), ("t6", 8), ("t7", 0),
                                   ("t8", 5), ("t9", 6), ("t1", 1), ("t1", 15), ("t2", 7))


def test_user_data_order_groups_topics_like_kafka():
    owned = (("b", 0), ("a", 1), ("b", 2), ("a", 0))
    grouped = as_user_data(owned)
    assert sorted(grouped) == sorted(owned)
    topics = [tp[0] for tp in grouped]
    assert topics == sorted(topics, key=lambda t: topics.index(t))  # contiguous per topic
    assert [tp for tp in grouped if tp[0] == "b"] == [("b", 0), ("b", 2)]

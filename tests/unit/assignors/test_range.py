"""Kafka's RangeAssignor: the javadoc, member order, rack mode, and properties on random groups."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assignors import range as range_assignor
from assignors.metrics import cross_rack_partitions
from assignors.model import GroupSnapshot, Member
from assignors.range import java_string_key, kafka_member_order
from assignors.validity import validate_assignment


def snap(topics, members, racks=None):
    return GroupSnapshot(topics=topics, members=tuple(members), replica_racks=racks)


def as_sets(a):
    return {m: set(v) for m, v in a.items()}


def test_javadoc_example():
    s = snap({"t0": 3, "t1": 3}, [Member("C0", ("t0", "t1")), Member("C1", ("t0", "t1"))])
    assert range_assignor.assign(s) == {
        "C0": [("t0", 0), ("t0", 1), ("t1", 0), ("t1", 1)],
        "C1": [("t0", 2), ("t1", 2)],
    }


def test_member_order_static_first_by_instance_id():
    members = [Member("a", ("t",)), Member("z", ("t",), instance_id="i2"),
               Member("b", ("t",), instance_id="i1")]
    assert [m.member_id for m in kafka_member_order(members)] == ["b", "z", "a"]


def test_java_string_order_is_utf16():
    # U+FF5E sorts after U+1F600 by code point but before it by UTF-16 code unit (surrogate D83D).
    assert sorted(["\U0001f600", "\uff5e"], key=java_string_key) == ["\U0001f600", "\uff5e"]


def test_every_member_present_and_absent_topics_ignored():
    s = snap({"t": 2},
             [Member("a", ("t", "missing")), Member("b", ("missing",)), Member("c", ("t",))])
    assert range_assignor.assign(s) == {"a": [("t", 0)], "b": [], "c": [("t", 1)]}


def test_more_members_than_partitions():
    s = snap({"t": 2}, [Member(f"c{i}", ("t",)) for i in range(4)])
    assert range_assignor.assign(s) == {"c0": [("t", 0)], "c1": [("t", 1)], "c2": [], "c3": []}


def test_rack_aware_docstring_example():
    racks = {"t0": [("a",), ("b",), ("a",), ("b",)]}
    s = snap({"t0": 4}, [Member("C0", ("t0",), rack="a"), Member("C1", ("t0",), rack="b")], racks)
    assert range_assignor.assign(s) == {"C0": [("t0", 0), ("t0", 2)], "C1": [("t0", 1), ("t0", 3)]}


def test_rack_mode_off_when_every_partition_on_every_rack_unless_preferred():
    racks = {"t": [("a", "b")] * 4}
    members = [Member("C0", ("t",), rack="a"), Member("C1", ("t",), rack="b")]
    s = snap({"t": 4}, members, racks)
    plain = {"C0": [("t", 0), ("t", 1)], "C1": [("t", 2), ("t", 3)]}
    assert range_assignor.assign(s) == plain
    # With the flag rack mode is on, but every partition matches every rack: same ranges.
    assert range_assignor.assign(s, prefer_rack_aware_logic=True) == plain


def test_rack_mode_off_when_consumer_racks_disjoint():
    racks = {"t0": [("a",), ("b",), ("a",), ("b",)]}
    s = snap({"t0": 4}, [Member("C0", ("t0",), rack="x"), Member("C1", ("t0",), rack="y")], racks)
    assert range_assignor.assign(s) == {"C0": [("t0", 0), ("t0", 1)], "C1": [("t0", 2), ("t0", 3)]}


def test_empty_rack_is_no_rack():
    racks = {"t0": [("a",), ("b",), ("a",), ("b",)]}
    s = snap({"t0": 4}, [Member("C0", ("t0",), rack=""), Member("C1", ("t0",), rack="")], racks)
    assert range_assignor.assign(s) == {"C0": [("t0", 0), ("t0", 1)], "C1": [("t0", 2), ("t0", 3)]}


def test_co_partitioning_beats_rack_alignment():
    # t1 and t2: same count, same subscribers -> partition p of both goes to the same consumer.
    racks = {"t1": [("a",), ("b",), ("a",), ("b",)], "t2": [("b",), ("a",), ("b",), ("a",)]}
    s = snap({"t1": 4, "t2": 4},
             [Member("C0", ("t1", "t2"), rack="a"), Member("C1", ("t1", "t2"), rack="b")], racks)
    a = range_assignor.assign(s)
    owner = {tp: m for m, tps in a.items() for tp in tps}
    assert all(owner[("t1", p)] == owner[("t2", p)] for p in range(4))
    assert as_sets(a) == {"C0": {("t1", 0), ("t1", 1), ("t2", 0), ("t2", 1)},
                          "C1": {("t1", 2), ("t1", 3), ("t2", 2), ("t2", 3)}}
    assert cross_rack_partitions(s, a) == 4


def test_rack_mode_lists_sorted_by_topic_then_partition():
    racks = {"b": [("x",), ("y",)], "a": [("y",), ("x",)]}
    members = [Member("C0", ("a", "b"), rack="x"), Member("C1", ("a", "b"), rack="y")]
    s = snap({"b": 2, "a": 2}, members, racks)
    for tps in range_assignor.assign(s).values():
        assert tps == sorted(tps)


# -- properties on random groups -------------------------------------------------------------------

RACKS = ["a", "b", "c"]


@st.composite
def groups(draw, with_racks: bool = True):
    n_topics = draw(st.integers(1, 4))
    topics = {f"t{i}": draw(st.integers(0, 9)) for i in range(n_topics)}
    names = [*topics, "absent"]
    n_members = draw(st.integers(1, 6))
    ids = draw(st.lists(st.text("abcxyz0123", min_size=1, max_size=4), min_size=n_members,
                        max_size=n_members, unique=True))
    instance_ids = draw(st.lists(st.sampled_from(["i0", "i1", "i2", "i3", None]),
                                 min_size=n_members, max_size=n_members))
    seen: set[str] = set()
    members = []
    for mid, iid in zip(ids, instance_ids, strict=True):
        if iid in seen:
            iid = None
        if iid is not None:
            seen.add(iid)
        subs = draw(st.lists(st.sampled_from(names), min_size=1, max_size=len(names), unique=True))
        rack = draw(st.sampled_from([*RACKS, None, "z"])) if with_racks else None
        members.append(Member(mid, tuple(subs), instance_id=iid, rack=rack))
    racks = None
    if with_racks and draw(st.booleans()):
        racks = {t: [tuple(draw(st.lists(st.sampled_from(RACKS), min_size=1, max_size=3,
                                         unique=True))) for _ in range(n)]
                 for t, n in topics.items()}
    return GroupSnapshot(topics=topics, members=tuple(members), replica_racks=racks)


@settings(max_examples=300, deadline=None)
@given(groups(), st.booleans(), st.randoms(use_true_random=False))
def test_properties(s, prefer, rnd):
    a = range_assignor.assign(s, prefer_rack_aware_logic=prefer)
    validate_assignment(s, a)  # every subscribed partition exactly once, only to subscribers
    assert set(a) == {m.member_id for m in s.members}
    assert range_assignor.assign(s, prefer_rack_aware_logic=prefer) == a
    members = list(s.members)
    rnd.shuffle(members)
    shuffled = GroupSnapshot(topics=s.topics, members=tuple(members), replica_racks=s.replica_racks)
    assert as_sets(range_assignor.assign(shuffled, prefer_rack_aware_logic=prefer)) == as_sets(a)
    # Per topic, counts among its subscribers differ by at most one (rack mode keeps the quotas).
    for t, n in s.topics.items():
        subs = [m.member_id for m in s.members if t in m.topics]
        if subs and n:
            counts = [sum(1 for tp in a[m] if tp[0] == t) for m in subs]
            assert max(counts) - min(counts) <= 1


@settings(max_examples=200, deadline=None)
@given(groups(with_racks=False))
def test_without_racks_is_contiguous_ranges(s):
    a = range_assignor.assign(s)
    order = [m.member_id for m in kafka_member_order(s.members)]
    for t, n in s.topics.items():
        subs = [m for m in order if t in next(x for x in s.members if x.member_id == m).topics]
        if not subs:
            continue
        q, r = divmod(n, len(subs))
        start = 0
        for i, m in enumerate(subs):
            length = q + (1 if i < r else 0)
            assert [p for tt, p in a[m] if tt == t] == list(range(start, start + length))
            start += length


# -- against Kafka's own RangeAssignor (needs a JDK and the kafka-clients jars: `make setup`) ------

# "Aa", "BB", "AaAa", "AaBB", "BBAa" and "BBBB" have equal String.hashCode()s: they share a HashMap
# bucket, where Kafka's order is the order the topics were first added (members in HashMap order,
# each member's topics in subscription order).
COLLIDING = ["Aa", "BB", "AaAa", "AaBB", "BBAa", "BBBB"]


def _java_results(cases: list[dict]) -> list[dict]:
    from benchmarks import javaref

    try:
        return javaref.run_cases("range", cases)
    except javaref.JavaRefError as e:
        pytest.fail(f"Kafka's Java RangeAssignor could not run ({e}); `make setup` installs Java "
                    "17 and the kafka-clients jars, and CI always runs it")


def _check_against_java(cases: list[dict]) -> None:
    from assignors.scenario import parse_scenario

    results = _java_results(cases)
    for case, result in zip(cases, results, strict=True):
        assert result["error"] is None, (result["error"], case)
        parsed = parse_scenario(case)
        mine = range_assignor.assign(parsed.snapshot, **parsed.options)
        # same partitions per member, and in Kafka's list order
        assert mine == {m: list(v) for m, v in result["assignment"].items()}, case


@pytest.mark.java
def test_matches_kafka_java_on_random_groups():
    rnd = random.Random(20241025)
    cases = []
    for _ in range(150):
        topics = {f"t{i}": rnd.choice([0, 1, 2, 3, 5, 6, 8, 12]) for i in range(rnd.randint(1, 4))}
        if len(topics) > 1 and rnd.random() < 0.5:
            topics["t1"] = topics["t0"]
        racks = None
        if rnd.random() < 0.8:
            racks = {t: [rnd.sample(RACKS, rnd.randint(1, 3)) for _ in range(n)]
                     for t, n in topics.items()}
        members = []
        for i in range(rnd.randint(1, 6)):
            names = [*topics, "absent"]
            subs = (list(topics) if rnd.random() < 0.5
                    else rnd.sample(names, rnd.randint(1, len(names))))
            members.append({"id": f"m{rnd.randint(0, 99)}-{i}",
                            "instance_id": f"i{i}" if rnd.random() < 0.3 else None,
                            "rack": rnd.choice([*RACKS, None]), "topics": subs,
                            "owned": [], "generation": None})
        cases.append({"name": "random", "topics": topics, "replica_racks": racks,
                      "members": members, "prefer_rack_aware_logic": rnd.random() < 0.3})
    _check_against_java(cases)


@pytest.mark.java
def test_list_order_matches_kafka_java_with_colliding_and_many_topics():
    """Without rack mode each list is one block per topic in partitionsPerTopic's HashMap order:
    colliding topic names keep their first-insertion order, and absent topics count towards the
    HashSet's size."""
    rnd = random.Random(881)
    cases = []
    for _ in range(300):
        pool = COLLIDING + [f"t{i}" for i in range(rnd.choice([2, 8, 14, 30]))]
        names = rnd.sample(pool, rnd.randint(1, len(pool)))
        topics = {t: rnd.choice([0, 1, 2, 3, 7]) for t in names}
        absent = [f"ghost{i}" for i in range(rnd.choice([0, 0, 1, 5, 12]))]
        members = []
        for i in range(rnd.randint(1, 7)):
            subs = rnd.sample(names + absent, rnd.randint(1, len(names) + len(absent)))
            members.append({"id": f"{rnd.choice(['c', 'consumer-', 'Aa'])}{rnd.randint(0, 99)}-{i}",
                            "instance_id": None, "rack": None, "topics": subs,
                            "owned": [], "generation": None})
        cases.append({"name": "collide", "topics": topics, "replica_racks": None,
                      "members": members})
    _check_against_java(cases)


def test_colliding_topics_listed_in_first_subscription_order():
    # "Aa" and "BB" share a bucket; the subscriptions HashMap iterates m1 before m2 ("m1" hashes
    # lower)
    s = snap({"Aa": 1, "BB": 1}, [Member("m2", ("Aa", "BB")), Member("m1", ("BB", "Aa"))])
    assert range_assignor.java_topic_order(s) == ["BB", "Aa"]
    assert range_assignor.assign(s)["m1"] == [("BB", 0), ("Aa", 0)]

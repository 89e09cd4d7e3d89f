"""Kafka's RoundRobinAssignor: the javadoc examples, member order, and properties on random
groups."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assignors import roundrobin
from assignors.model import GroupSnapshot, Member
from assignors.range import java_string_key, kafka_member_order
from assignors.validity import validate_assignment


def snap(topics, members):
    return GroupSnapshot(topics=topics, members=tuple(members))


def reference(s: GroupSnapshot) -> dict:
    """Kafka's loop as written: a circular pointer that skips members not subscribed to the
    topic."""
    ordered = kafka_member_order(s.members)
    out = {m.member_id: [] for m in s.members}
    topics = sorted({t for m in s.members for t in m.topics}, key=java_string_key)
    i = 0
    for t in topics:
        for p in range(s.topics.get(t, 0)):
            while t not in ordered[i % len(ordered)].topics:
                i += 1
            out[ordered[i % len(ordered)].member_id].append((t, p))
            i += 1
    return out


def test_javadoc_equal_subscriptions():
    s = snap({"t0": 3, "t1": 3}, [Member("C1", ("t0", "t1")), Member("C0", ("t0", "t1"))])
    assert roundrobin.assign(s) == {
        "C0": [("t0", 0), ("t0", 2), ("t1", 1)],
        "C1": [("t0", 1), ("t1", 0), ("t1", 2)],
    }


def test_javadoc_unequal_subscriptions():
    s = snap({"t0": 1, "t1": 2, "t2": 3},
             [Member("C0", ("t0",)), Member("C1", ("t0", "t1")), Member("C2", ("t0", "t1", "t2"))])
    assert roundrobin.assign(s) == {
        "C0": [("t0", 0)],
        "C1": [("t1", 0)],
        "C2": [("t1", 1), ("t2", 0), ("t2", 1), ("t2", 2)],
    }


def test_topics_in_name_order_not_metadata_order():
    s = snap({"b": 1, "a": 1}, [Member("C0", ("a", "b")), Member("C1", ("a", "b"))])
    assert roundrobin.assign(s) == {"C0": [("a", 0)], "C1": [("b", 0)]}


def test_static_members_first():
    s = snap({"t": 3}, [Member("a", ("t",)), Member("b", ("t",), instance_id="x")])
    assert roundrobin.assign(s) == {"a": [("t", 1)], "b": [("t", 0), ("t", 2)]}


def test_absent_topic_and_idle_member():
    s = snap({"t": 1}, [Member("a", ("gone",)), Member("b", ("t", "gone"))])
    assert roundrobin.assign(s) == {"a": [], "b": [("t", 0)]}


@st.composite
def groups(draw):
    topics = {f"t{i}": draw(st.integers(0, 9)) for i in range(draw(st.integers(1, 4)))}
    names = [*topics, "absent"]
    n = draw(st.integers(1, 6))
    ids = draw(st.lists(st.text("abcz01", min_size=1, max_size=3), min_size=n, max_size=n,
                        unique=True))
    members = []
    for k, mid in enumerate(ids):
        subs = draw(st.lists(st.sampled_from(names), min_size=1, max_size=len(names), unique=True))
        members.append(Member(mid, tuple(subs),
                              instance_id=f"i{k}" if draw(st.booleans()) else None))
    return snap(topics, members)


@settings(max_examples=300, deadline=None)
@given(groups(), st.randoms(use_true_random=False))
def test_properties(s, rnd):
    a = roundrobin.assign(s)
    validate_assignment(s, a)
    assert a == reference(s)
    assert roundrobin.assign(s) == a
    members = list(s.members)
    rnd.shuffle(members)
    assert roundrobin.assign(snap(s.topics, members)) == a


@pytest.mark.java
def test_matches_kafka_java_on_random_groups():
    from benchmarks import javaref

    rnd = random.Random(7)
    cases = []
    for _ in range(150):
        topics = {f"t{i}": rnd.randint(0, 9) for i in range(rnd.randint(1, 5))}
        names = [*topics, "absent"]
        members = [{"id": f"c{rnd.randint(0, 50)}-{i}",
                    "instance_id": f"i{i}" if rnd.random() < 0.3 else None,
                    "rack": None, "topics": rnd.sample(names, rnd.randint(1, len(names))),
                    "owned": [], "generation": None} for i in range(rnd.randint(1, 6))]
        cases.append({"name": "random", "topics": topics, "replica_racks": None,
                      "members": members})
    try:
        results = javaref.run_cases("roundrobin", cases)
    except javaref.JavaRefError as e:
        pytest.fail(f"Kafka's Java RoundRobinAssignor could not run ({e}); `make setup` installs "
                    "Java 17 and the kafka-clients jars, and CI always runs it")
    from assignors.scenario import parse_scenario

    for case, result in zip(cases, results, strict=True):
        mine = roundrobin.assign(parse_scenario(case).snapshot)
        assert mine == {m: list(v) for m, v in result["assignment"].items()}, case

"""grantneale's lag-based assignor, and the lag it reads (partition_lag)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assignors import lag as lag_assignor
from assignors.errors import InvalidSnapshot
from assignors.model import GroupSnapshot, Member, partition_lag
from assignors.range import java_string_key
from assignors.validity import validate_assignment


def snap(topics, members, lags):
    return GroupSnapshot(topics=topics, members=tuple(members), lag=lags)


def reference(s: GroupSnapshot) -> dict:
    """grantneale's loop as written: per partition, the minimum over all the topic's subscribers."""
    out = {m.member_id: [] for m in s.members}
    for t, n in s.topics.items():
        consumers = [m.member_id for m in s.members if t in m.topics]
        if not consumers:
            continue
        lags = list(s.lag.get(t, [0] * n))
        count = dict.fromkeys(consumers, 0)
        total = dict.fromkeys(consumers, 0)
        for p in sorted(range(n), key=lambda p: (-lags[p], p)):
            c = min(consumers, key=lambda c: (count[c], total[c], java_string_key(c)))
            out[c].append((t, p))
            count[c] += 1
            total[c] += lags[p]
    return out


# -- partition_lag: grantneale's computePartitionLag tests -----------------------------------------

@pytest.mark.parametrize(("committed", "begin", "end", "reset", "want"), [
    (5555, 1111, 9999, "none", 4444),       # testComputePartitionLag
    (5555, 0, 0, "none", 0),                # testComputePartitionLagNoEndOffset (clamped)
    (None, 1111, 9999, "latest", 0),        # ...NoCommittedOffsetResetModeLatest
    (None, 1111, 9999, "earliest", 8888),   # ...NoCommittedOffsetResetModeEarliest
    (None, 1111, 9999, "LATEST", 0),        # equalsIgnoreCase
    (None, 1111, 9999, "none", 8888),       # anything but latest counts the retained log
])
def test_partition_lag(committed, begin, end, reset, want):
    assert partition_lag(committed, begin, end, reset) == want


def test_partition_lag_rejects_unknown_reset():
    with pytest.raises(InvalidSnapshot, match="auto_offset_reset"):
        partition_lag(None, 0, 10, "sometimes")


# -- the assignor ----------------------------------------------------------------------------------

def test_readme_example():
    s = snap({"t0": 3}, [Member("C0", ("t0",)), Member("C1", ("t0",))],
             {"t0": [100000, 50000, 60000]})
    assert lag_assignor.assign(s) == {"C0": [("t0", 0)], "C1": [("t0", 2), ("t0", 1)]}


def test_assign():
    s = snap({"topic1": 4, "topic2": 2},
             [Member("consumer-1", ("topic1", "topic2")), Member("consumer-2", ("topic1",))],
             {"topic1": [100000, 100000, 500, 1], "topic2": [900000, 100000]})
    a = lag_assignor.assign(s)
    assert {m: set(v) for m, v in a.items()} == {
        "consumer-1": {("topic1", 0), ("topic1", 2), ("topic2", 0), ("topic2", 1)},
        "consumer-2": {("topic1", 1), ("topic1", 3)},
    }


def test_zero_lags_interleave():
    s = snap({"topic1": 7}, [Member("consumer-2", ("topic1",)), Member("consumer-1", ("topic1",))],
             {"topic1": [0] * 7})
    assert lag_assignor.assign(s) == {
        "consumer-1": [("topic1", 0), ("topic1", 2), ("topic1", 4), ("topic1", 6)],
        "consumer-2": [("topic1", 1), ("topic1", 3), ("topic1", 5)],
    }


def test_heavily_skewed_lags():
    lags = [360, 359, 230, 118, 444, 122, 65, 111, 455000, 424000]
    s = snap({"topic1": 10}, [Member(f"consumer-{i}", ("topic1",)) for i in (1, 2, 3)],
             {"topic1": lags})
    a = lag_assignor.assign(s)
    assert a == {
        "consumer-1": [("topic1", 8), ("topic1", 2), ("topic1", 7)],
        "consumer-2": [("topic1", 9), ("topic1", 1), ("topic1", 3)],
        "consumer-3": [("topic1", 4), ("topic1", 0), ("topic1", 5), ("topic1", 6)],
    }


def test_tallies_restart_per_topic():
    # Four single-partition topics of equal lag all go to the lowest id: no balance across topics.
    topics = {f"t{i}": 1 for i in range(4)}
    s = snap(topics, [Member("c1", tuple(topics)), Member("c2", tuple(topics))],
             {t: [10] for t in topics})
    assert lag_assignor.assign(s) == {"c1": [(t, 0) for t in topics], "c2": []}


def test_unknown_lag_is_zero_and_absent_topic_ignored():
    s = snap({"t": 3}, [Member("a", ("t", "gone")), Member("b", ("t",))], {})
    assert lag_assignor.assign(s) == {"a": [("t", 0), ("t", 2)], "b": [("t", 1)]}


@st.composite
def groups(draw):
    topics = {f"t{i}": draw(st.integers(0, 12)) for i in range(draw(st.integers(1, 3)))}
    names = [*topics, "absent"]
    n = draw(st.integers(1, 6))
    ids = draw(st.lists(st.text("abcAB01-", min_size=1, max_size=4), min_size=n, max_size=n,
                        unique=True))
    members = [Member(mid, tuple(draw(st.lists(st.sampled_from(names), min_size=1,
                                               max_size=len(names), unique=True))))
               for mid in ids]
    lag_values = st.integers(0, 50) | st.sampled_from([0, 10**6, 10**12])
    lags = {t: draw(st.lists(lag_values, min_size=n_, max_size=n_)) for t, n_ in topics.items()}
    return snap(topics, members, lags)


@settings(max_examples=300, deadline=None)
@given(groups(), st.randoms(use_true_random=False))
def test_properties(s, rnd):
    a = lag_assignor.assign(s)
    validate_assignment(s, a)
    assert a == reference(s)
    assert lag_assignor.assign(s) == a
    members = list(s.members)
    rnd.shuffle(members)
    assert lag_assignor.assign(snap(s.topics, members, s.lag)) == a
    for t, n in s.topics.items():  # count first: per topic, counts differ by at most one
        counts = [sum(1 for tp in a[m.member_id] if tp[0] == t) for m in s.members if t in m.topics]
        if counts and n:
            assert max(counts) - min(counts) <= 1

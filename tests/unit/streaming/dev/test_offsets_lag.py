"""The lag the benchmark's ``lag`` strategy and the rebalancer's fallback read at each rebalance
(:func:`streaming.dev.workload.strategies.lags_of`): every partition from its own offsets.

A line-length refactor once reused the name of the committed offsets for one partition's offset,
so from the second partition on the read failed and both ran without lag; a group of one partition
could not show it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from kafka import TopicPartition
from kafka.structs import OffsetAndMetadata

from assignors.model import partition_lag
from streaming.dev.workload.strategies import lags_of


@st.composite
def offsets(draw):
    topics = {f"t{i}": draw(st.integers(0, 4)) for i in range(draw(st.integers(1, 3)))}
    committed, begins, ends = {}, {}, {}
    for t, n in topics.items():
        for p in range(n):
            tp = TopicPartition(t, p)
            begins[tp] = draw(st.integers(0, 10**6))
            ends[tp] = begins[tp] + draw(st.integers(0, 10**6))
            c = draw(st.one_of(st.none(), st.just(-1), st.integers(0, 2 * 10**6)))
            if c is not None:
                committed[tp] = OffsetAndMetadata(c, "", -1)
    return topics, committed, begins, ends


@given(offsets(), st.sampled_from(["earliest", "latest"]))
def test_every_partition_reads_its_own_offsets(drawn, reset):
    topics, committed, begins, ends = drawn
    lags = lags_of(topics, committed, begins, ends, reset)
    assert {t: len(v) for t, v in lags.items()} == topics
    for t, n in topics.items():
        for p in range(n):
            tp = TopicPartition(t, p)
            c = committed[tp].offset if tp in committed else None
            want = partition_lag(c if c is not None and c >= 0 else None, begins[tp], ends[tp],
                                 reset)
            assert lags[t][p] == want, (tp, lags)

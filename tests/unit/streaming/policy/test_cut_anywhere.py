"""The same events give the same recommendations however micro-batches cut them, inside polls too.

A group's stream is drawn from the contract (:mod:`streaming.contracts.events`): members events
(members joining and leaving, a new generation each time), ``partitions`` events for some topics
(counts that grow, replica racks that move) and none for others, a subscribed topic that does not
exist, lag polls of one or two topics in either form, with lags and consume rates that change now
and then. A poll's records share its
``ts``; the metadata of an observation comes before its lag, and the next poll's records after
(the collector writes them so). The stream is cut anywhere, inside polls and between a poll's
metadata and its lag, each batch in any order, the state written and read back between batches, and
earlier records re-sent into later batches. The recommendations (every field of their rows) and the
decision state must be those of the stream in one call.
"""

from __future__ import annotations

import dataclasses
import itertools
import random

import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st

from streaming.contracts import events as ev
from streaming.policy.recommend import process
from streaming.state.group_state import GroupState
from tests.unit.streaming.policy.test_policy import POLICY, STEP, T0

RACKS = ("a", "b", "c")
LAGS = (0, 100, 2_000, 9_000, 40_000)
STEPS = (0, 50, 300, 5_000)
BUSY = (0.0, 0.01, 0.5, 1.0)
RATES = (0.0, 30.0, 500.0)
POLICIES = {
    "records": dataclasses.replace(POLICY, min_improvement=0.1, cooldown_s=20),
    "seconds": dataclasses.replace(POLICY, min_improvement=0.1, cooldown_s=20, skew_on="seconds"),
}


@st.composite
def streams(draw) -> list[dict]:
    """One group's events in the order the collector writes them."""
    topics = draw(st.sampled_from([("t0",), ("t0", "t1")]))
    ghost = draw(st.booleans())  # a subscribed topic that does not exist: no partitions, no lag
    count = {t: draw(st.integers(1, 5)) for t in topics}
    described = {t: draw(st.booleans()) for t in topics}  # a partitions event, or lag alone
    dense, polls = draw(st.booleans()), draw(st.integers(2, 10))
    # per poll: who is in the group (a bit per member of four), a growth, a rack move, the lags
    roster = draw(st.lists(st.integers(1, 15), min_size=polls, max_size=polls))
    # per poll: the members' own load reports (none, or one figure for all: busy, records/s), a
    # members event of the same generation when they change (the collector sends one so)
    reports = draw(st.lists(st.one_of(st.none(), st.tuples(st.sampled_from(BUSY),
                                                           st.sampled_from(RATES))),
                            min_size=polls, max_size=polls))
    grows = draw(st.lists(st.integers(0, 6), min_size=polls, max_size=polls))
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))  # lags, offsets: values matter less
    offsets: dict[tuple[str, int], int] = {}
    out: list[dict] = []
    generation, held, said = 0, None, None
    for i in range(polls):
        ts = T0 + i * STEP
        if roster[i] != held or reports[i] != said:
            generation += int(roster[i] != held)
            held, said = roster[i], reports[i]
            out.append(_members(ts, generation, held, topics, count, ghost, said))
        for t in topics:
            if described[t] and (i == 0 or grows[i] == 1 or (grows[i] == 2 and t == "t0")):
                count[t] += int(i > 0 and grows[i] == 1 and count[t] < 8)
                out.append(_partitions(ts, t, count[t], rng))
        lag = []
        for t in topics:
            for p in range(count[t]):
                offsets[t, p] = offsets.get((t, p), 10**6) + rng.choice(STEPS)
                c = offsets[t, p]
                lag.append(ev.lag_event(ts, "g", t, p, c, c + rng.choice(LAGS)))
        out += ev.dense(lag) if dense else lag
    return out


def _members(ts: int, generation: int, roster: int, topics: tuple[str, ...],
             count: dict[str, int], ghost: bool, report: tuple[float, float] | None = None
             ) -> dict:
    """Members ``roster`` (bits of four) holding the topics' partitions round robin (``ghost``:
    subscribed to one more topic, which has none); ``report``: each one's load report (busy,
    records/s; the first member's at a tenth of the rate: a slow one)."""
    ids = [f"C{m}" for m in range(4) if roster >> m & 1]
    parts = [(t, p) for t in topics for p in range(count[t])]
    held = {mid: [tp for k, tp in enumerate(parts) if k % len(ids) == j]
            for j, mid in enumerate(ids)}
    subscribed = [*topics, *(["gone"] if ghost else [])]
    members = [ev.member_entry(mid, subscribed, held[mid], client_id=f"c-{mid}",
                               rack=RACKS[int(mid[1]) % 3]) for mid in ids]
    if report is not None:
        for j, m in enumerate(members):
            m["load"] = {"ts": ts, "busy": report[0], "records_per_s": report[1] / (10 * (j == 0)
                                                                                   or 1)}
    return ev.members_event(ts, "g", generation, "range", members)


def _partitions(ts: int, topic: str, n: int, rng: random.Random) -> dict:
    return ev.partitions_event(ts, "g", topic, [
        ev.partition_entry(p, 1, [1, 2], rng.sample(RACKS, 2)) for p in range(n)])


def _decisions(state: GroupState) -> tuple:
    return (state.version, state.last_rec_ts, state.skew_streak, state.skew_ts, state.skew_prev,
            state.undecided, state.generation, state.partition_count("t0"), str(state.reported))


@settings(max_examples=80, deadline=None)
@given(streams(), st.sampled_from(sorted(POLICIES)), st.lists(st.integers(0, 10**4), max_size=8),
       st.integers(0, 4), st.randoms(use_true_random=False))
def test_cuts_anywhere_give_the_recommendations_of_one_call(events, on, cuts, resends, rnd):
    policy = POLICIES[on]
    whole = GroupState("g")
    expected = [r.to_row() for r in process(whole, events, policy)]
    bounds = sorted({c % (len(events) + 1) for c in cuts} | {0, len(events)})
    batches = [events[lo:hi] for lo, hi in itertools.pairwise(bounds)]
    for _ in range(resends):  # a copy of an earlier record, in its own batch or a later one
        src = rnd.randrange(len(batches))
        if batches[src]:
            batches[rnd.randrange(src, len(batches))].append(dict(rnd.choice(batches[src])))
    state, got = GroupState("g"), []
    for batch in batches:
        rnd.shuffle(batch)
        state = GroupState.from_bytes(state.to_bytes())
        got += [r.to_row() for r in process(state, batch, policy)]
    assert got == expected
    assert _decisions(state) == _decisions(whole)


@pytest.mark.parametrize("trigger", ["lag_skew", "membership_change", "partition_count_change",
                                     "rack_change", "utilisation"])
def test_the_streams_reach_every_trigger(trigger):
    """Not vacuous: the strategy draws streams that recommend on each trigger."""
    def recommends(events: list[dict]) -> bool:
        recs = process(GroupState("g"), events, POLICIES["records"])
        return any(trigger in r.triggers for r in recs)

    assert recommends(find(streams(), recommends,
                           settings=settings(max_examples=3000, database=None, deadline=None)))

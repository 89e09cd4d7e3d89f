"""A block of lag polls decided in one pass (streaming.policy.block) and the per-observation loop
alone (no block, no view read ahead) give the same output rows and the same states, byte for byte:
polls that trigger (skew streaks, retention risk, in and out of the cooldowns), metadata among the
polls, re-sent and out-of-order polls, late rows, batches cut anywhere."""

from __future__ import annotations

import contextlib
import random
from unittest import mock

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from streaming.config import PolicySettings
from streaming.contracts import events as ev
from streaming.job import stateful
from streaming.lag import ahead
from streaming.policy import block

from . import pyspark_worker
from .test_dense_stateful import COLUMNS, row

T0 = 1_763_800_000_000
TOPICS = ("t0", "t1")


def members(ts: int, generation: int, parts: int, owners: int, topics: int, seed: int,
            reports: bool = False) -> dict:
    """A members event: ``owners`` members sharing the partitions of the first ``topics`` topics,
    dealt out by ``seed`` (a reassignment when it changes); ``reports``: each with a load report of
    its own (the utilisation trigger may fire at any poll: no block then)."""
    rng = random.Random(seed)
    owned: list[list[tuple[str, int]]] = [[] for _ in range(owners)]
    for t in TOPICS[:topics]:
        for p in range(parts):
            owned[rng.randrange(owners)].append((t, p))
    listed = [ev.member_entry(f"m{i}", list(TOPICS[:topics]), owned[i], client_id=f"c{i}",
                              rack="ab"[i % 2]) for i in range(owners)]
    for m in listed if reports else ():
        m["load"] = {"ts": ts, "busy": rng.choice([0.2, 1.0]), "records_per_s": 40.0}
    return ev.members_event(ts, "g", generation, "range", listed)


def polls(seed: int, count: int, parts: int, topics: int, starts: bool) -> list[dict]:
    """``count`` polls of each topic: records produced faster than consumed on the first partitions
    at times (skew streaks), stalls and now and then a counter reset, log starts close behind on
    some (retention risk), a poll at times sent again (a retry, or a replay arriving late)."""
    rng = random.Random(seed)
    out, ts = [], T0
    committed = {t: [1000] * parts for t in TOPICS}
    ends = {t: [1100] * parts for t in TOPICS}
    skewed = False
    for _ in range(count):
        ts += rng.choice([10_000] * 8 + [5_000, 30_000])
        skewed = skewed != (rng.random() < 0.15)  # episodes of skew
        for t in TOPICS[:topics]:
            if rng.random() < 0.03:  # a counter reset (a topic re-created)
                committed[t], ends[t] = ([rng.randrange(10) for _ in range(parts)],
                                         [rng.randrange(10, 20)] * parts)
            ends[t] = [e + rng.choice([300, 500]) + (20_000 if skewed and p < 2 else 0)
                       for p, e in enumerate(ends[t])]
            committed[t] = [c + rng.choice([0, 400]) if skewed and p < 2
                            else max(c, e - rng.choice([0, 10, 50]))
                            for p, (c, e) in enumerate(zip(committed[t], ends[t], strict=True))]
            start = ([max(0, c - rng.choice([10, 5_000_000])) for c in committed[t]]
                     if starts else None)
            out.append(ev.dense_lag_event(ts, "g", t, range(parts), committed[t], ends[t],
                                          log_start_offsets=start))
        if rng.random() < 0.08:
            out.append(out[rng.randrange(len(out))])
    return out


@st.composite
def scenarios(draw) -> tuple[PolicySettings, list[list[dict]], list[int]]:
    """A policy, the group's events cut into batches anywhere, and each batch's watermark."""
    parts, owners, topics = (draw(st.integers(2, 6)), draw(st.integers(1, 3)),
                             draw(st.sampled_from([1, 1, 1, 2])))
    reports = draw(st.sampled_from([False, False, True]))
    events = [members(T0, 1, parts, owners, topics, 0, reports)]
    events += polls(draw(st.integers(0, 2**32 - 1)), draw(st.integers(1, 40)), parts, topics,
                    draw(st.booleans()))
    # metadata among the polls: a rebalance, or the same again
    for k in range(draw(st.sampled_from([0, 0, 1, 2]))):
        at = draw(st.integers(1, len(events) - 1))
        generation = 1 if draw(st.booleans()) else 2 + k
        events.insert(at, members(events[at]["ts"], generation, parts, owners, topics,
                                  generation - 1, reports))
    cuts = sorted(draw(st.lists(st.integers(1, len(events)), max_size=5)))
    batches = [events[a:b] for a, b in zip([0, *cuts], [*cuts, len(events)], strict=True) if b > a]
    watermarks, watermark, newest = [], 0, 0
    # at times behind the batches before (never going back): a replay in the batch, metadata
    for batch in batches:
        if draw(st.integers(0, 2)) == 0:  # sent late, at or below it is late
            watermark = max(watermark, newest - draw(st.sampled_from([0, 20_000, 100_000])))
        watermarks.append(watermark)
        newest = max(newest, *(e["ts"] for e in batch))
    policy = PolicySettings(skew_observations=draw(st.integers(1, 3)),
                            cooldown_s=draw(st.sampled_from([0, 30, 300])),
                            stuck_observations=draw(st.integers(2, 4)),
                            lag_history=draw(st.integers(2, 8)),
                            skew_on=draw(st.sampled_from(["records"] * 4 + ["seconds"])),
                            retention_risk_s=draw(st.sampled_from([0, 1800])))
    return policy, batches, watermarks


def run(policy: PolicySettings, batches: list[list[dict]], watermarks: list[int]) -> list:
    """Each batch as one call keyed by group through pyspark's serializer, the state carried over:
    every call's output rows and state."""
    update = stateful.update_function(stateful.Context(policy, 600_000))
    out: list = []
    blob = None
    for batch, watermark in zip(batches, watermarks, strict=True):
        frame = pd.DataFrame([row(e, i) for i, e in enumerate(batch)], columns=COLUMNS)
        got = pyspark_worker.run(update, ("g",), [frame], blob, watermark)
        blob = got.blob if got.updated else blob
        out.append((got.rows, blob))
    return out


@contextlib.contextmanager
def loop_alone():
    """The per-observation loop alone: no block decided, no view read ahead."""
    with (mock.patch.object(block, "decided", lambda *a, **k: 0),
          mock.patch.object(ahead, "block_views", lambda *a, **k: None)):
        yield


@settings(max_examples=120, deadline=None)
@given(scenarios())
def test_blocks_decided_in_one_pass_give_the_loops_rows_and_states(scenario):
    fast = run(*scenario)
    with loop_alone():
        slow = run(*scenario)
    assert fast == slow


def test_the_property_is_not_vacuous():
    """Seeded scenarios decide whole blocks, stop in the middle of one, and recommend from inside
    one."""
    taken: list[tuple[int, int]] = []
    real = block.decided

    def counting(state, b, policy):
        n = real(state, b, policy)
        taken.append((n, len(b.stamps)))
        return n

    recommended = 0
    for seed in range(12):
        policy = PolicySettings(skew_observations=2, cooldown_s=30, stuck_observations=3)
        events = [members(T0, 1, 4, 2, 1, 0), *polls(seed, 30, 4, 1, seed % 2 == 0)]
        batches = [events[:12], events[12:]]
        with mock.patch.object(block, "decided", counting):
            fast = run(policy, batches, [0, 0])
        with loop_alone():
            assert run(policy, batches, [0, 0]) == fast
        recommended += sum(r["kind"] == "recommendation" for rows, _ in fast for r in rows)
    assert (any(n == size > 1 for n, size in taken) and any(0 < n < size for n, size in taken)
            and recommended)

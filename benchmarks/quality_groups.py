"""The seeded groups of :mod:`benchmarks.quality`'s suites: a fresh group of each kind, a group
owning an assignment, and the churn round's group."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from assignors.model import Assignment, GroupSnapshot, Member


def _member_id(rng: np.random.Generator, i: int) -> str:
    return f"consumer-{i + 1}-{rng.integers(0, 16**8):08x}"


def _replicas(rng: np.random.Generator, racks: list[str], n: int, rf: int) -> list[tuple[str, ...]]:
    rf = min(rf, len(racks))
    return [tuple(str(r) for r in rng.choice(racks, rf, replace=False)) for _ in range(n)]


def _zipf_lags(rng: np.random.Generator, n: int) -> list[int]:
    return [int(x) for x in (rng.zipf(1.6, n).clip(max=10**6) * rng.integers(50, 150, n))]


def _sized_topics(rng: np.random.Generator, n_topics: int) -> dict[str, int]:
    """``n_topics`` topics sharing 20-200 partitions at random, at least one each."""
    sizes = rng.multinomial(int(rng.integers(20, 201)) - n_topics, [1 / n_topics] * n_topics) + 1
    return {f"topic-{k}": int(x) for k, x in enumerate(sizes)}


# Suites with Zipf lags on a few multi-partition topics: how many topics each draws from.
_ZIPF_TOPICS = {"zipf": (1, 5), "hetero": (3, 9), "rf-lt-racks": (1, 5)}


def _topics_and_lag(rng: np.random.Generator,
                    kind: str) -> tuple[dict[str, int], dict[str, list[int]], int]:
    """Suite ``kind``'s topics (name -> partitions), the lag of each partition, and the replication
    factor."""
    if kind == "hot":
        topics = _sized_topics(rng, int(rng.integers(1, 4)))
        lag = {t: [int(x) for x in rng.integers(0, 200, n)] for t, n in topics.items()}
        flat = [(t, p) for t, n in topics.items() for p in range(n)]
        for i in rng.choice(len(flat), int(rng.integers(1, 5)), replace=False).tolist():
            t, p = flat[i]
            lag[t][p] = int(rng.integers(50, 501)) * 200
        return topics, lag, int(rng.integers(2, 4))
    if kind == "single-topics":
        n_topics = int(rng.integers(20, 121))
        topics = {f"topic-{k:03d}": 1 for k in range(n_topics)}
        return topics, {t: _zipf_lags(rng, 1) for t in topics}, int(rng.integers(2, 4))
    if kind not in _ZIPF_TOPICS:
        raise ValueError(kind)
    topics = _sized_topics(rng, int(rng.integers(*_ZIPF_TOPICS[kind])))
    lag = {t: _zipf_lags(rng, n) for t, n in topics.items()}
    rf = int(rng.integers(1, 3)) if kind == "rf-lt-racks" else int(rng.integers(2, 4))
    return topics, lag, rf


def group(rng: np.random.Generator, kind: str) -> GroupSnapshot:
    """One fresh group (nobody owns anything) of suite ``kind``."""
    racks = ["a", "b", "c"]
    n_members = int(rng.integers(3, 13))
    rack_of: list[str | None] = [racks[i % len(racks)] for i in range(n_members)]
    if kind == "rf-lt-racks":  # some members without a rack, more racks than replicas
        racks = ["a", "b", "c", "d"][: int(rng.integers(3, 5))]
        rack_of = [racks[i % len(racks)] if rng.random() >= 0.25 else None
                   for i in range(n_members)]
    topics, lag, rf = _topics_and_lag(rng, kind)
    names = list(topics)
    members = []
    for i in range(n_members):
        if kind == "hetero":
            subs = (tuple(t for t in names if rng.random() < 0.5)
                    or (names[int(rng.integers(0, len(names)))],))
        else:
            subs = tuple(names)
        members.append(Member(_member_id(rng, i), subs, rack=rack_of[i]))
    replica_racks = {t: _replicas(rng, racks, n, rf) for t, n in topics.items()}
    return GroupSnapshot(topics=topics, members=tuple(members), replica_racks=replica_racks,
                         lag=lag)


def owning(snapshot: GroupSnapshot, assignment: Assignment, generation: int = 1) -> GroupSnapshot:
    members = tuple(
        dataclasses.replace(m, owned=tuple(assignment.get(m.member_id, ())), generation=generation)
        for m in snapshot.members
    )
    return dataclasses.replace(snapshot, members=members)


def churn(rng: np.random.Generator, snapshot: GroupSnapshot) -> tuple[GroupSnapshot, Callable]:
    """Round 2 of a churn case: who stays, who joins, the new lags; owned set per assignor later."""
    members = list(snapshot.members)
    leave = int(rng.integers(1, 3))
    join = int(rng.integers(1, 3))
    order = rng.permutation(len(members)).tolist()
    gone = set(order[:leave]) if len(members) - leave >= 2 else set()
    stay = [m for i, m in enumerate(members) if i not in gone]
    racks = sorted({m.rack for m in members if m.rack}) or [None]
    new = [
        Member(_member_id(rng, len(members) + k), members[0].topics,
               rack=racks[int(rng.integers(0, len(racks)))])
        for k in range(join)
    ]
    lag = {t: [int(x * f) for x, f in zip(v, rng.uniform(0.5, 1.5, len(v)), strict=True)]
           for t, v in snapshot.lag.items()}
    base = dataclasses.replace(snapshot, members=tuple(stay + new), lag=lag)

    def from_previous(previous: Assignment) -> GroupSnapshot:
        kept = {m.member_id for m in stay}
        return owning(base, {k: v for k, v in previous.items() if k in kept})

    return base, from_previous

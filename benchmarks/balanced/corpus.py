"""A fixed, seeded corpus of groups for the balanced assignor: what "the same results" is checked
on.

Item ``i`` of a corpus is drawn from ``random.Random(seed * 1_000_003 + i)`` alone, so a corpus of
300 is the first 300 of one of 3,000, on every platform (``random.Random`` with an int seed is
stable across versions). Each group mixes what changes the assignor's path: 1 to 4 topics of 1 to
~400 partitions in all, 1 to 12 members with one subscription or several, racks or none (and replica
racks on them or not), capacities or none, current owners (a range-like previous assignment, partly
stale) or none, stuck partitions, idle, even, skewed and zipf-like lags, produce rates with a
horizon, and ``max_count_skew`` None, 0 or 2. One item in eight is the job's own proposal shape
(:mod:`benchmarks.job.dense_step`: 100 partitions, 4 range members on racks a, b, c, a, five hot
partitions).

:func:`digest` hashes the assignments a ``solve`` gives the whole corpus: the test that pins it
(``tests/unit/assignors/test_balanced_digest.py``) catches any change of any result. :func:`shapes`
are the fixed groups :mod:`.speed` times (and :mod:`.same` can compare too).
"""

from __future__ import annotations

import dataclasses
import hashlib
import random
from collections.abc import Callable, Iterator

from assignors.balanced import BalancedOptions
from assignors.model import Assignment, GroupSnapshot, Member
from benchmarks.speed.child import _snapshot as speed_snapshot

Solve = Callable[[GroupSnapshot, BalancedOptions], Assignment]
Items = list[tuple[GroupSnapshot, BalancedOptions]]


def dense_step_group(rng: random.Random) -> GroupSnapshot:
    """The job's proposal shape: one topic of 100 partitions, 4 range members, 5 hot partitions."""
    g = rng.randrange(1000)
    lag = [max(20_000, 200 * 100) if p < 5 else 100 + (p * 7 + g) % 50 for p in range(100)]
    members = tuple(Member(f"m-{c}", ("t",), rack="abc"[c % 3], generation=1,
                           owned=tuple(("t", p) for p in range(25 * c, 25 * c + 25)))
                    for c in range(4))
    return GroupSnapshot(topics={"t": 100}, members=members, lag={"t": lag})


def _lags(rng: random.Random, n: int) -> list[int]:
    kind = rng.choice(("idle", "even", "skewed", "zipf", "mixed"))
    if kind == "idle":
        return [0] * n
    if kind == "even":
        return [rng.randint(90, 110) for _ in range(n)]
    if kind == "skewed":
        return [rng.choice((20_000, 50_000)) if rng.random() < 0.05 else rng.randint(0, 150)
                for _ in range(n)]
    if kind == "zipf":
        return [int(100_000 / (1 + rng.randrange(n)) ** 1.2) for _ in range(n)]
    return [0 if rng.random() < 0.3 else rng.randint(0, 10 ** rng.randint(1, 6)) for _ in range(n)]


def _owned(rng: random.Random, topics: dict[str, int],
           subs: list[tuple[str, ...]]) -> list[list[tuple[str, int]]]:
    """A previous assignment: each partition to a random subscriber with probability ``keep``, else
    nobody."""
    keep = rng.choice((0.0, 0.6, 1.0, 1.0))
    owned: list[list[tuple[str, int]]] = [[] for _ in subs]
    for t, n in topics.items():
        takers = [i for i, s in enumerate(subs) if t in s]
        for p in range(n):
            if takers and rng.random() < keep:
                i = (p * len(takers)) // n if rng.random() < 0.8 else rng.randrange(len(takers))
                owned[takers[i]].append((t, p))
    return owned


def random_group(rng: random.Random) -> GroupSnapshot:
    """One group of the corpus (see the module docstring)."""
    n_topics = rng.randint(1, 4)
    total = rng.choice((1, 2, 5, 12, 30, 60, 100, 100, 150, 250, 400))
    cuts = sorted(rng.randint(0, total) for _ in range(n_topics - 1))
    sizes = [b - a for a, b in zip([0, *cuts], [*cuts, total], strict=True)]
    topics = {f"t{j}": n for j, n in enumerate(sizes)}
    names = list(topics)
    n_members = rng.choice((1, 2, 3, 4, 4, 5, 8, 12))
    one_class = rng.random() < 0.6
    subs = [tuple(names) if one_class else tuple(rng.sample(names, rng.randint(1, len(names))))
            for _ in range(n_members)]
    racks = rng.random() < 0.5
    owned = _owned(rng, topics, subs)
    members = tuple(
        Member(f"c{i}-{rng.randrange(10_000)}", subs[i],
               rack=rng.choice(("a", "b", "c", None)) if racks else None, owned=tuple(owned[i]),
               generation=rng.choice((1, 2)) if owned[i] else None)
        for i in range(n_members))
    replica_racks = None
    if racks and rng.random() < 0.8:
        replica_racks = {t: [tuple(rng.sample(("a", "b", "c"), rng.randint(1, 2)))
                             for _ in range(n)]
                         for t, n in topics.items()}
    lag = {t: _lags(rng, n) for t, n in topics.items()}
    rates = ({t: [rng.uniform(0, 50) for _ in range(n)] for t, n in topics.items()}
             if rng.random() < 0.2 else {})
    all_tps = [(t, p) for t, n in topics.items() for p in range(n)]
    stuck = (frozenset(rng.sample(all_tps, min(len(all_tps), rng.randint(1, 4))))
             if rng.random() < 0.25 else frozenset())
    capacity = None
    if rng.random() < 0.3:
        capacity = {m.member_id: rng.choice((60.0, 80.0, 80.0, 180.0, 1000.0)) for m in members}
    return GroupSnapshot(topics=topics, members=members, replica_racks=replica_racks, lag=lag,
                         produce_rate=rates, stuck=stuck, capacity=capacity)


def extreme_group(rng: random.Random) -> GroupSnapshot:
    """A corpus group with capacities up to 1e600 apart (infinite scales, NaN member loads) and lags
    up to 2^63 - 1: inputs the job never makes, on which the assignor must still behave as it
    did."""
    group = random_group(rng)
    spread = rng.choice(((1e-300, 1e300), (1e-10, 1e10), (5e-324, 1.7e308)))
    lag = {t: [rng.choice((0, 1, 2**53, 2**63 - 1)) for _ in range(n)]
           for t, n in group.topics.items()}
    capacity = {m.member_id: rng.choice(spread) for m in group.members}
    return dataclasses.replace(group, lag=lag, capacity=capacity)


def random_options(rng: random.Random) -> BalancedOptions:
    return BalancedOptions(max_count_skew=rng.choice((None, None, 0, 2)),
                           load_tolerance=rng.choice((0.02, 0.02, 0.0, 0.1)),
                           cross_rack_cost=rng.choice((10.0, 10.0, 1.0)),
                           move_cost=rng.choice((1.0, 1.0, 10.0, 0.0)),
                           horizon_s=rng.choice((0.0, 0.0, 30.0)))


def corpus(count: int, seed: int = 1) -> Iterator[tuple[GroupSnapshot, BalancedOptions]]:
    """The first ``count`` (group, options) of corpus ``seed``."""
    for i in range(count):
        rng = random.Random(seed * 1_000_003 + i)
        if i % 8 == 0:
            yield dense_step_group(rng), BalancedOptions()
        else:
            yield random_group(rng), random_options(rng)


def wide_group(seed: int = 7) -> GroupSnapshot:
    """1,000 partitions over 4 topics, 20 members on 3 racks, replicas on 2 racks, a previous
    assignment, skew."""
    rng = random.Random(seed)
    topics = {f"t{j}": 250 for j in range(4)}
    tps = [(t, p) for t, n in topics.items() for p in range(n)]
    owned: list[list[tuple[str, int]]] = [[] for _ in range(20)]
    for i, tp in enumerate(tps):
        owned[i % 20].append(tp)
    members = tuple(Member(f"member-{i:02d}", tuple(topics), rack="abc"[i % 3],
                           owned=tuple(owned[i]), generation=1)
                    for i in range(20))
    lag = {t: [rng.choice((30_000, 80_000)) if rng.random() < 0.03 else rng.randint(50, 500)
               for _ in range(n)]
           for t, n in topics.items()}
    racks = {t: [tuple(rng.sample("abc", 2)) for _ in range(n)] for t, n in topics.items()}
    return GroupSnapshot(topics=topics, members=members, replica_racks=racks, lag=lag)


def speed_case(topics: int, partitions: int, consumers: int) -> GroupSnapshot:
    """``benchmarks.speed``'s balanced case of that size (its one home: pareto lags, 3 racks,
    round-robin owners)."""
    spec = {"topics": topics, "partitions": partitions, "consumers": consumers,
            "assignor": "balanced", "subscription": "equal"}
    snapshot: GroupSnapshot = speed_snapshot(spec)
    return snapshot


def shapes(names: list[str]) -> dict[str, Items]:
    rng = random.Random(31)
    make: dict[str, Callable[[], Items]] = {
        "dense-100x4": lambda: [(dense_step_group(rng), BalancedOptions()) for _ in range(20)],
        "wide-1000x20": lambda: [(wide_group(), BalancedOptions())],
        "corpus-300": lambda: list(corpus(300)),
        "balanced-10k": lambda: [(speed_case(10, 1000, 100), BalancedOptions())],
        "balanced-100k": lambda: [(speed_case(100, 1000, 1000), BalancedOptions())],
    }
    return {name: make[name]() for name in names}


def encode(assignment: Assignment) -> bytes:
    """An assignment as bytes, members in id order, each one's list as given."""
    return repr(sorted(assignment.items())).encode("utf-8")


def digest(solve: Solve, items: Iterator[tuple[GroupSnapshot, BalancedOptions]]) -> str:
    """SHA-256 over the encoded assignments ``solve`` gives ``items``, in order."""
    h = hashlib.sha256()
    for snapshot, opts in items:
        h.update(encode(solve(snapshot, opts)))
    return h.hexdigest()

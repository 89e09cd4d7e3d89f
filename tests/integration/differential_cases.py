"""The random groups of the differential tests (:mod:`.test_java_differential`): seeded cases over a
pool of topics, racks and owned partitions, in the conformance scenario schema."""

from __future__ import annotations

import os
import random
from typing import Any

SEED = int(os.environ.get("JAVA_DIFF_SEED", "20251121"))
CASES = int(os.environ.get("JAVA_DIFF_CASES", "600"))
# at most 2% of sticky cases may fall in the "Java depends on map order" bucket
ORDER_DEPENDENT_MAX = 0.02

TOPIC_POOL = [
    "t0",
    "t1",
    "t2",
    "t3",
    "topic",
    "topic1",
    "topic2",
    "orders",
    "payments",
    "a",
    "b-events",
    "x.y",
    "T9",
    "clicks",
]
RACKS = ["a", "b", "c"]
STICKY = ("sticky", "cooperative-sticky")


# -- random groups ---------------------------------------------------------------------------------


def _member_ids(rng: random.Random, n: int) -> list[str]:
    style = rng.choice(["consumer", "c", "member-", "uuid"])
    if style == "uuid":
        ids: set[str] = set()
        while len(ids) < n:
            ids.add(f"consumer-{rng.randrange(16**6):06x}")
        out = sorted(ids)
        rng.shuffle(out)
        return out
    nums = rng.sample(range(0, 20), n)
    return [f"{style}{k}" for k in nums]


def random_case(rng: random.Random, index: int) -> dict[str, Any]:
    """One random group in the conformance scenario schema."""
    names = rng.sample(TOPIC_POOL, rng.randint(1, 6))
    topics = {t: (0 if rng.random() < 0.05 else rng.randint(1, 12)) for t in names}
    n_members = rng.randint(1, 8)
    ids = _member_ids(rng, n_members)

    # subscriptions: often all equal (Kafka's constrained sticky builder), else random subsets
    equal = rng.random() < 0.45
    common = names if rng.random() < 0.6 else rng.sample(names, rng.randint(1, len(names)))
    ghost = rng.random() < 0.1  # a subscribed topic missing from the metadata
    subs = []
    for _ in ids:
        mine = list(common) if equal else rng.sample(names, rng.randint(1, len(names)))
        rng.shuffle(mine)
        if ghost and rng.random() < 0.5:
            mine.append("ghost")
        subs.append(mine)

    # racks: none, partial (RF 1-3 on random racks, some rackless brokers), or every partition on
    # every rack
    rack_mode = rng.choice(["none", "none", "partial", "partial", "all"])
    replica_racks: dict[str, list[list[str | None]]] | None = None
    if rack_mode != "none":
        replica_racks = {}
        for t, n in topics.items():
            if rack_mode == "partial" and rng.random() < 0.1:
                continue  # a topic whose brokers report no rack at all
            per = []
            for _ in range(n):
                if rack_mode == "all":
                    per.append(list(RACKS))
                else:
                    replicas: list[str | None] = rng.sample(RACKS, rng.randint(1, 3))
                    if rng.random() < 0.1:
                        replicas[rng.randrange(len(replicas))] = None
                    per.append(replicas)
            replica_racks[t] = per
    member_racks = rack_mode != "none" or rng.random() < 0.1
    instance_ids = rng.random() < 0.35

    # what members owned: nothing (fresh group), or a previous random assignment with generations
    prev = rng.choice(["fresh", "random", "random", "shifted"])
    owned: dict[str, list[list]] = {m: [] for m in ids}
    gens: dict[str, int | None] = {m: None for m in ids}
    if prev != "fresh":
        departed = [f"gone{k}" for k in range(rng.randint(0, 2))]
        holders = ids + departed
        prev_topics = dict(topics)
        if rng.random() < 0.15:
            prev_topics["deleted"] = rng.randint(1, 4)  # a topic deleted since
        for t, n in prev_topics.items():
            # Kafka partition counts only grow: "shifted" groups last saw fewer partitions
            shift = prev == "shifted" and rng.random() < 0.5
            before = max(0, n - rng.randint(1, 3)) if shift else n
            for p in range(before):
                if rng.random() < 0.12:
                    continue  # nobody owned it
                first = rng.choice(holders)
                if first in owned:
                    owned[first].append([t, p])
                if rng.random() < 0.05:  # claimed twice (stale member)
                    second = rng.choice(ids)
                    if second != first:
                        owned[second].append([t, p])
        base = rng.randint(1, 5)
        for m in ids:
            r = rng.random()
            gens[m] = base if r < 0.75 else (None if r < 0.85
                                             else max(1, base + rng.choice([-2, -1, 1])))
            if rng.random() < 0.5:
                rng.shuffle(owned[m])
            else:
                owned[m].sort()

    members = []
    for i, m in enumerate(ids):
        members.append(
            {
                "id": m,
                "instance_id": (f"inst-{rng.randrange(100)}-{i}"
                                if instance_ids and rng.random() < 0.6 else None),
                "rack": rng.choice([*RACKS, "d"]) if member_racks and rng.random() < 0.75 else None,
                "topics": subs[i],
                "owned": owned[m],
                "generation": gens[m],
            }
        )
    return {
        "name": f"random-{SEED}-{index}",
        "topics": topics,
        "replica_racks": replica_racks,
        "members": members,
        # Kafka's test-only switch (rack path even when every partition is on every rack); ours
        # takes it too
        "prefer_rack_aware_logic": rack_mode != "none" and rng.random() < 0.15,
    }



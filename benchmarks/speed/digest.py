"""A digest of the sticky family's outputs on seeded groups, for showing that two trees assign
alike.

    .venv/bin/python benchmarks/speed/digest.py [--root DIR] [--cases 300] [--seed 31]

``--root`` is the tree whose ``assignors`` package runs (default: this one), e.g. main unpacked with
``git archive main assignors benchmarks | tar -x -C DIR``. Prints one line per case: a SHA-256 of
``sticky``'s assignment and of ``cooperative-sticky``'s assignment and transferring partitions, list
and dict order included; then one line over all cases. Run it on both trees and ``diff`` the
outputs.

The groups are larger than the golden test's (tests/unit/assignors/test_sticky_golden.py): up to 40
topics of up to 400 partitions and up to 150 members, so that the constrained builder's whole passes
run wide and long. Each group is assigned fresh, then again with members owning that result after
churn: members leave and join, some lose or shuffle what they owned, some claim a partition another
member of the same generation claims, generations differ; a third of the groups have racks.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import random
import sys
from pathlib import Path
from typing import Any

RACKS = ("a", "b", "c")


def random_group(rng: random.Random, with_racks: bool) -> Any:
    from assignors.model import GroupSnapshot, Member

    n_topics = rng.randint(1, 40)
    topics = {f"{rng.choice(('t', 'topic-', 'T'))}{rng.randint(0, 999)}":
              rng.choice((0, *range(1, 401))) for _ in range(n_topics)}
    names = list(topics)
    common = tuple(rng.sample(names, rng.randint(1, len(names))))
    equal = rng.random() < 0.8
    members = {}
    for i in range(rng.randint(1, 150)):
        mid = f"{rng.choice(('c', 'consumer-', 'm'))}{i}-{rng.getrandbits(24):x}"
        subs = common if equal else tuple(rng.sample(names, rng.randint(1, len(names))))
        members[mid] = Member(member_id=mid, topics=subs,
                              rack=rng.choice((*RACKS, None)) if with_racks else None)
    replica_racks = None
    if with_racks:
        replica_racks = {t: [tuple(rng.sample(RACKS, rng.randint(1, 2))) for _ in range(n)]
                         for t, n in topics.items()}
    return GroupSnapshot(topics=topics, members=tuple(members.values()),
                         replica_racks=replica_racks)


def next_round(snapshot: Any, result: dict[str, list], rng: random.Random) -> Any:
    """Members re-join owning their result (most of it, some shuffled, some in another generation),
    some leave, some join, and a few claim a partition that another member claims too."""
    from assignors.model import GroupSnapshot, Member

    every = [tp for tps in result.values() for tp in tps]
    members = []
    for m in snapshot.members:
        if rng.random() < 0.15:
            continue
        owned = list(result.get(m.member_id, ()))
        if rng.random() < 0.2:
            owned = owned[:rng.randint(0, len(owned))]
        if rng.random() < 0.2:
            rng.shuffle(owned)
        if every and rng.random() < 0.1:
            owned += rng.sample(every, min(len(every), rng.randint(1, 5)))
            owned = list(dict.fromkeys(owned))
        generation = rng.choice((None, 1, 2, 2, 2, 3)) if owned else None
        members.append(Member(member_id=m.member_id, topics=m.topics, owned=tuple(owned),
                              generation=generation, rack=m.rack))
    for i in range(rng.randint(0, 20)):
        rack = rng.choice((*RACKS, None)) if snapshot.replica_racks is not None else None
        topics = snapshot.members[0].topics if rng.random() < 0.9 else tuple(snapshot.topics)
        members.append(Member(member_id=f"new-{i}-{rng.getrandbits(16):x}", topics=topics,
                              rack=rack))
    if not members:
        members.append(Member(member_id="only", topics=tuple(snapshot.topics)))
    return GroupSnapshot(topics=dict(snapshot.topics), members=tuple(members),
                         replica_racks=snapshot.replica_racks)


def digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, separators=(",", ":")).encode()).hexdigest()[:16]


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--root", default=str(Path(__file__).resolve().parents[2]))
    ap.add_argument("--cases", type=int, default=300)
    ap.add_argument("--seed", type=int, default=31)
    args = ap.parse_args()
    sys.path.insert(0, args.root)
    from assignors import registry

    sticky = registry.get("sticky")
    cooperative_module = importlib.import_module(registry.get("cooperative-sticky").__module__)
    cooperative = cooperative_module.assign_with_transfers
    rng = random.Random(args.seed)
    overall = hashlib.sha256()
    for i in range(args.cases):
        snapshot = random_group(rng, with_racks=i % 3 == 2)
        prefer = rng.random() < 0.3
        for round_ in ("first", "second"):
            result = sticky(snapshot, prefer_rack_aware_logic=prefer)
            coop, transferring = cooperative(snapshot, prefer_rack_aware_logic=prefer)
            line = (f"{i} {round_} sticky {digest(result)} "
                    f"cooperative {digest([coop, list(transferring.items())])}")
            print(line)
            overall.update(line.encode())
            if round_ == "first":
                snapshot = next_round(snapshot, result, random.Random(i))
    print(f"all {args.cases} cases {overall.hexdigest()[:16]}")


if __name__ == "__main__":
    main()

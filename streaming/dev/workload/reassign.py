"""Moving a topic's replicas to other brokers (and so other racks) with the admin API, live."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any


def shifted_replicas(replicas: Sequence[int], brokers: Sequence[int], shift: int = 1) -> list[int]:
    """Each replica moved ``shift`` places along the sorted broker ring, so with one broker per rack
    every replica lands on another rack (and the replica set stays on distinct brokers)."""
    ring = sorted(brokers)
    if len(set(replicas)) > len(ring):
        raise ValueError("more replicas than brokers")
    return [ring[(ring.index(r) + shift) % len(ring)] for r in replicas]


def move_replicas(admin: Any, topic: str, targets: Mapping[int, Sequence[int]] | None = None,
                  shift: int = 1, wait_s: float = 60.0) -> dict[int, list[int]]:
    """Reassign ``topic``'s partitions to ``targets`` (partition -> broker ids), or when not given,
    shift every replica to the next broker (see :func:`shifted_replicas`). Waits until the brokers
    report the new replica sets (up to ``wait_s``) and returns them."""
    from kafka import TopicPartition

    (described,) = admin.describe_topics([topic])
    if described.get("error_code"):
        raise ValueError(f"topic {topic} cannot be described (error {described['error_code']})")
    current = {p["partition_index"]: list(p["replica_nodes"]) for p in described["partitions"]}
    if targets is None:
        brokers = [b["broker_id"] for b in admin.describe_cluster()["brokers"]]
        targets = {p: shifted_replicas(r, brokers, shift) for p, r in current.items()}
    wanted = {int(p): [int(b) for b in r] for p, r in targets.items()}
    errors = admin.alter_partition_reassignments({TopicPartition(topic, p): r
                                                  for p, r in wanted.items()})
    failed = {tp: e for tp, e in errors.items() if e is not None}
    if failed:
        raise RuntimeError(f"reassignment of {topic} refused: {failed}")
    deadline = time.monotonic() + wait_s
    while True:
        (described,) = admin.describe_topics([topic])
        now = {p["partition_index"]: list(p["replica_nodes"]) for p in described["partitions"]}
        if all(sorted(now.get(p, ())) == sorted(r) for p, r in wanted.items()):
            return {p: now[p] for p in wanted}
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"reassignment of {topic} not done after {wait_s:.0f}s: {now} (wanted {wanted})")
        time.sleep(0.2)

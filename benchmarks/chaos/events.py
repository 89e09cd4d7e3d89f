"""The seeded events of a chaos run: lag polls with wandering hot partitions, a join, malformed
records."""

from __future__ import annotations

import random

from streaming.contracts import events as ev

T0 = 1_763_700_000_000
STEP = 10_000


def seeded_events(seed: int, groups: int,
                  polls: int) -> tuple[list[dict], list[tuple[bytes, bytes]]]:
    """Lag polls with wandering hot partitions, a member joining midway, and malformed records."""
    rng = random.Random(seed)
    out: list[dict] = []
    for g in range(groups):
        name = f"app-{g}"
        members = [ev.member_entry(f"C{i}", ["t0"], [("t0", p) for p in parts],
                                   client_id=f"client-C{i}", host="/127.0.0.1")
                   for i, parts in enumerate(([0, 1, 2], [3, 4, 5]))]
        out.append(ev.members_event(T0, name, 1, "range", members))
        join_at = rng.randrange(polls // 4, 3 * polls // 4)
        hot = {rng.randrange(6), rng.randrange(6)}
        for i in range(polls):
            ts = T0 + i * STEP
            if i % 10 == 0:
                hot = {rng.randrange(6), rng.randrange(6)}
            if i == join_at:
                joined = [*members, ev.member_entry("C2", ["t0"], [], client_id="client-C2",
                                                    host="/127.0.0.1")]
                out.append(ev.members_event(ts, name, 2, "range", joined))
            for p in range(6):
                lag = rng.randint(6000, 9000) if p in hot else rng.randint(100, 300)
                committed = 1_000_000 + ts // 100
                out.append(ev.lag_event(ts, name, "t0", p, committed, committed + lag))
    bad = [(b"bad", f"not json {seed}-{i}".encode()) for i in range(max(3, groups))]
    return out, bad

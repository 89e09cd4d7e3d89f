"""Our side, in a child process: the input snapshot, the timed rounds, RSS; ``--child`` prints the
result."""

from __future__ import annotations

import os
import resource
import time
from typing import Any

from .cases import canonical, topics_for


def _rss() -> int:
    """Current RSS in bytes (Linux), else the peak so far."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _snapshot(spec: dict[str, Any], owned: dict | None = None):
    import numpy as np

    from assignors.model import GroupSnapshot, Member

    t, p, c = spec["topics"], spec["partitions"], spec["consumers"]
    names = tuple(canonical("t", i, t) for i in range(t))
    ids = [canonical("c", i, c) for i in range(c)]
    kwargs: dict[str, Any] = {}
    racks = ("a", "b", "c")
    if spec["assignor"] in ("lag", "balanced"):
        rng = np.random.default_rng(42)
        lags = rng.pareto(1.5, size=(t, p)) * 1000
        kwargs["lag"] = {n: lags[k].astype(np.int64).tolist() for k, n in enumerate(names)}
    if spec["assignor"] == "balanced":
        rng = np.random.default_rng(7)
        first = rng.integers(0, 3, size=(t, p))
        kwargs["replica_racks"] = {
            n: [(racks[f], racks[(f + 1) % 3]) for f in first[k].tolist()]
            for k, n in enumerate(names)
        }
        # previous round-robin assignment over all partitions in topic order
        owned = {m: [] for m in ids}
        k = 0
        for n in names:
            for q in range(p):
                owned[ids[k % c]].append((n, q))
                k += 1
    members = []
    for i, m in enumerate(ids):
        mine = owned.get(m, ()) if owned else ()
        members.append(
            Member(
                member_id=m,
                topics=topics_for(spec["subscription"], i, c, names),
                rack=racks[i % 3] if spec["assignor"] == "balanced" else None,
                owned=tuple(mine),
                generation=1 if mine else None,
            )
        )
    return GroupSnapshot(topics=dict.fromkeys(names, p), members=tuple(members), **kwargs)


def _timed_rounds(fn, spec: dict[str, Any], snap) -> list[float]:
    """One timed call per round (round 2: every member but member 0 re-joins owning its round-1
    result)."""
    t0 = time.perf_counter()
    result = fn(snap)
    rounds = [time.perf_counter() - t0]
    if spec["rounds"] > 1:
        ids = [m.member_id for m in snap.members]
        # member 0 re-joins without owned partitions
        owned = {m: result.get(m, []) for m in ids[1:]}
        del result
        second = _snapshot(spec, owned)
        del owned
        t0 = time.perf_counter()
        result = fn(second)
        rounds.append(time.perf_counter() - t0)
    spec["assigned"] = sum(len(v) for v in result.values())
    return rounds


def child(spec: dict[str, Any]) -> dict[str, Any]:
    from assignors import registry

    fn = registry.get(spec["assignor"])
    snap = _snapshot(spec)
    base = _rss()
    cold = _timed_rounds(fn, spec, snap)
    peak_cold = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    for _ in range(spec.get("warmups", 0)):
        _timed_rounds(fn, spec, snap)
    warm = [_timed_rounds(fn, spec, snap) for _ in range(spec.get("repeats", 0))]
    return {
        "rounds_s": cold,
        "time_s": sum(cold),
        "warm_rounds_s": warm,
        "assigned": spec["assigned"],
        "base_rss": base,
        "peak_rss": peak_cold,
    }

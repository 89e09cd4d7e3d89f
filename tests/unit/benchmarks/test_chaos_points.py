"""The chaos sweep and its CI form, the chain, each kill at every fault point of
:data:`streaming.operations.faults.POINTS` (a point added there and to neither fails here)."""

from __future__ import annotations

from collections import Counter

from benchmarks.chaos import chain
from benchmarks.chaos.sweep import SWEEP
from streaming.operations import faults


def test_the_sweep_kills_at_every_fault_point():
    assert {point for point, _, _ in SWEEP} == set(faults.POINTS)


def test_the_chain_kills_at_every_fault_point_and_the_first_starts_side_files_twice():
    once = {f"{name}:{when}-rename" for name in chain.ONCE for when in ("before", "after")}
    assert Counter(chain.points()) == Counter(list(faults.POINTS) + sorted(once))


def test_the_chain_kills_on_a_job_with_history_but_at_a_first_start():
    """Every kill after the one that makes the history (batches 0-2 committed) is in a later batch
    or a start-up; those before it are the side files a new checkpoint writes, and the same files
    are killed again after it, each emptied first so that the start rebuilds it."""
    specs = [kill.spec for kill in chain.CHAIN]
    first = specs.index(f"batch:start@{chain.HISTORY}")
    assert chain.HISTORY >= 3 and all(
        int(spec.split("@")[1]) >= chain.HISTORY for spec in specs if "@" in spec)
    before, after = chain.points()[:first], chain.points()[first + 1:]
    assert set(before) <= set(after)
    assert all(kill.damage is None for kill in chain.CHAIN[:first])
    assert {kill.damage for kill in chain.CHAIN[first:] if kill.damage} == set(chain.ONCE)

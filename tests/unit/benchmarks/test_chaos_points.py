"""The chaos sweep and its CI form, the chain, each kill at every fault point of
:data:`streaming.operations.faults.POINTS` (a point added there and to neither fails here)."""

from __future__ import annotations

from collections import Counter

from benchmarks.chaos import chain
from benchmarks.chaos.sweep import SWEEP
from streaming.operations import faults


def test_the_sweep_kills_at_every_fault_point():
    assert {point for point, _, _ in SWEEP} == set(faults.POINTS)


def test_the_chain_kills_at_every_fault_point_once():
    assert Counter(chain.points()) == Counter(list(faults.POINTS))


def test_the_chain_kills_on_a_job_with_history_but_at_a_first_start():
    """Every kill after the one that makes the history (batches 0-2 committed) is in a later batch
    or a start-up; those before it are the side files a new checkpoint writes, none damaged."""
    specs = [kill.spec for kill in chain.CHAIN]
    first = specs.index(f"batch:start@{chain.HISTORY}")
    assert chain.HISTORY >= 3 and all(
        int(spec.split("@")[1]) >= chain.HISTORY for spec in specs if "@" in spec)
    once = {f"{name}:{when}-rename" for name in chain.ONCE for when in ("before", "after")}
    assert set(chain.points()[:first]) == once
    assert not once & set(chain.points()[first + 1:])
    assert all(kill.damage is None for kill in chain.CHAIN)


def test_the_rebuilt_chain_kills_each_side_file_again_on_a_job_with_history():
    """The long tier's chain: history first, then each side file before and after its rename,
    emptied before the kill that finds it so (the start rebuilds it)."""
    assert chain.REBUILT[0] == chain.MAKES_HISTORY
    assert Counter(chain.points(chain.REBUILT[1:])) == Counter(
        f"{name}:{when}-rename" for name in chain.ONCE for when in ("before", "after"))
    assert [kill.damage for kill in chain.REBUILT[1:] if kill.damage] == list(chain.ONCE)
    assert not chain.republishes(chain.REBUILT) and chain.republishes(chain.CHAIN)

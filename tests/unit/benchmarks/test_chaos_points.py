"""The chaos sweep and its CI form, the chain, each kill at every fault point of
:data:`streaming.operations.faults.POINTS` (a point added there and to neither fails here)."""

from __future__ import annotations

from benchmarks.chaos import chain
from benchmarks.chaos.sweep import SWEEP
from streaming.operations import faults


def test_the_sweep_kills_at_every_fault_point():
    assert {point for point, _, _ in SWEEP} == set(faults.POINTS)


def test_the_chain_kills_at_every_fault_point_once():
    assert sorted(chain.points()) == sorted(faults.POINTS)


def test_the_chain_kills_in_batches_only_after_its_history():
    """Every batch point but the one that makes the history is in a batch after it (``stateful``
    fires at a run's first state step, which comes after the history's kill)."""
    batches = [int(spec.split("@")[1]) for spec, _ in chain.CHAIN if "@" in spec]
    assert batches[0] == chain.HISTORY and min(batches) >= chain.HISTORY >= 3
    first = [spec for spec, _ in chain.CHAIN].index(f"batch:start@{chain.HISTORY}")
    assert all(point in chain.ONCE_POINTS for point in chain.points()[:first])

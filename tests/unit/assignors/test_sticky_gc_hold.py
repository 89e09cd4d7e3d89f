"""The collector setting the constrained builder holds during a large deal
(:mod:`assignors.sticky.gc_hold`): generation-1 collections held off, young collections left at the
caller's threshold, everything restored."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from assignors.sticky.gc_hold import young_collections_only


@pytest.fixture
def collector() -> Iterator[tuple[int, int, int]]:
    """The collector on with known thresholds; the test process's own state put back after."""
    enabled, thresholds = gc.isenabled(), gc.get_threshold()
    gc.enable()
    gc.set_threshold(700, 10, 10)
    yield gc.get_threshold()
    gc.set_threshold(*thresholds)
    if not enabled:
        gc.disable()


def test_generation_1_is_held_off_and_restored(collector: tuple[int, int, int]) -> None:
    with young_collections_only():
        young, middle, old = gc.get_threshold()
        assert (young, old) == (700, 10) and middle > 10 ** 6
        assert gc.isenabled()
    assert gc.get_threshold() == collector and gc.isenabled()


def test_restored_when_the_block_raises(collector: tuple[int, int, int]) -> None:
    with pytest.raises(RuntimeError), young_collections_only():
        raise RuntimeError("deal failed")
    assert gc.get_threshold() == collector


def test_nothing_changes_when_the_collector_is_off(collector: tuple[int, int, int]) -> None:
    gc.disable()
    with young_collections_only():
        assert gc.get_threshold() == collector and not gc.isenabled()
    assert gc.get_threshold() == collector and not gc.isenabled()


def test_the_young_generation_is_moved_on_first(collector: tuple[int, int, int]) -> None:
    made = [[] for _ in range(100)]  # young containers, as the member lists of a deal
    with young_collections_only():
        young = {id(o) for o in gc.get_objects(generation=0)}
        assert not any(id(lst) in young for lst in made)


def test_overlapping_deals_restore_once_the_last_one_ends(collector: tuple[int, int, int]) -> None:
    """Two threads' deals overlapping, the first to start ending first: still held until both
    end."""
    first, second = young_collections_only(), young_collections_only()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert gc.get_threshold()[1] > 10 ** 6
    second.__exit__(None, None, None)
    assert gc.get_threshold() == collector

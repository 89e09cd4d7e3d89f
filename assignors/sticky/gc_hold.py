"""Young collections only while the constrained builder deals out a large fresh assignment.

CPython tracks every new tuple, and only a young (generation-0) collection finds that a ``(topic,
number)`` tuple holds no container and stops tracking it: dealing a million partitions runs ~1,400
young collections whatever we do, and they stay (about 20 ns a tuple, while the tuples are fresh in
cache). Every tenth collection is a generation-1 one, though: it moves what it finds alive (a
block's iterators, the member lists) to the oldest generation, and once enough has moved there a
full collection runs, walking every live container, the member lists and their million tuples
included (12-116 ms each on 500 topics x 2,000 partitions x 2,000 members, in about half the calls).

The deal makes no reference cycles, so generation-1 and full collections during it find nothing of
ours to free: :func:`young_collections_only` holds them off and leaves young collections as they
are. It first moves the member lists, still empty, to the oldest generation (one generation-1
collection of whatever is young now), so that the caller's next generation-1 collection, which comes
soon after (its count has grown), finds nothing of the deal's to walk either. Full collections still
come when CPython's rule asks for one (the oldest generation grown by a quarter), only no longer
pushed on by the deal's own generation-1 collections; with the caller's next allocations and the
freeing of the result counted, a round costs less, rather than the same cost moved
(benchmarks/results/speed-many-topics.txt).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_NEVER = 1 << 30
"""A generation-1 threshold no deal reaches."""
_lock = threading.Lock()
_held = {"deals": 0, "threshold_1": 0}
"""Deals under way (threads may deal at once: the last one out restores) and the caller's threshold
1."""


@contextmanager
def young_collections_only() -> Iterator[None]:
    """Hold off generation-1 (and so full) collections for the block, the caller's threshold
    restored after it; nothing changes when the collector is off. Process-wide, as every collector
    setting: other threads' generation-1 collections wait for the block's end too."""
    if not gc.isenabled():
        yield
        return
    gc.collect(1)
    with _lock:
        if not _held["deals"]:
            young, _held["threshold_1"], old = gc.get_threshold()
            gc.set_threshold(young, _NEVER, old)
        _held["deals"] += 1
    try:
        yield
    finally:
        with _lock:
            _held["deals"] -= 1
            if not _held["deals"]:
                young, _, old = gc.get_threshold()
                gc.set_threshold(young, _held["threshold_1"], old)

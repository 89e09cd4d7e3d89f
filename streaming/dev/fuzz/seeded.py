"""Seeded draws of a Hypothesis strategy: the same examples for the same seed, whatever the
process has imported, for the fuzz runs and the tests that replay a fixed set (the property tests
draw with shrinking instead).

Dev tool only: hypothesis is never imported by production modules.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as seeded
from hypothesis import strategies as st


def draw(strategy: st.SearchStrategy[Any], n: int, seed: int) -> list[Any]:
    """``n`` examples of ``strategy``, the same for the same seed (Hypothesis' own generation, no
    shrinking, no example database)."""
    out: list[Any] = []

    @settings(max_examples=n, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @seeded(seed)
    @given(strategy)
    def collect(example: Any) -> None:
        out.append(example)

    with _no_local_constants():
        collect()
    return out


@contextlib.contextmanager
def _no_local_constants() -> Iterator[None]:
    """Hypothesis (6.1xx) also draws constants it finds in the project's modules loaded so far, so
    the same seed would draw otherwise once the job's modules are imported; for a seeded draw,
    none."""
    from hypothesis.internal.conjecture import providers

    found = providers._get_local_constants
    providers._get_local_constants = providers.Constants
    providers.CONSTANTS_CACHE.cache.clear()
    try:
        yield
    finally:
        providers._get_local_constants = found
        providers.CONSTANTS_CACHE.cache.clear()

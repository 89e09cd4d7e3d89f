"""Exponential backoff and a retry loop for calls that may fail while a dependency is away (Kafka at
start).

Pure Python (no Spark, no Kafka client): the waits are computed here and the sleeping is injectable,
so the give-up logic is tested without a clock.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


def backoff_delay(attempt: int, base_s: float, max_s: float) -> float:
    """Wait after the ``attempt``-th consecutive failure (1-based): base, 2 x base, 4 x base ...
    capped at max."""
    if attempt < 1:
        return 0.0
    # the exponent is capped so a long outage cannot overflow the float
    return float(min(max_s, base_s * 2 ** min(attempt - 1, 32)))


def retry_call(
    fn: Callable[[], T],
    *,
    attempts: int,
    base_s: float,
    max_s: float,
    retry_on: tuple[type[BaseException], ...],
    describe: Callable[[BaseException, float, int, int], str],
    give_up: Callable[[BaseException, int], BaseException],
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """``fn()``, called again after a backoff when it raises one of ``retry_on``, at most
    ``attempts`` times.

    ``describe(error, wait_s, attempt, attempts)`` is the one-line warning logged before each wait;
    when the last attempt fails, ``give_up(error, attempts)`` is raised (from None: no chained
    traceback)."""
    attempts = max(1, attempts)
    for attempt in range(1, attempts + 1):
        try:
            return fn()
        except retry_on as e:
            if attempt == attempts:
                raise give_up(e, attempts) from None
            wait = backoff_delay(attempt, base_s, max_s)
            log.warning(describe(e, wait, attempt, attempts))
            sleep(wait)
    raise AssertionError("unreachable")

"""Producers with a skewed per-partition rate, so that lag builds where the skew is.

Rates: ``total_rate`` records/s shared over the partitions either by a Zipf law (partition ``i``
gets a weight ``1 / (i + 1) ** s``; ``s = 0`` is uniform) or by naming hot partitions (each hot
partition weighs ``hot_factor``, the others 1). Example: 1000 records/s over 4 partitions with
``s = 1``: weights 1, 1/2, 1/3, 1/4 -> 480, 240, 160, 120 records/s.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from streaming.dev.workload.worker import PausableWorker

log = logging.getLogger(__name__)

TICK_S = 0.05


def partition_rates(partitions: int, total_rate: float, zipf: float | None = None,
                    hot: Sequence[int] = (), hot_factor: float = 10.0) -> list[float]:
    """Records/s per partition, summing to ``total_rate``."""
    if partitions < 1:
        raise ValueError("a topic has at least one partition")
    if total_rate < 0:
        raise ValueError("the rate cannot be negative")
    if hot:
        bad = [p for p in hot if not 0 <= p < partitions]
        if bad:
            raise ValueError(f"hot partitions {bad} not in 0..{partitions - 1}")
        weights = [hot_factor if p in set(hot) else 1.0 for p in range(partitions)]
    else:
        s = 0.0 if zipf is None else float(zipf)
        weights = [1.0 / (i + 1) ** s for i in range(partitions)]
    total = sum(weights)
    return [total_rate * w / total for w in weights]


class SkewedProducer(PausableWorker):
    """One kafka-python producer thread writing ``rates[p]`` records/s to each partition ``p`` of
    ``topic``."""

    def __init__(self, make_producer: Callable[[], Any], topic: str, rates: Sequence[float],
                 value_bytes: int = 100) -> None:
        super().__init__(f"producer-{topic}")
        self.topic = topic
        self.rates = list(rates)
        self.value = b"x" * value_bytes
        self._make_producer = make_producer
        self.sent = [0] * len(self.rates)
        self.errors = 0

    def run(self) -> None:
        try:
            producer = self._make_producer()
        except BaseException as e:
            self.failure = e
            self._paused.set()
            return
        credit = [0.0] * len(self.rates)
        last = time.monotonic()
        try:
            while not self._halt.is_set():
                if self._pause.is_set():
                    producer.flush(timeout=30)
                    self._paused.set()
                    while self._pause.is_set() and not self._halt.is_set():
                        time.sleep(0.02)
                    last = time.monotonic()
                    continue
                now = time.monotonic()
                elapsed, last = now - last, now
                for p, rate in enumerate(self.rates):
                    credit[p] += rate * elapsed
                    n = int(credit[p])
                    credit[p] -= n
                    for _ in range(n):
                        sent = producer.send(self.topic, value=self.value, partition=p)
                        sent.add_errback(self._on_error)
                    self.sent[p] += n
                time.sleep(TICK_S)
        finally:
            try:
                producer.flush(timeout=10)
                producer.close(timeout=5)
            except Exception:
                log.debug("closing producer of %s failed", self.topic, exc_info=True)

    def _on_error(self, exc: BaseException) -> None:
        self.errors += 1
        if self.errors in (1, 10, 100, 1000):
            log.warning("producing to %s failed (%d so far): %s", self.topic, self.errors, exc)

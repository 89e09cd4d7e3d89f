"""A librdkafka (``confluent-kafka``) consumer that processes at most ``rate`` records/s, polling in
a thread of the test process: the slow worker of the librdkafka tests, as ``-Drate`` makes
tests/java/RemoteAssignorMember.java one.

It commits as librdkafka does by default (the offsets of what ``consume()`` returned, every second)
and keeps the assignment its consumer reports, so a test can compare it with what Kafka says of the
group.
"""

from __future__ import annotations

import threading
import time
from typing import Any

BATCH = 20
"""Records per ``consume()``: few, so that a paced worker's committed offset follows what it
processed."""
SLACK_S = 0.05
"""Time spent polling counts as processing time up to this much (DemoConsumer's Pace does the
same)."""


class PacedRdkConsumer:
    """One consumer of ``topic`` with ``conf`` (librdkafka's property names) until :meth:`stop`."""

    def __init__(self, conf: dict[str, Any], topic: str, rate: float) -> None:
        from confluent_kafka import Consumer

        self.client_id = str(conf["client.id"])
        self.rate = rate
        self.consumed = 0
        self.errors: list[str] = []
        self._assigned: set[tuple[str, int]] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._consumer = Consumer({"auto.offset.reset": "earliest", "enable.auto.commit": True,
                                   "auto.commit.interval.ms": 1000, **conf})
        self._consumer.subscribe([topic])
        self._thread = threading.Thread(target=self._run, name=f"rdk-{self.client_id}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        due = time.monotonic()
        try:
            while not self._stop.is_set():
                got = [m for m in self._consumer.consume(BATCH, 0.2) if not self._failed(m)]
                with self._lock:
                    self._assigned = {(tp.topic, tp.partition)
                                      for tp in self._consumer.assignment()}
                    self.consumed += len(got)
                if got and self.rate > 0:  # hold the worker to its rate over time, not per batch
                    due = max(due, time.monotonic() - SLACK_S) + len(got) / self.rate
                    self._stop.wait(max(0.0, due - time.monotonic()))
        finally:
            self._consumer.close()  # commits and leaves the group

    def _failed(self, message: Any) -> bool:
        err = message.error()
        if err is not None:
            self.errors.append(str(err))
        return err is not None

    def assignment(self) -> set[tuple[str, int]]:
        with self._lock:
            return set(self._assigned)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)

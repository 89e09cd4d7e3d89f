"""A consumer group of kafka-python consumers, each in its own thread, each working at a set pace.

A consumer processes ``rate`` records/s (sleeping ``1/rate`` per record to simulate work; each
consumer its own rate, which :meth:`ConsumerWorker.set_rate` changes while it runs) and commits
synchronously after each batch, so the committed offset is exactly what it processed and lag builds
on the partitions produced faster than their consumer works. Client ids are ``<group>-<i>-rack-<r>``
and ``client_rack`` is the rack, so the collector (and KIP-392 follower fetching) know where each
member runs.

The assignors come as a list of instances (kafka-python 3.x): a built-in by name, or any
``AbstractPartitionAssignor`` instance (the hook for a recommendation-driven assignor).

Every consumer :func:`make_consumer` builds carries
:func:`~streaming.kafka_clients.join_guard.keep_rejoin_until_joined`, which closes a hole in
kafka-python 3.0.x's group coordinator that leaves a member "rebalancing" for good (see its
docstring).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from streaming.apply.builtin import BUILTIN_ASSIGNORS, builtin_assignor
from streaming.collector.member_metadata import client_id_with_rack
from streaming.config import Config
from streaming.dev.workload.worker import PausableWorker
from streaming.kafka_clients.join_guard import keep_rejoin_until_joined

log = logging.getLogger(__name__)

__all__ = ["BUILTIN_ASSIGNORS", "ConsumerWorker", "assignors_for", "builtin_assignor",
           "client_id_for", "make_consumer"]

AssignorSpec = str | Any | Sequence[str | Any] | Callable[[], Sequence[Any]]


def assignors_for(spec: AssignorSpec) -> list[Any]:
    """Assignor instances for one consumer: a built-in name, an instance, a list of either, or a
    callable returning the list (called once per consumer, so instances are never shared)."""
    if callable(spec) and not hasattr(spec, "assign"):
        return list(spec())
    items = [spec] if isinstance(spec, str) or hasattr(spec, "assign") else list(spec)
    return [builtin_assignor(a) if isinstance(a, str) else a for a in items]


def client_id_for(group: str, index: int, rack: str | None) -> str:
    return client_id_with_rack(f"{group}-{index}", rack)


def make_consumer(cfg: Config, group: str, client_id: str, rack: str | None,
                  assignors: Sequence[Any], offset_reset: str = "earliest", *,
                  rejoin_guard: bool = True, **extra: Any) -> Any:
    """A KafkaConsumer of ``group`` that commits by hand; ``extra`` overrides any setting.
    ``rejoin_guard=False`` leaves out :func:`keep_rejoin_until_joined` (only to measure what it
    fixes: benchmarks/settle.py)."""
    from kafka import KafkaConsumer

    from streaming.kafka_clients.factories import python_client_options

    opts = python_client_options(cfg, "consumer") | {
        "group_id": group,
        "client_id": client_id,
        "client_rack": rack or "",
        "enable_auto_commit": False,
        "auto_offset_reset": offset_reset,
        "partition_assignment_strategy": list(assignors),
        "session_timeout_ms": 10000,
        "heartbeat_interval_ms": 1000,
        "max_poll_interval_ms": 60000,
        "request_timeout_ms": 15000,
        "reconnect_backoff_max_ms": 2000,
        # see new topics and partitions in seconds, not kafka-python's default 5 minutes
        "metadata_max_age_ms": 5000,
    } | extra
    consumer = KafkaConsumer(**opts)
    return keep_rejoin_until_joined(consumer) if rejoin_guard else consumer


class ConsumerWorker(PausableWorker):
    """One consumer of the group in a thread: poll, process at ``rate`` records/s, commit."""

    def __init__(self, make: Callable[[], Any], topics: Sequence[str], rate: float, client_id: str,
                 rack: str | None) -> None:
        super().__init__(f"consumer-{client_id}")
        self.topics = list(topics)
        self.rate = float(rate)
        self.client_id = client_id
        self.rack = rack
        self._make = make
        self.processed = 0
        self.assigned: set[tuple[str, int]] = set()
        self.consumer: Any = None

    def run(self) -> None:
        try:
            self.consumer = self._make()
            self._await_metadata()
            self.consumer.subscribe(self.topics)
            while not self._halt.is_set():
                batch = self.batch()
                if self._pause.is_set():
                    self._paused.set()
                    while self._pause.is_set() and not self._halt.is_set():
                        time.sleep(0.02)
                    continue
                records = self.consumer.poll(timeout_ms=200, max_records=batch)
                self.assigned = {(tp.topic, tp.partition) for tp in self.consumer.assignment()}
                if not records:
                    continue
                offsets = {}
                for tp, recs in records.items():
                    for _ in recs:
                        if self.rate > 0:
                            time.sleep(1.0 / self.rate)
                    self.processed += len(recs)
                    offsets[tp] = recs[-1].offset + 1
                self._commit(offsets)
        except BaseException as e:
            self.failure = e
            log.exception("consumer %s failed", self.client_id)
        finally:
            self._paused.set()
            if self.consumer is not None:
                try:
                    self.consumer.close(autocommit=False, timeout_ms=10000)
                except Exception:
                    log.debug("closing consumer %s failed", self.client_id, exc_info=True)

    def set_rate(self, rate: float) -> None:
        """Process ``rate`` records/s from the next batch on (a consumer that slows down or speeds
        up midway)."""
        if rate < 0:
            raise ValueError(f"a rate cannot be negative: {rate}")
        self.rate = float(rate)

    def batch(self) -> int:
        """Records per poll: a tenth of a second of work (500 when unthrottled)."""
        return max(1, int(self.rate / 10)) if self.rate > 0 else 500

    def _await_metadata(self, timeout_s: float = 30.0) -> None:
        """Join only once this client sees the topics' partitions: a leader that assigns a topic
        whose metadata has not reached it yet gives nobody anything, and kafka-python may not
        rebalance again until long after the metadata arrives."""
        deadline = time.monotonic() + timeout_s
        for topic in self.topics:
            while not self.consumer.partitions_for_topic(topic) and time.monotonic() < deadline:
                if self._halt.wait(0.2):
                    return

    def _commit(self, offsets: dict) -> None:
        from kafka.structs import OffsetAndMetadata

        try:
            self.consumer.commit({tp: OffsetAndMetadata(o, "", -1) for tp, o in offsets.items()})
        except Exception as e:
            # e.g. a rebalance took the partition away: another member re-reads it
            log.info("consumer %s: commit failed (%s); records will be processed again",
                     self.client_id, e)

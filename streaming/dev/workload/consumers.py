"""A consumer group of kafka-python consumers, each in its own thread, each working at a set pace.

A consumer processes at most ``rate`` records/s (each consumer its own rate, which
:meth:`ConsumerWorker.set_rate` changes while it runs), counted against the clock: a batch of ``n``
records is done ``n / rate`` seconds after the previous one, or after now when it was idle, so the
rate holds whatever a poll and commit cost, as long as the machine keeps up (sleeping ``1/rate`` per
record made a 100/s consumer do 50/s on a loaded machine, and a test of the consumers needed then
counted three where two do). It commits synchronously after each batch, so the committed offset is
exactly what it processed and lag builds on the partitions produced faster than their consumer
works. Client ids are ``<group>-<i>-rack-<r>``
and ``client_rack`` is the rack, so the collector (and KIP-392 follower fetching) know where each
member runs.

The assignors come as a list of instances (kafka-python 3.x): a built-in by name, or any
``AbstractPartitionAssignor`` instance (the hook for a recommendation-driven assignor).

Every consumer :func:`make_consumer` builds carries
:func:`~streaming.kafka_clients.join_guard.keep_rejoin_until_joined`, which closes a hole in
kafka-python 3.0.x's group coordinator that leaves a member "rebalancing" for good (see its
docstring).

A consumer given a :class:`~streaming.apply.load.LoadMeter` reports its load: the wait until a batch
is done (its processing) and the commit count as busy, the time blocked in poll and a pause as idle.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from streaming.apply.builtin import BUILTIN_ASSIGNORS, builtin_assignor
from streaming.apply.load import LoadMeter
from streaming.collector.member_metadata import client_id_with_rack
from streaming.config import Config
from streaming.dev.workload.worker import PausableWorker
from streaming.kafka_clients.join_guard import keep_rejoin_until_joined

log = logging.getLogger(__name__)

CATCH_UP_S = 1.0
"""How far behind its schedule a backlogged consumer may catch up (a burst above its rate for at
most this long)."""

__all__ = ["BUILTIN_ASSIGNORS", "CATCH_UP_S", "ConsumerWorker", "assignors_for", "builtin_assignor",
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
                 rack: str | None, meter: LoadMeter | None = None) -> None:
        super().__init__(f"consumer-{client_id}")
        self.meter = meter
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
            self._opened()
            self._await_metadata()
            self.consumer.subscribe(self.topics)
            self._work()
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

    def _work(self) -> None:
        """Poll, wait until the batch's work is due, commit; until stopped."""
        due = ready = time.monotonic()
        full, round_trip = False, 0.0
        while not self._halt.is_set():
            if self._pause.is_set():
                self._hold()
                continue
            # read each time: the rate may change midway
            batch = self.wanted(due, round_trip)
            if self.meter is not None:
                self.meter.poll_started()
            records = self.consumer.poll(timeout_ms=200, max_records=batch)
            polled = sum(len(r) for r in records.values())
            records = self._kept(records)
            n = sum(len(r) for r in records.values())
            if self.meter is not None:
                # the records kept: those dropped (a subclass's stuck partitions) cost no work
                self.meter.poll_returned(n, self.meter.backlog.after_poll(self.consumer, records))
            was_full, full = full, polled >= batch
            if not n:
                continue
            now = time.monotonic()
            round_trip = now - ready  # the last commit and this poll
            due = self._scheduled(due, now, n, was_full)
            if self._halt.wait(max(0.0, due - time.monotonic())):
                break
            ready = time.monotonic()
            self.processed += n
            self._commit({tp: recs[-1].offset + 1 for tp, recs in records.items()})

    def _hold(self) -> None:
        """Wait while paused; for the meter, idle time (nothing is processed meanwhile)."""
        self._paused.set()
        if self.meter is not None:
            self.meter.poll_started()
        while self._pause.is_set() and not self._halt.is_set():
            time.sleep(0.02)
        if self.meter is not None:
            self.meter.poll_returned(0)

    def _opened(self) -> None:
        """Called once the consumer is made (a subclass watches it)."""

    def _kept(self, records: dict[Any, list[Any]]) -> dict[Any, list[Any]]:
        """The polled records to process (all); notes what the consumer owns now."""
        self.assigned = {(tp.topic, tp.partition) for tp in self.consumer.assignment()}
        return records

    def _scheduled(self, due: float, now: float, n: int, backlogged: bool) -> float:
        """When ``n`` records polled at ``now`` are done: ``n / rate`` after the previous batch when
        a backlog waited (the poll before came back full: the round trips are made up by a shorter
        wait, up to :data:`CATCH_UP_S` behind), else after now."""
        if self.rate <= 0:
            return now
        return (max(due, now - CATCH_UP_S) if backlogged else max(due, now)) + n / self.rate

    def wanted(self, due: float, round_trip: float) -> int:
        """Records to poll: a tenth of a second of work, or what the schedule will owe when the
        poll comes back (how far it runs behind now, plus the last commit and poll's round trip; at
        most :data:`CATCH_UP_S` of it). A round trip takes its own time (a few hundred ms on a
        loaded machine): batches of a tenth of a second would cap the consumer at a tenth of a
        second's records per round trip, far below its rate (a 60/s one at 25/s with 240-ms
        round trips), while a batch of what it owes keeps the rate whatever the round trip, as
        long as the machine can do the work at all."""
        if self.rate <= 0:
            return self.batch()
        owed = min(time.monotonic() - due + round_trip, CATCH_UP_S)
        return max(self.batch(), int(owed * self.rate))

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

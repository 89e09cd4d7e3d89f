"""A consumer group of kafka-python consumers, each in its own thread, each working at a set pace.

A consumer processes ``rate`` records/s (sleeping ``1/rate`` per record to simulate work; each consumer
its own rate, which :meth:`ConsumerWorker.set_rate` changes while it runs) and commits synchronously after
each batch, so the committed offset is exactly what it processed and lag builds on
the partitions produced faster than their consumer works. Client ids are
``<group>-<i>-rack-<r>`` and ``client_rack`` is the rack, so the collector (and KIP-392 follower
fetching) know where each member runs.

The assignors come as a list of instances (kafka-python 3.x): a built-in by name, or any
``AbstractPartitionAssignor`` instance (the hook for a recommendation-driven assignor).

Every consumer :func:`make_consumer` builds carries :func:`keep_rejoin_until_joined`, which closes a hole in
kafka-python 3.0.x's group coordinator that leaves a member "rebalancing" for good (see its docstring).
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

log = logging.getLogger(__name__)

__all__ = ["BUILTIN_ASSIGNORS", "ConsumerWorker", "assignors_for", "builtin_assignor", "client_id_for",
           "keep_rejoin_until_joined", "make_consumer"]

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


def make_consumer(cfg: Config, group: str, client_id: str, rack: str | None, assignors: Sequence[Any],
                  offset_reset: str = "earliest", *, rejoin_guard: bool = True, **extra: Any) -> Any:
    """A KafkaConsumer of ``group`` that commits by hand; ``extra`` overrides any setting.
    ``rejoin_guard=False`` leaves out :func:`keep_rejoin_until_joined` (only to measure what it fixes:
    benchmarks/settle.py)."""
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


def keep_rejoin_until_joined(consumer: Any) -> Any:
    """Make ``consumer``'s group coordinator finish every join it starts; returns ``consumer``.

    kafka-python 3.0.x (3.0.12 and its master as of 2026-08) runs a JoinGroup -> SyncGroup attempt as a
    task on the consumer's IO loop; ``poll`` awaits it only for its own timeout and leaves it in flight,
    and only the next ``poll`` whose ``need_rejoin()`` is true awaits it again and applies its result
    (state STABLE, heartbeats back on, the assignment taken). ``ConsumerCoordinator.need_rejoin()`` is true
    for two reasons that do not set the coordinator's ``rejoin_needed`` flag: the leader's metadata
    snapshot differs from the one it last assigned from (a metadata refresh after its assignment, common in
    a fresh group), or the subscription changed. A join started for such a reason undoes the reason itself
    (the leader's assignment step records the current snapshot), so once it outlives one ``poll``,
    ``need_rejoin()`` is false from then on: nobody applies the finished join. The member stays
    REBALANCING with heartbeats off (they are off for the join), ``poll`` goes on fetching its old
    partitions, its commits fail locally as "rebalance in progress", and after ``session_timeout_ms`` the
    broker drops it and the rest of the group settles a generation without it, for ever. Kafka's Java
    consumer has neither gap: its ``rejoinNeededOrPending()`` records these reasons as a rejoin request
    and stays true while a join is pending.

    So the coordinator's ``need_rejoin`` here also latches a reason into ``rejoin_needed`` (cleared only
    when kafka-python applies a finished join) and stays true while a join task exists. And a join
    attempt that succeeded while no ``poll`` awaited it is handed back to kafka-python to apply, rather
    than dropped and sent again (which costs the whole group another rebalance); a failed one is retried
    as kafka-python does (its response handlers have already reset what the error called for).

    A consumer without group management, or a kafka-python without these internals, is returned unchanged."""
    coordinator: Any = getattr(consumer, "_coordinator", None)
    if not _guardable(coordinator):
        return consumer
    wants_rejoin = coordinator.need_rejoin          # the class's own, bound
    join_group_async = coordinator.join_group_async

    def need_rejoin() -> bool:
        if wants_rejoin():
            if not coordinator.rejoin_needed:
                log.info("group %s: rejoin wanted though not requested (metadata or subscription changed); "
                         "holding the rejoin until a join completes", coordinator.group_id)
                coordinator.request_rejoin()
            return True
        return coordinator._join_task is not None

    async def join_until_joined(timeout_ms: Any = None) -> Any:
        task = coordinator._join_task
        if task is not None and task.is_done and task.exception is None:
            coordinator._join_task = _replay(coordinator._net, task.value)
        return await join_group_async(timeout_ms)

    coordinator.need_rejoin = need_rejoin
    coordinator.join_group_async = join_until_joined
    coordinator._rejoin_guarded = True
    return consumer


def _guardable(coordinator: Any) -> bool:
    """A group coordinator with the kafka-python internals the guard replaces, not guarded yet."""
    return coordinator is not None and not getattr(coordinator, "_rejoin_guarded", False) and all(
        hasattr(coordinator, a) for a in ("_join_task", "join_group_async", "need_rejoin", "request_rejoin",
                                          "rejoin_needed", "_net"))


def _replay(net: Any, value: Any) -> Any:
    """A pending future that succeeds with ``value`` on ``net``'s next loop step, so kafka-python's join
    loop, which only awaits a join task that is not done yet, awaits it and applies the join."""
    from kafka.future import Future

    replay = Future()
    net.call_soon(lambda: replay.success(value))
    return replay


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
        """Process ``rate`` records/s from the next batch on (a consumer that slows down or speeds up midway)."""
        if rate < 0:
            raise ValueError(f"a rate cannot be negative: {rate}")
        self.rate = float(rate)

    def batch(self) -> int:
        """Records per poll: a tenth of a second of work (500 when unthrottled)."""
        return max(1, int(self.rate / 10)) if self.rate > 0 else 500

    def _await_metadata(self, timeout_s: float = 30.0) -> None:
        """Join only once this client sees the topics' partitions: a leader that assigns a topic whose
        metadata has not reached it yet gives nobody anything, and kafka-python may not rebalance again
        until long after the metadata arrives."""
        deadline = time.monotonic() + timeout_s
        for topic in self.topics:
            while not self.consumer.partitions_for_topic(topic) and time.monotonic() < deadline:
                if self._halt.wait(0.2):
                    return

    def _commit(self, offsets: dict) -> None:
        from kafka.structs import OffsetAndMetadata

        try:
            self.consumer.commit({tp: OffsetAndMetadata(o, "", -1) for tp, o in offsets.items()})
        except Exception as e:  # e.g. a rebalance took the partition away: another member re-reads it
            log.info("consumer %s: commit failed (%s); records will be processed again", self.client_id, e)

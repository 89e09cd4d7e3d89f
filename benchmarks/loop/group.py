"""One consumer group of the closed-loop benchmark: its topics, producers and throttled consumers.

:class:`ThrottledWorker` processes at most ``capacity`` records/s, counted against the clock as
every workload consumer does (:class:`streaming.dev.workload.consumers.ConsumerWorker`), so the
capacity holds whatever the per-batch overhead (poll, commit), as long as the machine keeps up; it
commits after each batch. Whether it kept up is measured:
:meth:`BenchGroup.pace`. Each consumer has its own capacity (the workload's, changed midway by a
``capacity`` event), and counts which rack served its fetches (:mod:`benchmarks.loop.reads`). A
partition listed as stuck is never processed or committed by whoever owns it (a poison record): the
owner pauses it, and its lag grows with its production.

:class:`BenchGroup` owns the group's topics (``workload.replicas`` per partition, partition ``p``'s
from the ``p % 3``-th broker on, that one its leader, so every strategy sees the same racks), one
:class:`SkewedProducer` per topic and the consumers, built with the strategy's assignors
(:mod:`streaming.dev.workload.strategies`); the ``oracle``'s leader hands out its plan
(:mod:`benchmarks.loop.oracle_schedule`), and its group rebalances at each event.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from benchmarks.loop.oracle_schedule import OracleSchedule
from benchmarks.loop.reads import Reads
from benchmarks.loop.workloads import Event, Workload
from streaming.apply import plan
from streaming.apply.feed import LatestRecommendations
from streaming.apply.load import LoadMeter, member_id_of, producer_send
from streaming.apply.rejoin import RejoinOnRecommendation, request_rebalance
from streaming.config import Config
from streaming.contracts.member_load import Report
from streaming.dev.demo.monitor import GroupMonitor, Sample
from streaming.dev.workload.consumers import ConsumerWorker, client_id_for, make_consumer
from streaming.dev.workload.producers import SkewedProducer
from streaming.dev.workload.reassign import move_replicas
from streaming.dev.workload.strategies import (
    RebalanceLog,
    RecordingRecommendationAssignor,
    assignors_for,
    offsets_lag,
    planned_assignor,
)
from streaming.dev.workload.worker import describe_consumers
from streaming.kafka_clients import factories as kafka_clients

log = logging.getLogger(__name__)

REJOIN_INTERVAL_S = 3.0


class ThrottledWorker(ConsumerWorker):
    def __init__(self, make: Callable[[], Any], topics: Sequence[str], capacity: float,
                 client_id: str, rack: str | None,
                 stuck: frozenset[tuple[str, int]] = frozenset(),
                 meter: LoadMeter | None = None) -> None:
        super().__init__(make, topics, capacity, client_id, rack, meter)
        self.stuck = stuck
        # pace: over stretches where a backlog waited (the poll before came back full), the seconds
        # of work done at capacity and the wall time they took; worked / busy below 1 means this
        # machine could not keep up
        self.worked_s = 0.0
        self.busy_s = 0.0
        self.reads = Reads()

    def _opened(self) -> None:
        self.reads.watch(self.consumer, self.rack)
        self._start, self._work_s = time.monotonic(), 0.0

    def _kept(self, records: dict[Any, list[Any]]) -> dict[Any, list[Any]]:
        return self._owned_and_not_stuck(records)

    def _scheduled(self, due: float, now: float, n: int, backlogged: bool) -> float:
        if backlogged:
            # a backlog waited: the stretch since the last batch counts towards the pace
            self.busy_s += now - self._start
            self.worked_s += self._work_s
        self._start, self._work_s = now, n / self.rate
        return super()._scheduled(due, now, n, backlogged)

    def _owned_and_not_stuck(self, records: dict[Any, list[Any]]) -> dict[Any, list[Any]]:
        """Notes what the consumer owns now; pauses the stuck partitions it owns and drops their
        records (a poison record is never processed)."""
        owned = self.consumer.assignment()
        self.assigned = {(tp.topic, tp.partition) for tp in owned}
        if not self.stuck:
            return records
        hold = {tp for tp in owned if (tp.topic, tp.partition) in self.stuck} \
            - self.consumer.paused()
        if hold:
            self.consumer.pause(*hold)
        return {tp: r for tp, r in records.items() if (tp.topic, tp.partition) not in self.stuck}


class BenchMonitor(GroupMonitor):
    """A :class:`GroupMonitor` that leaves the stuck partitions' lag out of the consumers' lag: no
    assignment can drain it, and it would hide every other difference."""

    def __init__(self, group: str, t0: float, stuck: frozenset[tuple[str, int]]) -> None:
        super().__init__(group, t0)
        self.stuck = stuck
        self.assignments: list[tuple[float, dict[str, list[tuple[str, int]]]]] = []
        """(t, client id -> partitions) at each sample, for :mod:`benchmarks.loop.cross_floor`."""

    def observe(self, events: Any, now: float) -> Sample | None:
        kept = [e for e in events
                if not (e.get("type") == "lag"
                        and (e.get("topic"), e.get("partition")) in self.stuck)]
        sample = super().observe(kept, now)
        if sample is not None:
            self.assignments.append((sample.t,
                                     {c: list(tps) for c, tps in self.assignment.items()}))
        return sample


class BenchGroup:
    def __init__(self, cfg: Config, workload: Workload, strategy: str, group: str,
                 feed: LatestRecommendations | None = None, load_reports: bool = True) -> None:
        """``load_reports``: the rebalancer's consumers report their own load
        (:mod:`streaming.apply.load`; off: the job has the lag alone)."""
        if strategy == "rebalancer" and feed is None:
            raise ValueError("the rebalancer strategy needs a feed")
        self.cfg = cfg
        self.workload = workload
        self.strategy = strategy
        self.group = group
        self.feed = feed
        self.topics = {t.name: f"{group}-{t.name}" for t in workload.topics}
        self.stuck = frozenset((self.topics[t], p) for t, p in workload.stuck)
        self.rebalances = RebalanceLog()
        self.monitor = BenchMonitor(group, time.monotonic(), self.stuck)
        self.decisions: list[plan.Decision] = []
        self.producers: dict[str, SkewedProducer] = {}
        self.workers: dict[int, ThrottledWorker] = {}
        self.helpers: dict[int, RejoinOnRecommendation] = {}
        self._lock = threading.Lock()
        self._pace = [0.0, 0.0]  # worked_s, busy_s of the consumers stopped so far
        self._reads = Reads()  # bytes fetched by the consumers stopped so far
        self.capacities = {i: workload.capacity_of(i) for i in range(workload.consumers)}
        self.index_of: dict[str, int] = {}  # client id -> consumer index
        self.oracle = OracleSchedule(workload) if strategy == "oracle" else None
        self._reporter: Any = None
        self.reports: list[tuple[float, str, float, float, float | None, int | None]] = []
        """Each load report sent: (monotonic time, client id, busy, records/s, a record's cost)."""
        if strategy == "rebalancer" and load_reports:
            self._reporter = kafka_clients.producer(self.cfg, linger_ms=20, max_block_ms=1000)

    # -- setup -------------------------------------------------------------------------------------

    def create_topics(self, brokers: Sequence[int]) -> None:
        ring = sorted(brokers)
        k = self.workload.replicas

        def replicas(p: int) -> list[int]:
            """Partition p's replicas: from the (p % n)-th broker on, that one the leader."""
            return [ring[(p + i) % len(ring)] for i in range(k)]

        admin = kafka_clients.admin(self.cfg)
        try:
            layout = {self.topics[t.name]: {"assignments": {p: replicas(p)
                                                             for p in range(t.partitions)}}
                      for t in self.workload.topics}
            admin.create_topics(layout, wait_for_metadata=True)
        finally:
            admin.close()

    def start_consumers(self) -> None:
        for i in range(self.workload.consumers):
            self.add_consumer(i)

    def start_producers(self) -> None:
        for t in self.workload.topics:
            topic = self.topics[t.name]
            producer = SkewedProducer(lambda: kafka_clients.producer(self.cfg, linger_ms=20), topic,
                                      t.rates)
            self.producers[t.name] = producer
            producer.start()

    # -- the group ---------------------------------------------------------------------------------

    def rack_of(self, index: int) -> str:
        racks = self.workload.racks
        return racks[index % len(racks)]

    def add_consumer(self, index: int) -> None:
        rack = self.rack_of(index)
        client_id = client_id_for(self.group, index, rack)
        self.index_of[client_id] = index
        assignors = self._assignors(client_id, rack)
        worker = ThrottledWorker(
            lambda: make_consumer(self.cfg, self.group, client_id, rack, assignors, "earliest",
                                  metadata_max_age_ms=3000),
            list(self.topics.values()), self.capacities[index], client_id, rack, self.stuck,
            self._meter(client_id, lambda: worker.consumer))
        with self._lock:
            self.workers[index] = worker
        worker.start()
        if self.strategy == "rebalancer":
            assert self.feed is not None
            helper = RejoinOnRecommendation(lambda w=worker: w.consumer, self.feed, self.group,
                                            min_interval_s=REJOIN_INTERVAL_S)
            self.helpers[index] = helper.start()

    def _meter(self, client_id: str, consumer: Callable[[], Any]) -> LoadMeter | None:
        if self._reporter is None:
            return None
        send = producer_send(self._reporter, self.cfg.kafka.member_load_topic)

        def logged(report: Report) -> None:
            self.reports.append((time.monotonic(), report.client_id, report.busy,
                                 report.records_per_s, report.record_cost_s,
                                 report.records_lag_min))
            send(report)

        return LoadMeter(logged, self.group, client_id, member_id=lambda: member_id_of(consumer()))

    def _assignors(self, client_id: str, rack: str) -> list[Any]:
        if self.strategy == "oracle":
            return [planned_assignor(self._oracle_plan, client_id, rack, self.rebalances)]
        if self.strategy != "rebalancer":
            return assignors_for(self.strategy, self.cfg, self.group, client_id, rack,
                                 self.rebalances)
        # the project's setting: recommendations first; when none fits, the balanced fallback on the
        # lag the leader reads at that rebalance (plan.AUTO with a lag source)
        return [RecordingRecommendationAssignor(self.feed, self.group, rack, client_id, plan.AUTO,
                                                offsets_lag(self.cfg, self.group),
                                                on_decision=self.decisions.append,
                                                rebalances=self.rebalances)]

    def _oracle_plan(self, client_ids: Sequence[str]) -> dict[str, list[tuple[str, int]]]:
        """The oracle's assignment for these members, by client id, on this group's topics."""
        assert self.oracle is not None
        by_index = {self.index_of[c]: c for c in client_ids if c in self.index_of}
        plan = self.oracle.assignment(by_index)
        return {by_index[i]: [(self.topics[t], p) for t, p in parts] for i, parts in plan.items()}

    def begin_event(self, event: Event) -> None:
        """Before ``event`` acts: the oracle's next phase (so a member leaving or joining meets
        it)."""
        if self.oracle is not None:
            self.oracle.advance()

    def end_event(self, event: Event) -> None:
        """After ``event`` acted: the oracle's group rebalances onto the new phase's plan (a member
        leaving or joining has made it rebalance already)."""
        if self.oracle is None or event.kind in ("leave", "join"):
            return
        with self._lock:
            consumers = [w.consumer for w in self.workers.values() if w.consumer is not None]
        if consumers:
            request_rebalance(consumers[0])

    def set_capacity(self, index: int, capacity: float) -> None:
        """Consumer ``index`` processes ``capacity`` records/s from now on (and after leaving and
        rejoining)."""
        self.capacities[index] = capacity
        with self._lock:
            worker = self.workers.get(index)
        if worker is not None:
            worker.set_rate(capacity)

    def stop_consumer(self, index: int) -> None:
        helper = self.helpers.pop(index, None)
        if helper is not None:
            helper.stop()
        with self._lock:
            worker = self.workers.pop(index, None)
        if worker is not None:
            worker.stop()
            worker.join(30)
            self._pace[0] += worker.worked_s
            self._pace[1] += worker.busy_s
            self._reads.add(worker.reads)

    def pace(self) -> float | None:
        """Records processed per second of capacity while a backlog waited (1.0: the throttle held
        exactly; lower: this machine could not keep up, so part of the run's lag is the machine's,
        not the assignment's)."""
        with self._lock:
            workers = list(self.workers.values())
        worked = self._pace[0] + sum(w.worked_s for w in workers)
        busy = self._pace[1] + sum(w.busy_s for w in workers)
        return worked / busy if busy > 0 else None

    def reads(self) -> dict[str, int]:
        """Bytes its consumers fetched: in all, from a broker on another rack, from a follower
        (:mod:`benchmarks.loop.reads`)."""
        total = Reads()
        total.add(self._reads)
        with self._lock:
            for w in self.workers.values():
                total.add(w.reads)
        return total.figures()

    def assignment_samples(
            self, phase_at: Callable[[float], int]) -> list[tuple[float, int, dict[int, list]]]:
        """(t, the workload's stretch at t, consumer index -> partitions by the workload's topic
        names)."""
        topic_of = {bench: name for name, bench in self.topics.items()}
        return [(t, phase_at(t),
                 {self.index_of[c]: [(topic_of[tp[0]], tp[1]) for tp in tps if tp[0] in topic_of]
                  for c, tps in a.items() if c in self.index_of})
                for t, a in self.monitor.assignments]

    def describe(self) -> str:
        """Each consumer's partitions, coordinator state and thread stack (for a group that did not
        settle)."""
        with self._lock:
            workers = list(self.workers.values())
        return describe_consumers(workers)

    def assigned(self) -> bool:
        """Every partition is owned by exactly one running consumer."""
        want = {(topic, p) for t in self.workload.topics for topic in [self.topics[t.name]]
                for p in range(t.partitions)}
        with self._lock:
            owned = [w.assigned for w in self.workers.values()]
        return (bool(owned) and sum(len(a) for a in owned) == len(want)
                and set().union(*owned) == want)

    def set_rates(self, topic: str, rates: Sequence[float]) -> None:
        producer = self.producers[topic]
        for p, r in enumerate(rates):
            producer.rates[p] = r  # read by the producer's thread at every tick

    def move_replicas(self) -> None:
        admin = kafka_clients.admin(self.cfg)
        try:
            for topic in self.topics.values():
                move_replicas(admin, topic)
        finally:
            admin.close()

    def failures(self) -> list[str]:
        with self._lock:
            workers = list(self.workers.values())
        return [f"{w.client_id}: {w.failure!r}" for w in workers if w.failure is not None] + \
               [f"producer {p.topic}: {p.failure!r}" for p in self.producers.values()
                if p.failure is not None]

    def stop(self) -> None:
        for p in self.producers.values():
            p.stop()
        for i in list(self.workers):
            helper = self.helpers.pop(i, None)
            if helper is not None:
                helper.stop()
        with self._lock:
            workers = list(self.workers.values())
            self.workers.clear()
        for w in workers:
            w.stop()
        for w in workers:
            w.join(30)
            self._pace[0] += w.worked_s
            self._pace[1] += w.busy_s
            self._reads.add(w.reads)
        for p in self.producers.values():
            p.join(30)
        if self._reporter is not None:
            self._reporter.close(timeout=5)

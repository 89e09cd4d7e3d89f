"""The workload: a skewed producer and a live consumer group on one topic, driven from Python or the
CLI.

::

    with Workload(cfg, WorkloadOptions(topic="orders", group="orders-app", consumers=3)) as w:
        w.wait_assigned()
        w.add_consumer(rack="b")        # a member joins
        w.stop_consumer()               # the newest member leaves the group
        w.move_replicas()               # every replica moves to the next broker (another rack)
        w.pause(); ...; w.resume()      # freeze offsets (nothing produced, consumed or committed)
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, TextIO

from streaming.config import Config
from streaming.dev.workload.consumers import (
    AssignorSpec,
    ConsumerWorker,
    assignors_for,
    client_id_for,
    make_consumer,
)
from streaming.dev.workload.producers import SkewedProducer, partition_rates
from streaming.dev.workload.reassign import move_replicas
from streaming.dev.workload.worker import describe_consumers
from streaming.kafka_clients import factories as kafka_clients

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WorkloadOptions:
    topic: str = "workload"
    group: str = "workload-app"
    partitions: int = 12
    replication_factor: int | None = None
    """None: up to 3, as many as there are brokers."""
    produce_rate: float = 1000.0
    """records/s over all partitions."""
    zipf: float | None = 1.0
    hot: tuple[int, ...] = ()
    hot_factor: float = 10.0
    consumers: int = 3
    consume_rate: float = 100.0
    """records/s each consumer processes; 0 = as fast as it can."""
    racks: tuple[str, ...] = ("a", "b", "c")
    """consumer ``i`` runs on rack ``racks[i % len(racks)]``; empty = no racks."""
    assignor: AssignorSpec = "range"
    offset_reset: str = "earliest"
    value_bytes: int = 100


class Workload:
    def __init__(self, cfg: Config, options: WorkloadOptions | None = None,
                 out: TextIO | None = sys.stdout, **consumer_settings: Any) -> None:
        self.cfg = cfg
        self.options = options or WorkloadOptions()
        self.out = out
        self.consumer_settings = consumer_settings
        self.producer: SkewedProducer | None = None
        self.consumers: list[ConsumerWorker] = []
        self._next_index = 0
        self._lock = threading.Lock()
        self.rates = partition_rates(self.options.partitions, self.options.produce_rate,
                                     self.options.zipf, self.options.hot, self.options.hot_factor)

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> Workload:
        o = self.options
        admin = kafka_clients.admin(self.cfg)
        try:
            brokers = len(admin.describe_cluster()["brokers"])
        finally:
            admin.close()
        rf = o.replication_factor or max(1, min(3, brokers))
        kafka_clients.ensure_topics(
            self.cfg, {o.topic: {"num_partitions": o.partitions, "replication_factor": rf}})
        top = ", ".join(f"p{p}={r:.0f}/s"
                        for p, r in sorted(enumerate(self.rates), key=lambda x: -x[1])[:4])
        self._say(f"workload: topic {o.topic} ({o.partitions} partitions, RF {rf}), producing "
                  f"{o.produce_rate:.0f} records/s (top: {top}); group {o.group} with "
                  f"{o.consumers} consumer(s) at {o.consume_rate:.0f} records/s each, assignor "
                  f"{self._assignor_name()}")
        self.producer = SkewedProducer(
            lambda: kafka_clients.producer(self.cfg, linger_ms=10),
            o.topic, self.rates, o.value_bytes)
        self.producer.start()
        for _ in range(o.consumers):
            self.add_consumer()
        return self

    def stop(self) -> None:
        """Stop producing, then close every consumer (each leaves the group)."""
        if self.producer is not None:
            self.producer.stop()
        with self._lock:
            workers, self.consumers = self.consumers, []
        for w in workers:
            w.stop()
        for w in workers:
            w.join(30)
        if self.producer is not None:
            self.producer.join(30)
            self.producer = None
        if workers:
            self._say(
                f"workload: stopped ({len(workers)} consumer(s) left group {self.options.group})")

    def __enter__(self) -> Workload:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- the group ---------------------------------------------------------------------------------

    def add_consumer(self, rack: str | None = None,
                     assignor: AssignorSpec | None = None) -> ConsumerWorker:
        o = self.options
        with self._lock:
            i = self._next_index
            self._next_index += 1
        if rack is None and o.racks:
            rack = o.racks[i % len(o.racks)]
        client_id = client_id_for(o.group, i, rack)
        spec = o.assignor if assignor is None else assignor
        settings = self.consumer_settings

        def make() -> Any:
            return make_consumer(self.cfg, o.group, client_id, rack, assignors_for(spec),
                                 o.offset_reset, **settings)

        worker = ConsumerWorker(make, [o.topic], o.consume_rate, client_id, rack)
        worker.start()
        with self._lock:
            self.consumers.append(worker)
        self._say(f"workload: consumer {client_id} joins group {o.group}")
        return worker

    def stop_consumer(self, client_id: str | None = None) -> str:
        """Close one consumer (the newest, or the one named) so it leaves the group; return its
        client id."""
        with self._lock:
            if not self.consumers:
                raise ValueError("no consumer left to stop")
            worker = (next((w for w in self.consumers if w.client_id == client_id), None)
                      if client_id else self.consumers[-1])
            if worker is None:
                raise ValueError(f"no consumer {client_id!r}")
            self.consumers.remove(worker)
        worker.stop()
        worker.join(30)
        self._say(f"workload: consumer {worker.client_id} left group {self.options.group}")
        return worker.client_id

    def wait_assigned(self, timeout_s: float = 60.0) -> bool:
        """Wait until every partition is assigned to exactly one running consumer."""
        want = {(self.options.topic, p) for p in range(self.options.partitions)}
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self._lock:
                owned = [w.assigned for w in self.consumers]
            if (owned and all(owned) and sum(len(a) for a in owned) == len(want)
                    and set().union(*owned) == want):
                return True
            time.sleep(0.1)
        self._log_unassigned()
        return False

    def _log_unassigned(self) -> None:
        with self._lock:
            workers = list(self.consumers)
        log.warning("group %s did not settle:\n%s", self.options.group, describe_consumers(workers))

    # -- freezing offsets --------------------------------------------------------------------------

    def pause(self, timeout_s: float = 30.0) -> None:
        """Stop producing and consuming; returns once every sent record is acknowledged and every
        consumer committed what it processed, so end and committed offsets stay put until
        resume()."""
        if self.producer is not None and not self.producer.pause(timeout_s):
            raise TimeoutError("the producer did not pause")
        with self._lock:
            workers = list(self.consumers)
        for w in workers:
            if not w.pause(timeout_s):
                raise TimeoutError(f"consumer {w.client_id} did not pause")

    def resume(self) -> None:
        if self.producer is not None:
            self.producer.resume()
        with self._lock:
            workers = list(self.consumers)
        for w in workers:
            w.resume()

    # -- replicas ----------------------------------------------------------------------------------

    def move_replicas(self, targets: dict[int, list[int]] | None = None, shift: int = 1,
                      wait_s: float = 60.0) -> dict[int, list[int]]:
        admin = kafka_clients.admin(self.cfg)
        try:
            moved = move_replicas(admin, self.options.topic, targets, shift, wait_s)
        finally:
            admin.close()
        self._say(f"workload: replicas of {self.options.topic} moved: "
                  + ", ".join(f"p{p}->{r}" for p, r in sorted(moved.items())))
        return moved

    # -- reporting ---------------------------------------------------------------------------------

    def status(self) -> str:
        with self._lock:
            workers = list(self.consumers)
        sent = sum(self.producer.sent) if self.producer else 0
        done = sum(w.processed for w in workers)
        per = ", ".join(f"{w.client_id}:{len(w.assigned)}p/{w.processed}" for w in workers)
        return f"workload: produced {sent}, processed {done} by {len(workers)} consumer(s) [{per}]"

    def _assignor_name(self) -> str:
        a = self.options.assignor
        return a if isinstance(a, str) else getattr(a, "name", type(a).__name__)

    def _say(self, line: str) -> None:
        if self.out is not None:
            print(line, file=self.out, flush=True)
        else:
            log.info("%s", line)

"""The pieces of the closed loop, started and stopped together by the demo and the integration test.

- :class:`GroupRun`: a workload (skewed producer + consumer group) whose consumers use
  :class:`~streaming.apply.assignor.RecommendationAssignor` (fallback ``range``, so the group starts
  on Kafka's range assignment) and :class:`~streaming.apply.rejoin.RejoinOnRecommendation`; or, with
  ``apply=False``, plain kafka-python ``range`` consumers (the baseline);
- :class:`CollectorThread`: the collector in a thread; every poll's events go to the event topics
  and to the :class:`~streaming.dev.demo.monitor.GroupMonitor` of each group;
- :func:`loop_config`: the policy and job settings tuned for a short run.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from streaming.apply.assignor import strategy
from streaming.apply.feed import LatestRecommendations
from streaming.apply.plan import Decision
from streaming.apply.rejoin import RejoinOnRecommendation
from streaming.config import AUTO, Config
from streaming.dev.demo.monitor import GroupMonitor, Sample
from streaming.dev.workload import Workload, WorkloadOptions
from streaming.exporter import for_collector

log = logging.getLogger(__name__)


RATE_HORIZON_S = 60.0


def loop_config(cfg: Config, tables: str, checkpoints: str, cooldown_s: float = 30.0,
                trigger_interval: str = "3 seconds", rate_horizon_s: float = RATE_HORIZON_S,
                min_total_lag: int = 1000) -> Config:
    """``cfg`` with settings for a loop that should act within seconds: lag skew after 3
    observations, a short cooldown, a short trigger interval, mode ``auto`` for every group (a loop
    is there to show recommendations applied); tables and checkpoints of this run only.

    ``rate_horizon_s``: recommendations balance lag plus this many seconds of production per
    partition, so that the partitions produced fastest are spread too, not only the backlog of the
    moment (with lag alone, a consumer can get the backlog-free but busiest partitions and fall
    behind again)."""
    return dataclasses.replace(
        cfg,
        paths=dataclasses.replace(cfg.paths, tables=tables, checkpoints=checkpoints),
        policy=dataclasses.replace(cfg.policy, skew_observations=3, cooldown_s=cooldown_s,
                                   min_total_lag=min_total_lag, skew_threshold=1.5,
                                   min_improvement=0.2, rate_horizon_s=rate_horizon_s, mode=AUTO,
                                   mode_overrides={}),
        job=dataclasses.replace(cfg.job, trigger_interval=trigger_interval,
                                starting_offsets="earliest"),
    )


@dataclass(frozen=True)
class GroupOptions:
    group: str = "orders-app"
    topic: str = "orders"
    partitions: int = 12
    produce_rate: float = 300.0
    """records/s over all partitions, Zipf-skewed: under range the first consumer gets 2/3 of it."""
    zipf: float = 1.0
    hot: tuple[int, ...] = ()
    """partitions that each weigh ``hot_factor`` times one of the others; set, they replace the Zipf
    law."""
    hot_factor: float = 10.0
    consumers: int = 3
    consume_rate: float = 150.0
    """records/s each consumer processes: enough for a third of the load, not for range's first
    share."""
    racks: tuple[str, ...] = ("a", "b", "c")
    replication_factor: int = 1
    """one replica: each partition lives on one rack, so where a consumer runs matters."""
    apply: bool = True
    fallback: str = "range"
    min_rejoin_interval_s: float = 10.0
    metadata_max_age_ms: int = 3000
    """consumers refresh metadata this often, so the leader sees added partitions quickly."""


def stop_query(query: Any, timeout_s: float = 30.0) -> None:
    """Stop a streaming query between two micro-batches (stopping one mid-batch interrupts its
    ``foreachBatch`` and fills the log with Spark's InterruptedException traces)."""
    deadline = time.monotonic() + timeout_s
    while query.isActive and time.monotonic() < deadline:
        try:
            if not query.status.get("isTriggerActive"):
                break
        except Exception:
            break
        time.sleep(0.02)
    query.stop()


class GroupRun:
    def __init__(self, cfg: Config, options: GroupOptions,
                 feed: LatestRecommendations | None = None, monitor: GroupMonitor | None = None,
                 out: Any = None, on_decision: Callable[[Decision], None] | None = None) -> None:
        if options.apply and feed is None:
            raise ValueError("applying recommendations needs a feed")
        self.cfg = cfg
        self.options = options
        self.feed = feed
        self.monitor = monitor
        self.on_decision = on_decision
        self.decisions: list[Decision] = []
        self.helpers: list[RejoinOnRecommendation] = []
        o = options
        self.workload = Workload(
            cfg,
            WorkloadOptions(topic=o.topic, group=o.group, partitions=o.partitions,
                            replication_factor=o.replication_factor, produce_rate=o.produce_rate,
                            zipf=o.zipf, hot=o.hot, hot_factor=o.hot_factor, consumers=0,
                            consume_rate=o.consume_rate, racks=o.racks,
                            assignor="range" if not o.apply else "rebalancer"),
            out=out, metadata_max_age_ms=o.metadata_max_age_ms)

    def _decided(self, decision: Decision) -> None:
        self.decisions.append(decision)
        if self.on_decision is not None:
            self.on_decision(decision)

    def add_consumer(self, rack: str | None = None) -> Any:
        o = self.options
        if rack is None and o.racks:
            rack = o.racks[self.workload._next_index % len(o.racks)]
        if not o.apply:
            return self.workload.add_consumer(rack=rack, assignor="range")

        def assignors(rack: str | None = rack) -> list[Any]:
            return strategy(self.feed, o.group, rack=rack, fallback=o.fallback,
                            on_decision=self._decided)

        worker = self.workload.add_consumer(rack=rack, assignor=assignors)
        assert self.feed is not None  # __init__ refuses apply without a feed
        helper = RejoinOnRecommendation(lambda: worker.consumer, self.feed, o.group,
                                        min_interval_s=o.min_rejoin_interval_s)
        self.helpers.append(helper.start())
        return worker

    def start(self) -> GroupRun:
        self.workload.start()
        for _ in range(self.options.consumers):
            self.add_consumer()
        return self

    def wait_assigned(self, timeout_s: float = 60.0) -> bool:
        return self.workload.wait_assigned(timeout_s)

    def assignment(self) -> dict[str, set[tuple[str, int]]]:
        """client id -> partitions, as the running consumers report them."""
        with self.workload._lock:
            workers = list(self.workload.consumers)
        return {w.client_id: set(w.assigned) for w in workers}

    def stop(self) -> None:
        for h in self.helpers:
            h.stop()
        self.workload.stop()


class CollectorThread:
    """The collector, polling every ``interval_s`` in a daemon thread; publishes (unless ``publish``
    is False) and feeds each poll to the monitors, then calls ``on_sample(monitor, sample)``."""

    def __init__(self, cfg: Config, monitors: Sequence[GroupMonitor], interval_s: float = 2.0,
                 publish: bool = True,
                 on_sample: Callable[[GroupMonitor, Sample], None] | None = None) -> None:
        from streaming.collector import Collector, CollectorOptions
        from streaming.collector.member_load import LoadReports
        from streaming.collector.publisher import Publisher, ensure_event_topics

        self.monitors = list(monitors)
        self.on_sample = on_sample
        self.publisher = None
        if publish:
            ensure_event_topics(cfg)
            self.publisher = Publisher(cfg)
        include = "^(" + "|".join(m.group for m in self.monitors) + ")$"
        self.collector = Collector(cfg, CollectorOptions(interval_s=interval_s, include=include,
                                                         offset_reset="earliest"),
                                   sink=self._sink, out=None, export=for_collector(cfg),
                                   loads=LoadReports.of(cfg) if publish else None)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _sink(self, batch: Sequence[dict[str, Any]]) -> None:
        now = time.monotonic()
        for m in self.monitors:
            try:
                sample = m.observe(batch, now)
                if sample is not None and self.on_sample is not None:
                    self.on_sample(m, sample)
            except Exception:
                log.exception("monitor of %s failed", m.group)
        if self.publisher is not None:
            self.publisher.publish(batch)

    def start(self) -> CollectorThread:
        self._thread = threading.Thread(target=self.collector.run, kwargs={"stop": self._stop},
                                        name="collector", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 30.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
            self._thread = None
        self.collector.reader.close()
        if self.collector.loads is not None:
            self.collector.loads.close()  # its consumer's connections
        if self.publisher is not None:
            self.publisher.close()
            self.publisher = None

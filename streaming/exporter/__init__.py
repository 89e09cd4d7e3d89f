"""Prometheus ``/metrics`` of the job and the collector (:mod:`.metrics`); the collector's figures
per group are the operator's view's (:mod:`streaming.operator_view.groups`).

:func:`for_job` and :func:`for_collector` give a process its metrics object and start its HTTP
server once, when ``metrics.enabled`` is set; otherwise they return None and nothing is imported or
served. The collector's server also answers ``/consumers`` (:data:`CONSUMERS_PATH`): the consumers
each group needs as JSON, in the shape KEDA's ``metrics-api`` scaler reads (``?group=G``: that
group's object alone; docs/operating.md has a ScaledObject)::

    {"group": "orders-app", "consumers": 3, "fewest": 3, "most": 12, "members": 2,
     "capacity_records_per_s": 150.0, "headroom": 0.2, "known": true}
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from streaming.config import Config

if TYPE_CHECKING:
    from streaming.collector.cluster_snapshot import ClusterSnapshot
    from streaming.collector.collector import PollStats

log = logging.getLogger(__name__)

CONSUMERS_PATH = "/consumers"

_lock = threading.Lock()
# (JobMetrics, Server): one per process, kept across query restarts
_job: tuple[Any, Any] | None = None


def for_job(cfg: Config) -> Any:
    """The process's :class:`~.metrics.JobMetrics`, its server started on first use; None when
    disabled."""
    global _job
    if not cfg.metrics.enabled:
        return None
    with _lock:
        if _job is None:
            from streaming.exporter.metrics import JobMetrics
            from streaming.exporter.server import Server

            metrics = JobMetrics(cfg.metrics.max_groups)
            server = Server(metrics.registry, cfg.metrics.host, cfg.metrics.job_port)
            log.info("job metrics at %s", server.url)
            print(f"metrics at {server.url}", flush=True)
            _job = (metrics, server)
        return _job[0]


def job_server() -> Any:
    """The job's running :class:`~.server.Server`, if any (tests read its port)."""
    return _job[1] if _job else None


class Waiting(Protocol):
    """What the collector's export asks of each poll's groups: how long their recommendations
    waited."""

    def __call__(self, snap: ClusterSnapshot, groups: list[str]
                 ) -> Mapping[str, tuple[float, float]]: ...

    def close(self) -> None: ...


class CollectorExport:
    """Called by the collector after each poll with its snapshot and stats; owns the collector's
    server."""

    def __init__(self, cfg: Config, waiting: Callable[[], Waiting] | None = None) -> None:
        from streaming.exporter.metrics import PREFIX, CollectorMetrics
        from streaming.exporter.server import Server
        from streaming.exporter.waiting_gauges import WaitingGauges
        from streaming.lag.window import Windows

        self._own_topics = {cfg.kafka.lag_topic, cfg.kafka.metadata_topic, cfg.kafka.trigger_topic,
                            cfg.kafka.member_load_topic}
        self.windows = Windows(cfg.policy.lag_history, cfg.policy.stuck_observations)
        self.headroom = cfg.policy.capacity_headroom
        self.consumers: dict[str, Any] = {}
        """group -> its :class:`~streaming.operator_view.groups.Consumers` at the latest poll
        (what ``/consumers`` answers)."""

        self.metrics = CollectorMetrics(cfg.metrics.max_groups, cfg.metrics.max_topics_per_group)
        self.waiting = WaitingGauges(self.metrics.registry, PREFIX)
        self.waiting_of = waiting() if waiting is not None else None
        """snapshot, groups -> group -> (seconds awaiting approval, seconds unapplied): see
        streaming.apply.waiting (``rebalancer collect`` hands it over; the exporter decides
        nothing)."""
        self.server = Server(self.metrics.registry, cfg.metrics.host, cfg.metrics.collector_port,
                             {CONSUMERS_PATH: self._consumers_json})
        print(f"metrics at {self.server.url}", flush=True)

    def __call__(self, snap: ClusterSnapshot, stats: PollStats) -> None:
        try:  # the collector's groups: those reading something besides the rebalancer's own topics
            groups = [g for g in sorted(snap.groups)
                      if not (snap.group_topics(g) and snap.group_topics(g) <= self._own_topics)]
            self.windows.observe_topics(snap.ts, {tp: e for tp, e in snap.end.items()
                                                  if tp[0] not in self._own_topics})
            figures = [self._figures(snap, g) for g in groups]
            self.consumers = {f.group: f.consumers for f in figures}
            self.windows.retain(groups)
            self.metrics.observe_poll(figures, stats.seconds, stats.lag_events,
                                      stats.metadata_events, stats.warnings)
            admitted = self.metrics.cap.admitted
            self._observe_waiting(snap, [f.group for f in figures if f.group in admitted])
        except Exception:  # metrics must never stop the collector
            log.warning("updating the collector's metrics failed", exc_info=True)

    def _figures(self, snap: ClusterSnapshot, group: str) -> Any:
        """The group's figures: lag seconds, stuck partitions, seconds to loss and hot partitions
        from the windows this poll extends."""
        from streaming.operator_view import groups as view

        live = observe(self.windows, snap, group)
        rows = view.partition_rows(snap, group, lag_seconds=live.age, loss_seconds=live.loss_s)
        produce = {t: self.windows.produce_rates(t) for t in snap.group_topics(group)}
        members = [dataclasses.replace(m.member, host=m.host) for m in snap.groups[group].members]
        capacities = self.windows.capacities(snap.ts, group, members, self.headroom)
        needed = view.consumers(snap, group, rows, capacities, produce, self.headroom)
        return view.figures(snap, group, rows, live.rate, live.stuck, live.loss_s, produce, needed)

    def _observe_waiting(self, snap: ClusterSnapshot, groups: list[str]) -> None:
        """How long each group's latest feed record waited for approval or to be applied
        (waiting.py)."""
        if self.waiting_of is not None:
            non_share = [g for g in groups if not snap.groups[g].share]
            self.waiting.update(self.waiting_of(snap, non_share))

    def _consumers_json(self, query: Mapping[str, list[str]]) -> tuple[int, Any]:
        """(HTTP status, JSON body) of ``/consumers``: every group's, or with ``group=G`` that
        group's object."""
        held = self.consumers
        if "group" not in query:
            return 200, {"groups": {g: c.as_dict() for g, c in sorted(held.items())}}
        group = query["group"][0]
        if group not in held:
            return 404, {"error": f"group {group} is not watched (or not polled yet)"}
        return 200, {"group": group, **held[group].as_dict()}

    def close(self) -> None:
        if self.waiting_of is not None:
            self.waiting_of.close()
        self.server.close()


def observe(windows: Any, snap: ClusterSnapshot, group: str) -> Any:
    """The group's partitions of ``snap`` into its window (:class:`streaming.lag.window.Windows`):
    its :class:`~streaming.lag.window.Live` figures."""
    from streaming.lag.history import UNKNOWN

    committed = snap.committed.get(group, {})
    return windows.observe(snap.ts, group, ((tp, c, snap.end[tp], snap.begin.get(tp, UNKNOWN))
                                            for tp, c in committed.items() if tp in snap.end))


def for_collector(cfg: Config, waiting: Callable[[], Waiting] | None = None
                  ) -> CollectorExport | None:
    """The collector's export when ``metrics.enabled``; ``waiting`` makes what its recommendation
    gauges read (``rebalancer collect`` passes :class:`streaming.apply.waiting.SnapshotWaiting`)."""
    return CollectorExport(cfg, waiting) if cfg.metrics.enabled else None

"""The operator's view: live group rows (:mod:`.view`) and Prometheus ``/metrics`` (:mod:`.metrics`).

:func:`for_job` and :func:`for_collector` give a process its metrics object and start its HTTP server once,
when ``metrics.enabled`` is set; otherwise they return None and nothing is imported or served.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any

from streaming.config import Config

if TYPE_CHECKING:
    from streaming.collector.collector import PollStats
    from streaming.collector.poll import ClusterSnapshot

log = logging.getLogger(__name__)

_lock = threading.Lock()
_job: tuple[Any, Any] | None = None  # (JobMetrics, Server): one per process, kept across query restarts


def for_job(cfg: Config) -> Any:
    """The process's :class:`~.metrics.JobMetrics`, its server started on first use; None when disabled."""
    global _job
    if not cfg.metrics.enabled:
        return None
    with _lock:
        if _job is None:
            from streaming.exporter.metrics import JobMetrics, Server

            metrics = JobMetrics(cfg.metrics.max_groups)
            server = Server(metrics.registry, cfg.metrics.host, cfg.metrics.job_port)
            log.info("job metrics at %s", server.url)
            print(f"metrics at {server.url}", flush=True)
            _job = (metrics, server)
        return _job[0]


def job_server() -> Any:
    """The job's running :class:`~.metrics.Server`, if any (tests read its port)."""
    return _job[1] if _job else None


class CollectorExport:
    """Called by the collector after each poll with its snapshot and stats; owns the collector's server."""

    def __init__(self, cfg: Config) -> None:
        from streaming.exporter.metrics import CollectorMetrics, Server
        from streaming.lag.window import Windows

        self._own_topics = {cfg.kafka.lag_topic, cfg.kafka.metadata_topic, cfg.kafka.trigger_topic}
        self.windows = Windows(cfg.policy.lag_history, cfg.policy.stuck_observations)

        self.metrics = CollectorMetrics(cfg.metrics.max_groups, cfg.metrics.max_topics_per_group)
        self.server = Server(self.metrics.registry, cfg.metrics.host, cfg.metrics.collector_port)
        print(f"metrics at {self.server.url}", flush=True)

    def __call__(self, snap: ClusterSnapshot, stats: PollStats) -> None:
        try:  # the collector's groups: those reading something besides the rebalancer's own topics
            groups = [g for g in sorted(snap.groups) if not (snap.group_topics(g) and
                                                             snap.group_topics(g) <= self._own_topics)]
            self.windows.observe_topics(snap.ts, {tp: e for tp, e in snap.end.items() if tp[0] not in self._own_topics})
            figures = [self._figures(snap, g) for g in groups]
            self.windows.retain(groups)
            self.metrics.observe_poll(figures, stats.seconds, stats.lag_events, stats.metadata_events,
                                      stats.warnings)
        except Exception:  # metrics must never stop the collector
            log.warning("updating the collector's metrics failed", exc_info=True)

    def _figures(self, snap: ClusterSnapshot, group: str) -> Any:
        """The group's figures: lag seconds, stuck partitions, seconds to loss and hot partitions from the windows
        this poll extends."""
        from streaming.exporter import view

        live = observe(self.windows, snap, group)
        rows = view.partition_rows(snap, group, lag_seconds=live.age, loss_seconds=live.loss_s)
        produce = {t: self.windows.produce_rates(t) for t in snap.group_topics(group)}
        return view.figures(snap, group, rows, live.rate, live.stuck, live.loss_s, produce)

    def close(self) -> None:
        self.server.close()


def observe(windows: Any, snap: ClusterSnapshot, group: str) -> Any:
    """The group's partitions of ``snap`` into its window (:class:`streaming.lag.window.Windows`): its
    :class:`~streaming.lag.window.Live` figures."""
    committed = snap.committed.get(group, {})
    return windows.observe(snap.ts, group, ((tp, c, snap.end[tp], snap.begin.get(tp, -1))
                                            for tp, c in committed.items() if tp in snap.end))


def for_collector(cfg: Config) -> CollectorExport | None:
    return CollectorExport(cfg) if cfg.metrics.enabled else None

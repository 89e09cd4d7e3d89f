"""Prometheus metrics of the job and the collector: definitions and the group cap.

Each process has its own :class:`~prometheus_client.CollectorRegistry` (no process-wide default, so
tests and two exporters in one process do not collide) and serves it on ``metrics.host:port``
(loopback unless configured; :class:`streaming.exporter.server.Server`). Names follow Prometheus
conventions: ``kafka_rebalancer_`` prefix, the unit as suffix (``_records``, ``_seconds``,
``_ratio``), ``_total`` for counters, labels ``group`` and ``topic``.

Cardinality is bounded: at most ``metrics.max_groups`` groups get series (the first ones seen, a
group that goes away frees its place); the others are counted in
``kafka_rebalancer_metrics_dropped_groups``. Per-topic series are capped per group likewise.
Rejection reasons are cut to their kind (the text before ``:``), since an internal error's reason
carries its message.

Lag in seconds (:mod:`streaming.lag.rules`): live from the collector, which keeps a window of its
polls (:mod:`streaming.lag.window`): ``kafka_rebalancer_group_max_member_lag_seconds`` (the age of
the oldest unconsumed record, as kafka-lag-exporter's time lag),
``_group_max_member_catch_up_seconds`` (lag / recent consume rate; +Inf when a member with lag
consumed nothing) and ``_group_stuck_partitions``, by the job's rules; NaN while not known (the
first poll). From the job, the latest recommendation's ``_recommendation_catch_up_seconds``
(``when`` before/after) and ``_recommendation_lag_age_seconds``, as its Delta row has them (NaN for
null), ``_member_capacity_records_per_second`` per member (the capacities it was made with; none
while unknown), and the members it names slow (:mod:`streaming.exporter.member_gauges`).

Data-loss risk and hot partitions, live from the collector (:mod:`streaming.lag.loss_risk`,
:mod:`streaming.lag.hot`): ``_group_retention_loss_seconds`` (the soonest seconds until a
partition's committed offset falls below its log start at current rates: 0 already lost, +Inf none
at risk, NaN unknown), ``_group_retention_headroom_records`` (the least records retention may still
delete before the group loses any), ``_group_lost_records`` (records deleted before the group read
them, over its partitions now below the log start), ``_group_hot_partitions`` and
``_hot_partition_records_per_second`` (one series per hot partition, its produce rate; at most
:data:`MAX_HOT_SERIES` per group). conf/prometheus/rebalancer-alerts.yml alerts on them. Consumers
needed (:mod:`streaming.lag.sizing`): ``_group_consumers_needed``, ``_group_consumers_max`` and
``_group_consumer_capacity_records_per_second``; the same as JSON at ``/consumers`` for KEDA.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from collections.abc import Iterable, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from streaming.exporter.member_gauges import MemberGauges, or_nan
from streaming.operator_view.groups import GroupFigures

PREFIX = "kafka_rebalancer"
BATCH_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
POLL_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
MAX_HOT_SERIES = 20
"""Hot partitions of one group with a series of their own (the first by topic and partition)."""


class GroupCap:
    """Which groups may have series: the first ``limit`` seen; a released group frees its place."""

    def __init__(self, limit: int) -> None:
        self.limit = max(0, limit)
        self.admitted: set[str] = set()
        self.dropped: set[str] = set()

    def admits(self, group: str) -> bool:
        if group in self.admitted:
            return True
        if len(self.admitted) < self.limit:
            self.admitted.add(group)
            self.dropped.discard(group)
            return True
        self.dropped.add(group)
        return False

    def release(self, group: str) -> None:
        self.admitted.discard(group)
        self.dropped.discard(group)


def reason_kind(reason: str | None) -> str:
    """``internal error: KeyError: 'x'`` -> ``internal error``: bounded label values."""
    return (reason or "unknown").split(":", 1)[0].strip()[:60] or "unknown"


class JobMetrics:
    """What ``rebalancer run`` exports: per batch (from the query's progress) and per group (from
    the recommendations the batch wrote)."""

    def __init__(self, max_groups: int = 500, registry: CollectorRegistry | None = None) -> None:
        r = self.registry = registry or CollectorRegistry()
        self.cap = GroupCap(max_groups)
        self._lock = threading.Lock()
        self._batch_metrics(r)
        self._recommendation_metrics(r)
        self._checkpoint: str | None = None
        self.dropped = Gauge(f"{PREFIX}_metrics_dropped_groups",
                             "Groups left out of the metrics by max_groups", registry=r)
        self.dropped.set_function(lambda: len(self.cap.dropped))

    def _batch_metrics(self, r: CollectorRegistry) -> None:
        """Per micro-batch, from the query's progress."""
        self.batches = Counter(f"{PREFIX}_job_batches", "Micro-batches completed", registry=r)
        self.input_rows = Counter(f"{PREFIX}_job_input_rows",
                                  "Kafka records the micro-batches read", registry=r)
        self.rejected_rows = Counter(f"{PREFIX}_job_rejected_rows",
                                     "Rows written to rejected_events, by reason", ["reason"],
                                     registry=r)
        self.missing_metadata = Counter(
            f"{PREFIX}_job_polls_missing_metadata",
            "Polls decided without every metadata event their lag counts (the metadata topic read "
            "a poll behind its lag, or a metadata event rejected): see docs/deciding.md",
            registry=r)
        self.batch_duration = Histogram(f"{PREFIX}_job_batch_duration_seconds",
                                        "Wall time of a micro-batch", buckets=BATCH_BUCKETS,
                                        registry=r)
        self.state_rows = Gauge(f"{PREFIX}_job_state_rows",
                                "Keys held in the stateful step after the last batch: groups, or "
                                "buckets of groups (job.state_buckets)", registry=r)
        self.last_batch = Gauge(f"{PREFIX}_job_last_batch_id",
                                "Id of the last completed micro-batch", registry=r)
        self.last_batch_time = Gauge(f"{PREFIX}_job_last_batch_timestamp_seconds",
                                     "Unix time the last micro-batch completed (before the first: "
                                     "the job's start)", registry=r)
        # from the start, not 0: "no batch for 5 minutes" (KafkaRebalancerJobStalled) then counts
        # from the start for a job that never completes one, and a job just started is not decades
        # behind
        self.last_batch_time.set(time.time())

    def serving(self, checkpoint: str) -> None:
        """A query of the job on ``checkpoint`` starts in this process. Another checkpoint is
        another job (a process that runs several, as a test session does): its last-batch time
        starts now, not at the batches of the one before. The same checkpoint is a restart of the
        same job, which keeps it: a query failing again and again is stalled
        (``KafkaRebalancerJobStalled``)."""
        with self._lock:
            if checkpoint != self._checkpoint:
                self._checkpoint = checkpoint
                self.last_batch_time.set(time.time())

    def _recommendation_metrics(self, r: CollectorRegistry) -> None:
        """Per group, from the latest recommendation the batches wrote."""
        self.recommendations = Counter(f"{PREFIX}_recommendations",
                                       "Recommendations written, by trigger", ["group", "trigger"],
                                       registry=r)
        self.last_rec_time = Gauge(f"{PREFIX}_last_recommendation_timestamp_seconds",
                                   "Event time of the group's latest recommendation", ["group"],
                                   registry=r)
        self.last_rec_age = Gauge(f"{PREFIX}_last_recommendation_age_seconds",
                                  "Seconds since the event time of the group's latest "
                                  "recommendation", ["group"], registry=r)
        self.last_rec_version = Gauge(f"{PREFIX}_last_recommendation_version",
                                      "Version of the group's latest recommendation", ["group"],
                                      registry=r)
        self.rec_max_lag = Gauge(f"{PREFIX}_recommendation_max_member_lag_records",
                                 "Max member lag before and after the latest recommendation",
                                 ["group", "when"], registry=r)
        self.rec_imbalance = Gauge(f"{PREFIX}_recommendation_imbalance_ratio",
                                   "Max / mean member lag before and after the latest "
                                   "recommendation", ["group", "when"], registry=r)
        self.rec_cross_rack = Gauge(f"{PREFIX}_recommendation_cross_rack_partitions",
                                    "Cross-rack partitions before and after the latest "
                                    "recommendation", ["group", "when"], registry=r)
        self.rec_stuck = Gauge(f"{PREFIX}_recommendation_stuck_partitions",
                               "Stuck partitions the latest recommendation reports", ["group"],
                               registry=r)
        self.rec_catch_up = Gauge(f"{PREFIX}_recommendation_catch_up_seconds",
                                  "Max member time to catch up before and after the latest "
                                  "recommendation", ["group", "when"], registry=r)
        self.rec_lag_age = Gauge(f"{PREFIX}_recommendation_lag_age_seconds",
                                 "Age of the oldest unconsumed record when the latest "
                                 "recommendation was made", ["group"], registry=r)
        self.members = MemberGauges(r, PREFIX)

    def observe_batch(self, batch_id: int, input_rows: int, duration_s: float, state_rows: int
                      ) -> None:
        self.batches.inc()
        self.input_rows.inc(max(0, input_rows))
        self.batch_duration.observe(max(0.0, duration_s))
        self.state_rows.set(state_rows)
        self.last_batch.set(batch_id)
        self.last_batch_time.set(time.time())

    def observe_missing_metadata(self, n: int) -> None:
        self.missing_metadata.inc(n)

    def observe_rejected(self, by_reason: Mapping[str | None, int]) -> None:
        for reason, n in by_reason.items():
            self.rejected_rows.labels(reason_kind(reason)).inc(n)

    def observe_recommendations(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Rows with group, version, event_ts (ms), triggers (comma-separated or a list),
        before_*/after_* figures and stuck_partitions (a JSON list or a list); in any order."""
        latest: dict[str, Mapping[str, Any]] = {}
        with self._lock:
            for row in rows:
                g = row["group"]
                if not self.cap.admits(g):
                    continue
                triggers = (row["triggers"].split(",") if isinstance(row["triggers"], str)
                            else row["triggers"])
                for t in triggers or ("unknown",):
                    self.recommendations.labels(g, t).inc()
                if g not in latest or row["version"] > latest[g]["version"]:
                    latest[g] = row
            for g, row in latest.items():
                self._set_latest(g, row)

    def _set_latest(self, g: str, row: Mapping[str, Any]) -> None:
        import json

        ts = row["event_ts"] / 1000.0
        self.last_rec_time.labels(g).set(ts)
        self.last_rec_age.labels(g).set_function(functools.partial(_age, ts))
        self.last_rec_version.labels(g).set(row["version"])
        for when in ("before", "after"):
            self.rec_max_lag.labels(g, when).set(row[f"{when}_max_lag"] or 0)
            self.rec_imbalance.labels(g, when).set(row[f"{when}_imbalance"] or 0)
            self.rec_cross_rack.labels(g, when).set(row[f"{when}_cross_rack"] or 0)
            self.rec_catch_up.labels(g, when).set(or_nan(row.get(f"{when}_catch_up_s")))
        self.rec_lag_age.labels(g).set(or_nan(row.get("lag_age_s")))
        self.members.update(g, row)
        stuck = row.get("stuck_partitions")
        if isinstance(stuck, str):
            stuck = json.loads(stuck or "[]")
        self.rec_stuck.labels(g).set(len(stuck or ()))


class CollectorMetrics:
    """What ``rebalancer collect`` exports: live per-group figures of every poll."""

    def __init__(self, max_groups: int = 500, max_topics: int = 50,
                 registry: CollectorRegistry | None = None) -> None:
        r = self.registry = registry or CollectorRegistry()
        self.cap = GroupCap(max_groups)
        self.max_topics = max_topics
        self._topics: dict[str, set[str]] = {}
        self.polls = Counter(f"{PREFIX}_collector_polls", "Polls of the cluster", registry=r)
        self.poll_duration = Histogram(f"{PREFIX}_collector_poll_duration_seconds",
                                       "Wall time of a poll", buckets=POLL_BUCKETS, registry=r)
        self.events = Counter(f"{PREFIX}_collector_events", "Events a poll produced, by type",
                              ["type"], registry=r)
        self.warnings = Counter(f"{PREFIX}_collector_warnings", "Partial read failures of polls",
                                registry=r)
        self.max_lag = Gauge(f"{PREFIX}_group_max_member_lag_records",
                             "Largest member lag of the group", ["group"], registry=r)
        self.imbalance = Gauge(f"{PREFIX}_group_imbalance_ratio",
                               "Max member lag / mean member lag", ["group"], registry=r)
        self.cross_rack = Gauge(f"{PREFIX}_group_cross_rack_partitions",
                                "Partitions whose owner's rack holds none of their replicas",
                                ["group"], registry=r)
        self.members = Gauge(f"{PREFIX}_group_members", "Members of the group", ["group"],
                             registry=r)
        self.partitions = Gauge(f"{PREFIX}_group_partitions",
                                "Partitions owned or committed by the group", ["group"], registry=r)
        self.topic_lag = Gauge(f"{PREFIX}_group_topic_lag_records", "Lag of the group on one topic",
                               ["group", "topic"], registry=r)
        self._time_gauges(r)
        self._risk_gauges(r)
        self._sizing_gauges(r)
        self.dropped = Gauge(f"{PREFIX}_metrics_dropped_groups",
                             "Groups left out of the metrics by max_groups", registry=r)
        self.dropped.set_function(lambda: len(self.cap.dropped))

    def _time_gauges(self, r: CollectorRegistry) -> None:
        """Lag in seconds, time to catch up and stuck partitions (:mod:`streaming.lag.rules`)."""
        self.max_lag_s = Gauge(f"{PREFIX}_group_max_member_lag_seconds",
                               "Largest member lag in seconds: age of its oldest unconsumed record",
                               ["group"], registry=r)
        self.catch_up = Gauge(f"{PREFIX}_group_max_member_catch_up_seconds",
                              "Largest member time to catch up at its recent consume rate (stuck "
                              "partitions left out)", ["group"], registry=r)
        self.stuck = Gauge(f"{PREFIX}_group_stuck_partitions",
                           "Partitions with lag whose committed offset stood still for "
                           "policy.stuck_observations polls", ["group"], registry=r)

    def _risk_gauges(self, r: CollectorRegistry) -> None:
        """Data-loss risk and hot partitions (:mod:`streaming.lag.loss_risk`,
        :mod:`streaming.lag.hot`)."""
        self.loss_s = Gauge(f"{PREFIX}_group_retention_loss_seconds",
                            "Soonest seconds until a committed offset of the group falls below "
                            "its partition's log start at current rates (0: records lost; +Inf: "
                            "none at risk)", ["group"], registry=r)
        self.headroom = Gauge(f"{PREFIX}_group_retention_headroom_records",
                              "Least records retention may delete before the group loses any "
                              "(committed - log start)", ["group"], registry=r)
        self.lost = Gauge(f"{PREFIX}_group_lost_records",
                          "Records deleted by retention before the group read them (log start - "
                          "committed, summed)", ["group"], registry=r)
        self.hot = Gauge(f"{PREFIX}_group_hot_partitions",
                         "Partitions of the group's topics whose produce rate stands out "
                         "(streaming.lag.hot)", ["group"], registry=r)
        self.hot_rate = Gauge(f"{PREFIX}_hot_partition_records_per_second",
                              "Produce rate of a hot partition (no assignment splits a partition)",
                              ["group", "topic", "partition"], registry=r)
        self._hot: dict[str, set[tuple[str, str]]] = {}

    def _sizing_gauges(self, r: CollectorRegistry) -> None:
        """Consumers needed (:mod:`streaming.lag.sizing`), as the KEDA endpoint gives them."""
        self.needed = Gauge(f"{PREFIX}_group_consumers_needed",
                            "Consumers to run: the fewest that keep each under its capacity with "
                            "policy.capacity_headroom (the members there are while capacities are "
                            "unknown)", ["group"], registry=r)
        self.most = Gauge(f"{PREFIX}_group_consumers_max",
                          "Most consumers that all get work: the partition count", ["group"],
                          registry=r)
        self.consumer_capacity = Gauge(f"{PREFIX}_group_consumer_capacity_records_per_second",
                                       "Capacity of one consumer the count rests on (median of the "
                                       "members')", ["group"], registry=r)

    def _set_hot(self, f: GroupFigures) -> None:
        """One series per hot partition of the group; those no longer hot are removed."""
        now = {(h.topic, str(h.partition)): h.records_per_s
               for h in f.hot_partitions[:MAX_HOT_SERIES]}
        for labels in self._hot.get(f.group, set()) - now.keys():
            self.hot_rate.remove(f.group, *labels)
        for labels, value in now.items():
            self.hot_rate.labels(f.group, *labels).set(value)
        self._hot[f.group] = set(now)
        self.hot.labels(f.group).set(len(f.hot_partitions))

    def observe_poll(self, groups: Iterable[GroupFigures], duration_s: float, lag_events: int,
                     metadata_events: int, warnings: int) -> None:
        self.polls.inc()
        self.poll_duration.observe(duration_s)
        self.events.labels("lag").inc(lag_events)
        self.events.labels("metadata").inc(metadata_events)
        self.warnings.inc(warnings)
        seen = set()
        for f in groups:
            seen.add(f.group)
            if not self.cap.admits(f.group):
                continue
            self.max_lag.labels(f.group).set(f.max_member_lag)
            self.imbalance.labels(f.group).set(f.imbalance)
            self.cross_rack.labels(f.group).set(f.cross_rack)
            self.members.labels(f.group).set(f.members)
            self.partitions.labels(f.group).set(f.partitions)
            self.max_lag_s.labels(f.group).set(or_nan(f.max_member_lag_seconds))
            self.catch_up.labels(f.group).set(or_nan(f.max_member_catch_up_seconds))
            self.stuck.labels(f.group).set(f.stuck_partitions)
            self.loss_s.labels(f.group).set(f.loss_seconds)
            self.headroom.labels(f.group).set(or_nan(f.retention_headroom))
            self.lost.labels(f.group).set(f.lost_records)
            self._set_hot(f)
            if f.consumers is not None:
                self.needed.labels(f.group).set(f.consumers.consumers)
                self.most.labels(f.group).set(f.consumers.most)
                self.consumer_capacity.labels(f.group).set(
                    or_nan(f.consumers.capacity_records_per_s))
            topics = sorted(f.lag_by_topic)[:self.max_topics]
            for t in self._topics.get(f.group, set()) - set(topics):
                self.topic_lag.remove(f.group, t)
            for t in topics:
                self.topic_lag.labels(f.group, t).set(f.lag_by_topic[t])
            self._topics[f.group] = set(topics)
        for g in set(self.cap.admitted) - seen:  # vanished groups lose their series
            self.cap.release(g)
            for gauge in (self.max_lag, self.imbalance, self.cross_rack, self.members,
                          self.partitions, self.max_lag_s, self.catch_up, self.stuck, self.loss_s,
                          self.headroom, self.lost, self.hot):
                gauge.remove(g)
            for gauge in (self.needed, self.most, self.consumer_capacity):
                with contextlib.suppress(KeyError):  # set only for groups whose figures had a count
                    gauge.remove(g)
            for t in self._topics.pop(g, set()):
                self.topic_lag.remove(g, t)
            for labels in self._hot.pop(g, set()):
                self.hot_rate.remove(g, *labels)
        self.cap.dropped &= seen


def _age(ts: float) -> float:
    """Seconds since ``ts``, never negative (clocks of collector and job may differ a little)."""
    return max(0.0, time.time() - ts)

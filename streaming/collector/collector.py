"""The collector loop: read the cluster, decide the events, publish them, say what it did.

:meth:`Collector.poll_once` is one observation turned into events (nothing is published);
:meth:`Collector.run` repeats it every ``interval_s``, publishes, prints one progress line per poll
and backs off (doubling up to ``max_backoff_s``) while the cluster cannot be reached, without ever
crashing on a Kafka error.

With ``shards`` (:mod:`streaming.collector.shards`) a collector polls only the groups of the shards
it holds, several collectors sharing a cluster's groups; it syncs its shards at the start of a round
and again just before publishing, dropping the events of groups whose shard moved in between.
"""

from __future__ import annotations

import logging
import re
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TextIO

from streaming.collector.cluster_snapshot import ClusterSnapshot
from streaming.collector.member_load import LoadReports
from streaming.collector.member_metadata import DEFAULT_CLIENT_RACK_PATTERN, RackResolver
from streaming.collector.poll import ClusterReader
from streaming.collector.poll_events import (
    LATEST,
    POLICIES,
    MetadataTracker,
    is_full_refresh,
    lag_events,
    partition_entries,
)
from streaming.collector.shards import Shards
from streaming.config import Config
from streaming.contracts import events
from streaming.contracts.member_load import LOAD

log = logging.getLogger(__name__)

DENSE = "dense"
PARTITION = "partition"
LAG_FORMS = (DENSE, PARTITION)
"""How lag travels: one ``lag_dense`` event per group, topic and poll (the default: publishing one
record per partition was most of a poll's time), or one ``lag`` event per partition
(``--lag-form partition``)."""

# Groups of the rebalancer itself and of Spark's Kafka source (which reads the event topics).
OWN_GROUPS = r"^(rebalancer[-._]|spark-kafka-(source|relation)-)"


class Export(Protocol):
    """Where each poll's snapshot goes besides the event topics (``/metrics``: the exporter's
    ``CollectorExport``, handed in by whoever runs the collector, as the sink is)."""

    def __call__(self, snap: ClusterSnapshot, stats: PollStats) -> None: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class CollectorOptions:
    interval_s: float = 10.0
    include: str | None = None
    """regular expression a group id must match (``re.search``); None = every group."""
    exclude: str | None = None
    full_refresh_every: int = 30
    """polls between full refreshes of members and partitions events; 0 = never."""
    offset_reset: str = LATEST
    group_offset_reset: Mapping[str, str] = field(default_factory=dict)
    rack_map: tuple[str, ...] = ()
    client_rack_pattern: str | None = DEFAULT_CLIENT_RACK_PATTERN
    own_groups: str = OWN_GROUPS
    max_backoff_s: float = 30.0
    request_timeout_ms: int = 10000
    lag_form: str = DENSE
    """one of :data:`LAG_FORMS`."""

    def __post_init__(self) -> None:
        if self.lag_form not in LAG_FORMS:
            raise ValueError(
                f"lag form must be one of {', '.join(LAG_FORMS)}, got {self.lag_form!r}"
            )
        for policy in (self.offset_reset, *self.group_offset_reset.values()):
            if policy not in POLICIES:
                raise ValueError(
                    f"offset reset policy must be one of {', '.join(POLICIES)}, got {policy!r}"
                )
        for rx in (self.include, self.exclude, self.own_groups):
            if rx:
                re.compile(rx)

    def policy(self, group: str) -> str:
        return self.group_offset_reset.get(group, self.offset_reset)


@dataclass
class PollStats:
    poll: int
    groups: int
    partitions: int
    lag_events: int
    metadata_events: int
    seconds: float
    full_refresh: bool
    warnings: int
    shards: str | None = None
    """the shards this collector polled (``--shard``/``--shards``), as :meth:`Shards.describe`
    says."""

    @property
    def events(self) -> int:
        return self.lag_events + self.metadata_events

    def line(self) -> str:
        extra = " (full refresh)" if self.full_refresh else ""
        warn = f", {self.warnings} warning(s)" if self.warnings else ""
        shards = f" [{self.shards}]" if self.shards else ""
        return (
            f"poll {self.poll}: {self.groups} groups, {self.partitions} partitions, "
            f"{self.events} events ({self.lag_events} lag, {self.metadata_events} metadata)"
            f"{extra}{warn}, {self.seconds:.2f}s{shards}"
        )


def admin_factory(cfg: Config, request_timeout_ms: int = 10000) -> Callable[[], Any]:
    def make() -> Any:
        from kafka import KafkaAdminClient

        from streaming.kafka_clients.factories import python_client_options

        return KafkaAdminClient(
            client_id="rebalancer-collector",
            request_timeout_ms=request_timeout_ms,
            reconnect_backoff_max_ms=2000,
            **python_client_options(cfg, "admin"),
        )
    return make


class Collector:
    def __init__(
        self,
        cfg: Config,
        options: CollectorOptions | None = None,
        sink: Callable[[Sequence[dict[str, Any]]], Any] | None = None,
        admin: Callable[[], Any] | None = None,
        out: TextIO | None = sys.stdout,
        export: Export | None = None,
        shards: Shards | None = None,
        loads: LoadReports | None = None,
    ) -> None:
        """``shards``: poll only the groups of these shards (``--shard i/N``, ``--shards N``); None:
        all. ``loads``: the members' own load reports to pass on in the members events
        (:mod:`streaming.collector.member_load`); None: none."""
        self.cfg = cfg
        self.options = options or CollectorOptions()
        self.sink = sink
        self.out = out
        racks = RackResolver.parse(self.options.rack_map, self.options.client_rack_pattern)
        make_admin = admin or admin_factory(cfg, self.options.request_timeout_ms)
        self.reader = ClusterReader(make_admin, racks)
        self.tracker = MetadataTracker()
        self.polls = 0
        self.last_stats: PollStats | None = None
        self.last_snapshot: ClusterSnapshot | None = None
        self._own_topics = {cfg.kafka.lag_topic, cfg.kafka.metadata_topic, cfg.kafka.trigger_topic,
                            cfg.kafka.member_load_topic}
        self.loads = loads
        self._force_refresh = False
        self._missing_warned: set[str] = set()
        self.export = export
        self.shards = shards
        self._announced: frozenset[int] | None = None

    # -- selection ---------------------------------------------------------------------------------

    def selects(self, group: str) -> bool:
        o = self.options
        if o.own_groups and re.search(o.own_groups, group):
            return False
        if o.include and not re.search(o.include, group):
            return False
        if o.exclude and re.search(o.exclude, group):
            return False
        return self.shards is None or self.shards.owns(group)

    def _sync_shards(self) -> None:
        """Catch up with the shards' owner changes and say when this collector's set changed."""
        if self.shards is None:
            return
        self.shards.sync()
        owned = self.shards.owned()
        if owned != self._announced:
            self._announced = owned
            self._say(f"now polling {self.shards.describe()}")

    def _fence(self, batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The events of groups this collector still owns, asked just before publishing: a rebalance
        during the poll round may have handed some to another collector (eager: revoked here
        first)."""
        if self.shards is None:
            return batch
        self._sync_shards()
        kept = [e for e in batch if self.shards.owns(e["group"])]
        if len(kept) < len(batch):
            self._say(
                f"poll {self.polls}: {len(batch) - len(kept)} event(s) of groups whose shard "
                "moved during the poll dropped"
            )
        return kept

    def _wait(self, stop: threading.Event, seconds: float) -> None:
        if self.shards is None:
            stop.wait(seconds)
        else:
            self.shards.wait(stop, seconds)

    # -- one poll ----------------------------------------------------------------------------------

    def poll_once(self) -> list[dict[str, Any]]:
        """Read the cluster once and return the events of this poll (lag, then members and
        partitions). Raises when the cluster cannot be reached at all; partial failures are
        warnings."""
        started = time.monotonic()
        self._sync_shards()
        self.polls += 1
        full = is_full_refresh(self.polls, self.options.full_refresh_every) or self._force_refresh
        self._force_refresh = False
        snap = self.reader.read(self.selects)
        if self.loads is not None:
            self.loads.read(snap.ts, self.selects)
        self.last_snapshot = snap
        self._forget_gone(snap)
        entries = {
            t: partition_entries(parts, snap.broker_racks) for t, parts in snap.topics.items()
        }
        lag: list[dict[str, Any]] = []
        meta: list[dict[str, Any]] = []
        groups = [g for g in sorted(snap.groups) if not (snap.group_topics(g) and
                                                         snap.group_topics(g) <= self._own_topics)]
        readings = 0
        dense = self.options.lag_form == DENSE
        for g in groups:
            said = self._metadata_events(snap, g, entries, full)
            meta.extend(said)
            per_partition = events.marked(self._lag_events(snap, g, entries), len(said))
            readings += len(per_partition)
            lag.extend(events.dense(per_partition) if dense else per_partition)
        self.last_stats = PollStats(
            self.polls, len(groups), readings, len(lag), len(meta),
            time.monotonic() - started, full, len(snap.warnings),
            self.shards.describe() if self.shards is not None else None,
        )
        if self.export is not None:
            self.export(snap, self.last_stats)
        # each group's metadata before the lag (the publisher sends them so, too: Publisher.publish)
        return meta + lag

    def _forget_gone(self, snap: ClusterSnapshot) -> None:
        """Vanished groups and deleted topics stop their events; their next appearance starts
        afresh."""
        gone = set(snap.gone_groups)
        if snap.group_list_complete:
            gone |= self.tracker.groups() - snap.listed
        for g in gone:
            self.tracker.forget_group(g)
            if self.loads is not None:
                self.loads.forget_group(g)
        for t in snap.missing_topics:
            self.tracker.forget_topic(t)
            if t not in self._missing_warned:
                self._missing_warned.add(t)
                log.warning("topic %s does not exist (any more); no events for it", t)
        self._missing_warned &= snap.missing_topics

    def _metadata_events(
        self,
        snap: ClusterSnapshot,
        g: str,
        entries: Mapping[str, list[dict[str, Any]]],
        full: bool,
    ) -> list[dict[str, Any]]:
        """The group's members and partitions events of this poll: on change, and all at a full
        refresh. A group the job must not decide for (a share group:
        :mod:`streaming.contracts.serving`) gets no members event."""
        info = snap.groups[g]
        out = []
        members = None
        if info.serving.decided:
            listed = [m.entry() for m in info.members]
            loads = {} if self.loads is None else self.loads.loads(snap.ts, g, listed)
            for e in listed:
                if e["member_id"] in loads:
                    e[LOAD] = loads[e["member_id"]]
            again = self.loads is not None and self.loads.differ(g, loads)
            members = self.tracker.members_event(
                snap.ts, g, info.state, info.protocol, listed, info.generation_hint(),
                full or again, info.group_protocol,
            )
            if members is not None and self.loads is not None:
                self.loads.sent(g, loads)
        if members is not None:
            out.append(members)
        if snap.topics_read:
            topics = {t for t in snap.group_topics(g) if t in snap.topics}
            group_entries = {t: entries[t] for t in topics}
            out.extend(self.tracker.partitions_events(snap.ts, g, group_entries, full))
        return out

    def _lag_events(self, snap: ClusterSnapshot, g: str,
                    entries: Mapping[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
        """The group's lag events, one per partition of its topics (none while its offsets are
        unreadable); a share group's, one per share-partition whose lag the broker reports
        (:mod:`streaming.collector.kip932`)."""
        if g not in snap.committed:
            return []  # offsets unreadable this poll (warned by the reader)
        topics = sorted(t for t in snap.group_topics(g) if t in snap.topics)
        tps = [(t, e["partition"]) for t in topics for e in entries[t]]
        if snap.groups[g].share:
            tps = [tp for tp in tps if tp in snap.committed[g]]
        result = lag_events(
            snap.ts, g, tps, snap.committed[g], snap.end, snap.begin, self.options.policy(g)
        )
        if result.missing:
            msg = (
                f"group {g}: {len(result.missing)} partition(s) without a lag this poll "
                f"(offset lookup failed or committed past the end), e.g. {result.missing[0]}"
            )
            snap.warnings.append(msg)
            log.warning("%s", msg)
        return result.events

    # -- the loop ----------------------------------------------------------------------------------

    def run(self, polls: int | None = None, stop: threading.Event | None = None) -> int:
        """Poll every ``interval_s`` until ``polls`` polls succeeded or ``stop`` is set; return the
        number of events published."""
        stop = stop or threading.Event()
        published = 0
        done = 0
        backoff = 0.0
        while not stop.is_set() and (polls is None or done < polls):
            started = time.monotonic()
            try:
                batch = self.poll_once()
            except Exception as e:
                backoff = min(self.options.max_backoff_s, max(1.0, backoff * 2))
                self._say(f"poll {self.polls}: cluster unreachable ({type(e).__name__}: {e}); "
                          f"retrying in {backoff:.0f}s")
                self._wait(stop, backoff)
                continue
            try:
                batch = self._fence(batch)
                if self.sink is not None and batch:
                    self.sink(batch)
                published += len(batch)
            except Exception as e:
                # what was not published must be said again: the next poll is a full refresh
                self._force_refresh = True
                backoff = min(self.options.max_backoff_s, max(1.0, backoff * 2))
                self._say(
                    f"poll {self.polls}: publishing {len(batch)} events failed "
                    f"({type(e).__name__}: {e}); retrying in {backoff:.0f}s"
                )
                self._wait(stop, backoff)
                continue
            backoff = 0.0
            done += 1
            if self.last_stats:
                self._say(self.last_stats.line())
            if polls is not None and done >= polls:
                break
            self._wait(stop, max(0.0, self.options.interval_s - (time.monotonic() - started)))
        return published

    def close(self) -> None:
        if self.shards is not None:
            self.shards.close()  # first: leaving the group hands the shards over at once
        self.reader.close()
        if self.loads is not None:
            self.loads.close()
        if self.export is not None:
            self.export.close()
        close = getattr(self.sink, "close", None)
        if callable(close):
            close()

    def __enter__(self) -> Collector:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _say(self, line: str) -> None:
        if self.out is not None:
            print(line, file=self.out, flush=True)
        else:
            log.info("%s", line)

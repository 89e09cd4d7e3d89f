"""Running the closed-loop benchmark: one workload with every strategy side by side, and the suite
around it (the embedded three-broker cluster, the Spark session, the streaming job and the trigger
feed, all owned by the benchmark).

For one workload: every strategy gets its own topics and group
(``loop-<workload>-<strategy>-<tag>``); the consumers of all groups start and settle first, then the
producers of all groups start together (t = 0) with the collector, which feeds every group's monitor
and publishes the events of the ``rebalancer`` group only (the job sees just the group it advises).
Events fire for every group at once, in threads.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import random
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assignors import rack_placement
from benchmarks.loop import cross_floor, given, metrics, oracle_schedule
from benchmarks.loop.group import BenchGroup
from benchmarks.loop.workloads import Workload
from streaming.apply.feed import RecommendationFeed
from streaming.config import Config
from streaming.dev.demo.loop import CollectorThread, loop_config, stop_query

log = logging.getLogger(__name__)

COLLECTOR_INTERVAL_S = 2.0
SETTLE_TIMEOUT_S = 120.0


class NotSettled(RuntimeError):
    """A strategy's group did not get every partition to a running member before the run could start
    (nothing was produced or measured yet, so the run can be started again with fresh groups)."""


class PublishingCollector(CollectorThread):
    """:class:`CollectorThread` that publishes the events of some groups only."""

    def __init__(self, cfg: Config, monitors: Sequence[Any], interval_s: float,
                 publish: Sequence[str]) -> None:
        super().__init__(cfg, monitors, interval_s, publish=bool(publish))
        self.published = set(publish)
        self.sent: list[dict[str, Any]] = []
        """Every event published, in order: the job's input, to replay its decisions offline."""

    def _sink(self, batch: Sequence[dict[str, Any]]) -> None:
        now = time.monotonic()
        for m in self.monitors:
            try:
                m.observe(batch, now)
            except Exception:
                log.exception("monitor of %s failed", m.group)
        if self.publisher is not None:
            mine = [e for e in batch if e.get("group") in self.published]
            self.sent += mine
            if mine:
                self.publisher.publish(mine)


@dataclass
class Env:
    cfg: Config
    feed: RecommendationFeed
    brokers: list[int]
    query: Any = None
    follower_fetching: bool | None = None
    """read from the brokers' ``replica.selector.class``
    (:func:`streaming.commands.live_read.follower_fetching`)."""
    load_reports: bool = True
    """The rebalancer's consumers report their own load (``--no-load-reports``: lag alone)."""


def _all(groups: Sequence[BenchGroup], action: Callable[[BenchGroup], Any]) -> None:
    """``action`` on every group at the same moment (one thread each); the first failure is
    raised."""
    errors: list[BaseException] = []

    def one(g: BenchGroup) -> None:
        try:
            action(g)
        except BaseException as e:  # handed to the caller
            errors.append(e)

    threads = [threading.Thread(target=one, args=(g,), daemon=True) for g in groups]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    if errors:
        raise errors[0]


def _fire(event: Any, groups: Sequence[BenchGroup]) -> None:
    for g in groups:
        g.begin_event(event)
    if event.kind == "rates":
        for g in groups:
            g.set_rates(event.topic, event.rates)
    elif event.kind == "leave":
        _all(groups, lambda g: g.stop_consumer(event.index))
    elif event.kind == "join":
        _all(groups, lambda g: g.add_consumer(event.index))
    elif event.kind == "move-replicas":
        _all(groups, BenchGroup.move_replicas)
    elif event.kind == "capacity":
        for g in groups:
            g.set_capacity(event.index, event.capacity)
    else:
        raise ValueError(f"unknown event {event.kind!r}")
    for g in groups:
        g.end_event(event)


def run_workload(env: Env, w: Workload, strategies: Sequence[str],
                 say: Callable[[str], None] = print, tag: str | None = None) -> dict[str, Any]:
    """One run of ``w``: every strategy side by side; returns figures, curves and events (t in
    seconds)."""
    tag = tag or uuid.uuid4().hex[:6]
    groups = [BenchGroup(env.cfg, w, s, f"loop-{w.name}-{s}-{tag}",
                         env.feed if s == "rebalancer" else None, env.load_reports)
              for s in strategies]
    ours = next((g for g in groups if g.strategy == "rebalancer"), None)
    recs: list[tuple[float, dict[str, Any]]] = []
    if ours is not None:
        env.feed.add_listener(
            lambda r: recs.append((time.monotonic(), r)) if r["group"] == ours.group else None)
    fired: list[tuple[float, str]] = []
    collector, sent = None, []
    try:
        for g in groups:
            g.create_topics(env.brokers)
        for g in groups:
            g.start_consumers()
        _wait_settled(groups, w)
        first_batch = _last_batch(env.query) + 1
        t0 = time.monotonic()
        for g in groups:
            g.monitor.t0 = t0
            g.start_producers()
        collector = PublishingCollector(env.cfg, [g.monitor for g in groups], COLLECTOR_INTERVAL_S,
                                        [ours.group] if ours is not None else [])
        collector.start()
        say(f"  {w.name}: {len(groups)} groups settled, producing for {w.duration_s:.0f}s")
        _drive(env, w, groups, t0, fired, say)
        collector.stop()
        sent, collector = collector.sent, None
        _raise_failures(groups, w)
    finally:
        if collector is not None:
            collector.stop()
        _all(groups, BenchGroup.stop)
    out = _results(w, tag, groups, ours, recs, fired, t0)
    out["job_batches"] = _batches(env.query, first_batch)
    if os.environ.get("LOOP_KEEP_EVENTS"):  # the job's input, to replay its decisions offline
        out["events_published"] = sent
    found = rack_placement.placement(w.replica_racks(), w.consumer_racks(), env.follower_fetching)
    out["rack_placement"] = {"verdict": found.verdict, "follower_fetching": env.follower_fetching,
                             "says": found.sentence()}
    return out


def _raise_failures(groups: list[BenchGroup], w: Workload) -> None:
    """Fail the run if any group's consumers or producers failed."""
    failures = [f for g in groups for f in g.failures()]
    if failures:
        raise RuntimeError(f"workload {w.name}: {failures}")


def _wait_settled(groups: list[BenchGroup], w: Workload) -> None:
    """Wait until every group has all its partitions on running members (:class:`NotSettled` after
    the timeout)."""
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while not all(g.assigned() for g in groups):
        _raise_failures(groups, w)
        if time.monotonic() > deadline:
            late = [g for g in groups if not g.assigned()]
            for g in late:
                log.warning("group %s (%s) did not settle:\n%s", g.group, g.strategy, g.describe())
            strategies = [g.strategy for g in late]
            raise NotSettled(f"groups not settled after {SETTLE_TIMEOUT_S:.0f}s: {strategies}")
        time.sleep(0.2)


def _drive(env: Env, w: Workload, groups: list[BenchGroup], t0: float,
           fired: list[tuple[float, str]], say: Callable[[str], None]) -> None:
    """Until the workload's end: fire its events when due (noted in ``fired``) and change rates by
    its noise."""
    pending = sorted(w.events, key=lambda e: e.at)
    rng = random.Random(w.seed)
    next_noise = w.noise_every_s if w.noise else float("inf")
    while (now := time.monotonic() - t0) < w.duration_s:
        while pending and now >= pending[0].at * w.duration_s:
            event = pending.pop(0)
            fired.append((round(time.monotonic() - t0, 2), event.label))
            say(f"  [{now:5.0f}s] {event.label}")
            _fire(event, groups)
        if now >= next_noise:
            next_noise += w.noise_every_s
            for topic, rates in w.noisy_rates(rng).items():
                for g in groups:
                    g.set_rates(topic, rates)
        if env.query is not None and env.query.exception() is not None:
            raise RuntimeError(f"the streaming query failed: {env.query.exception()}")
        time.sleep(0.2)


def _results(w: Workload, tag: str, groups: list[BenchGroup], ours: BenchGroup | None,
             recs: list[tuple[float, dict[str, Any]]], fired: list[tuple[float, str]],
             t0: float) -> dict[str, Any]:
    """Each strategy's figures and lag curve, the events fired, and our group's recommendations."""
    since = max((t for t, _ in fired), default=0.0)
    out: dict[str, Any] = {"workload": w.name, "tag": tag, "events": fired,
                           "strategies": {}, "curves": {}}
    stretches = oracle_schedule.phases(w)
    floor = cross_floor.Floor(lambda k, members: oracle_schedule.problem(w, stretches[k], members))

    def phase_at(t: float) -> int:
        return min(sum(1 for at, _ in fired if at <= t), len(stretches) - 1)

    for g in groups:
        samples = [(s.t, s.max_lag, s.cross_rack) for s in g.monitor.samples]
        applied = {d.version for d in g.decisions if d.applied}
        out["strategies"][g.strategy] = metrics.figures(
            samples, g.rebalances.snapshot(), t0, w.capacity, since, g.stuck,
            recommendations=len(recs) if g is ours else 0, applied=len(applied),
            pace=g.pace(), reads=g.reads(),
            cross_rack_floor_ps=cross_floor.floor_ps(g.assignment_samples(phase_at), floor))
        out["curves"][g.strategy] = [(s[0], s[1]) for s in samples]
    oracle = next((g.oracle for g in groups if g.oracle is not None), None)
    if oracle is not None:
        out["oracle"] = oracle.summary()
    if ours is not None:
        # which fallback our leader ran when no recommendation fitted (the load model's once one
        # carries it)
        out["fallbacks"] = [{"assignor": d.assignor, "reason": d.reason}
                            for d in ours.decisions if not d.applied]
        # the observation each came from, on the run's clock (wall and monotonic clocks differ by a
        # constant over a run): at_s - observed_s is the job's part of the delay
        wall = time.time() - time.monotonic()
        out["recommendations"] = [{"at_s": round(t - t0, 2), "version": r["version"],
                                   "observed_s": round(r["event_ts"] / 1000 - wall - t0, 2),
                                   "triggers": r.get("triggers"),
                                   "partitions_moved": r.get("partitions_moved"),
                                   **given.per_consumer(r, ours.index_of)}
                                  for t, r in recs]
        # what each consumer said of its own load: (s, consumer index, busy, records/s, what it
        # could do by a record's cost, the least records lag after its polls)
        out["load_reports"] = [(round(t - t0, 1), ours.index_of.get(c, c), round(busy, 3),
                                round(rate, 1), None if cost is None else round(1 / cost, 1), lag)
                               for t, c, busy, rate, cost, lag in ours.reports]
        # each consumer's lag at each sample (consumer index -> records): which one holds the max
        index = ours.index_of
        out["consumer_lag"] = [(s.t, {index.get(c, c): lag for c, lag in sorted(s.lag.items())})
                               for s in ours.monitor.samples]
    return out


def _last_batch(query: Any) -> int:
    last = query.lastProgress if query is not None else None
    return int(last["batchId"]) if last else -1


def _batches(query: Any, first: int) -> dict[str, Any] | None:
    """The job's micro-batches during a run (Spark keeps the last 100): how many, and the median
    and p95 milliseconds of each part Spark times (``triggerExecution`` is the whole batch), so the
    job's share of the time from a reading to its recommendation can be read."""
    if query is None:
        return None
    mine = [p for p in query.recentProgress if int(p["batchId"]) >= first]
    if not mine:
        return None
    out: dict[str, Any] = {"batches": len(mine), "rows_p50": _pct([p["numInputRows"]
                                                                  for p in mine], 50)}
    for part in ("triggerExecution", "addBatch", "latestOffset", "queryPlanning", "walCommit",
                 "commitOffsets"):
        values = [p["durationMs"].get(part, 0) for p in mine]
        out[part] = {"p50": _pct(values, 50), "p95": _pct(values, 95)}
    return out


TRIGGER = "2 seconds"
"""The job's trigger interval in the loop (``python -m benchmarks.loop --trigger`` changes it)."""

def _pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))])


class JobAndFeed:
    """The streaming job and the trigger feed of a benchmark run, on a Kafka cluster and a Spark
    session that someone else owns (:class:`Suite`'s, or a test suite's shared ones): each run on
    tables, a checkpoint and topics of its own. ``open`` returns the :class:`Env`; ``close`` stops
    what ``open`` started."""

    def __init__(self, spark: Any, cfg: Config, work: Path, brokers: list[int],
                 trigger_interval: str = TRIGGER, cooldown_s: float = 30.0,
                 min_total_lag: int = 200) -> None:
        self.spark, self.brokers = spark, brokers
        self.cfg = loop_config(cfg, str(work / "tables"), str(work / "checkpoints"),
                               cooldown_s=cooldown_s, trigger_interval=trigger_interval,
                               min_total_lag=min_total_lag)
        self.query = self.printer = self.feed = None

    def open(self) -> Env:
        from streaming.commands import live_read
        from streaming.job import query as job_query

        checkpoint = self.cfg.checkpoint_path("loop")
        self.query, self.printer = job_query.start(self.spark, self.cfg, checkpoint=checkpoint)
        self.printer.out = lambda _text: None
        self.feed = RecommendationFeed(self.cfg.kafka).start()
        if not self.feed.wait_ready(60):
            raise RuntimeError("the trigger feed reader did not start")
        return Env(self.cfg, self.feed, self.brokers, self.query,
                   live_read.follower_fetching(self.cfg, self.brokers))

    def close(self) -> None:
        try:
            if self.feed is not None:
                self.feed.stop()
        finally:
            if self.query is not None:
                stop_query(self.query)
                self.spark.streams.removeListener(self.printer)


@dataclass
class Suite:
    """The cluster, Spark, the job and the feed for a whole benchmark run."""

    work: Path
    trigger_interval: str = TRIGGER
    cooldown_s: float = 30.0
    min_total_lag: int = 200

    def __enter__(self) -> Env:
        from streaming import config, jvm
        from streaming.embedded.cluster import KafkaCluster
        from streaming.spark_session import get_spark

        jvm.resolve()
        self.spark = self.job = None
        base = config.load()
        spark_settings = dataclasses.replace(
            base.spark, master="local[2]",
            conf={"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"})
        base = dataclasses.replace(base, spark=spark_settings)
        self.cluster = KafkaCluster(brokers=3, base_dir=self.work / "kafka")
        try:
            # the Spark session needs nothing of the cluster: both JVMs start at once
            with ThreadPoolExecutor(1) as pool:
                started = pool.submit(get_spark, base)
                try:
                    self.cluster.start()
                finally:
                    self.spark = started.result()
            kafka_settings = dataclasses.replace(
                base.kafka, bootstrap_servers=self.cluster.bootstrap_servers)
            cfg = dataclasses.replace(base, kafka=kafka_settings)
            brokers = [n.node_id for n in self.cluster.nodes]
            self.job = JobAndFeed(self.spark, cfg, self.work, brokers, self.trigger_interval,
                                  self.cooldown_s, self.min_total_lag)
            return self.job.open()
        except BaseException:
            self.__exit__()
            raise

    def __exit__(self, *exc: object) -> None:
        try:
            if self.job is not None:
                self.job.close()
            if self.spark is not None:
                self.spark.stop()
        finally:
            self.cluster.stop()

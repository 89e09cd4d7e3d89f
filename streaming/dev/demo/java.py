"""``rebalancer demo --consumers java``: the closed loop with real Java consumers, beside a
``range`` baseline.

1. a Kafka cluster (three brokers on racks a, b, c when embedded), the streaming job and the
   trigger-feed reader start, as in :mod:`streaming.dev.demo.runner`;
2. two groups of three Java consumers (one per rack, :mod:`streaming.dev.demo.java_members`) read
   the same 12-partition topic: ``orders-java`` uses the project's ``RecommendationAssignor``
   (clients/java; cooperative-sticky until a recommendation fits) and asks for a rebalance with
   ``RebalanceOnRecommendation``; ``orders-range`` uses Kafka's ``RangeAssignor``. Once both hold
   their partitions, a skewed producer starts (one hot partition): both groups see the same load;
3. the collector polls both groups; the job recommends for ``orders-java``; its leader applies the
   recommendation and the lag drains, while range's first consumer falls further behind;
4. 30 s before the end one member of ``orders-java`` leaves: the recommendation no longer fits, and
   the leader falls back and logs why;
5. the summary (:mod:`streaming.dev.demo.java_summary`) compares the two groups' max consumer lag
   over the 30 s before the member left.
"""

from __future__ import annotations

import dataclasses
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streaming.config import Config
from streaming.contracts.tables import RECOMMENDATIONS
from streaming.dev.demo.java_members import JavaConsumer, JavaGroup, assignor_classpath
from streaming.dev.demo.java_summary import render, summarize
from streaming.dev.demo.loop import (
    RATE_HORIZON_S,
    CollectorThread,
    GroupOptions,
    loop_config,
    stop_query,
)
from streaming.dev.demo.monitor import GroupMonitor, Sample, line, recommendation_text, short_name
from streaming.dev.demo.runner import DemoResult, _stamp
from streaming.paths import DATA_DIR

APPLYING = re.compile(r"applying recommendation v(\d+)")
FALLBACK = re.compile(r"group \S+: (.*); not applied, using the (\S+) fallback")
ASKING = re.compile(r"asking for a rebalance: (.*)")


@dataclass
class JavaDemoOptions:
    duration_s: float = 180.0
    leave_at_s: float | None = None
    """when a member of the Java group leaves; default ``window_s`` before the end; ``inf``:
    never."""
    leave_after_applied_s: float | None = None
    """instead of ``leave_at_s``: this long after the first recommendation was applied; the run then
    ends ``tail_s`` after the member left (or at ``duration_s``)."""
    tail_s: float = 20.0
    window_s: float = 30.0
    """the lag of the two groups is compared over this long before the member leaves."""
    collector_interval_s: float = 2.5
    trigger_interval: str = "3 seconds"
    cooldown_s: float = 30.0
    rate_horizon_s: float = RATE_HORIZON_S
    min_total_lag: int = 200
    group: GroupOptions = field(default_factory=lambda: GroupOptions(
        group="orders-java", produce_rate=340.0, hot=(0,), hot_factor=6.0, consume_rate=145.0))
    """the Java group on RecommendationAssignor. The load: one hot partition at 120 records/s,
    eleven at 20. Any assignment that balances counts (four partitions each: range,
    cooperative-sticky, rack-aware or not, whatever the join order) gives the hot partition's owner
    180 records/s; a load-aware one can keep every consumer at or below 120 (the hot partition
    alone, 5 and 6 of the others). 145 records/s per consumer sits between the two with about 20% to
    spare on each side, so the outcome does not hang on this machine's pace or on the topic's random
    replica placement. (A Zipf load leaves only a few percent between the best count-balanced split
    and the best split: a run whose sticky split happened to be good kept up and nothing was
    recommended.)"""
    baseline_group: str = "orders-range"
    out_dir: Path | None = None
    """default data/demo/<timestamp>-java."""


class JavaDemo:
    def __init__(self, cfg: Config, options: JavaDemoOptions, spark: Any,
                 out: Callable[[str], None] = print) -> None:
        self.options = options
        self.out_dir = Path(options.out_dir or DATA_DIR / "demo" / f"{_stamp()}-java")
        self.cfg = loop_config(cfg, str(self.out_dir / "delta"), str(self.out_dir / "checkpoints"),
                               cooldown_s=options.cooldown_s,
                               trigger_interval=options.trigger_interval,
                               rate_horizon_s=options.rate_horizon_s,
                               min_total_lag=options.min_total_lag)
        self.spark = spark
        self._out = out
        self._lock = threading.Lock()
        g = options.group
        self.baseline = dataclasses.replace(g, group=options.baseline_group, apply=False)
        self.t0 = time.monotonic()
        self.java = GroupMonitor(g.group, self.t0)
        self.range = GroupMonitor(self.baseline.group, self.t0)
        self.recs: dict[int, dict[str, Any]] = {}
        self.applied: list[int] = []
        self.fallbacks: list[dict[str, Any]] = []
        self.match: dict[str, Any] | None = None
        self.left: dict[str, Any] | None = None
        self._said_none = False

    def say(self, text: str) -> None:
        with self._lock:
            self._out(text)

    def now(self) -> float:
        return time.monotonic() - self.t0

    def _short(self, client_id: str) -> str:
        return short_name(client_id, self.options.group.group)

    # -- callbacks (other threads) -----------------------------------------------------------------

    def _on_sample(self, monitor: GroupMonitor, sample: Sample) -> None:
        label = "java " if monitor is self.java else "range"
        self.say(line(sample, monitor.group).replace("] lag ", f"] {label} lag ", 1))

    def _on_rec(self, rec: dict[str, Any]) -> None:
        if rec["group"] != self.java.group:
            return
        self.recs[rec["version"]] = rec
        m = self.java.mark(time.monotonic(), "recommendation",
                           recommendation_text(rec, self.cfg.policy.rate_horizon_s),
                           short=f"v{rec['version']} {','.join(rec.get('triggers') or [])}")
        self.say(f"[{m.t:5.0f}s] >> {m.text}")

    def _on_line(self, member: JavaConsumer, text: str) -> None:
        """A log line of a Java consumer: the assignor's decisions become marks and lines of the
        display."""
        who = self._short(member.client_id)
        if (hit := APPLYING.search(text)) is not None:
            version = int(hit.group(1))
            if version in self.applied:
                # cooperative: the partitions still owned elsewhere follow in a second rebalance
                return
            self.applied.append(version)
            rec = self.recs.get(version) or {}
            sizes = ", ".join(sorted(f"{self._short(e['client_id'])} {len(e['partitions'])}"
                                     for e in rec.get("assignment") or []))
            m = self.java.mark(time.monotonic(), "applied",
                               f"rebalance: the leader ({who}) applies recommendation v{version}" +
                               (f" (partitions: {sizes})" if sizes else ""), version=version)
        elif (hit := FALLBACK.search(text)) is not None:
            m = self.java.mark(time.monotonic(), "fallback",
                               f"rebalance: {hit.group(1)}; the leader ({who}) falls back to "
                               f"{hit.group(2)}")
            self.fallbacks.append({"at_s": m.t, "reason": hit.group(1), "assignor": hit.group(2),
                                   "leader": who})
        elif "no recommendation for the group yet" in text:
            if not self._said_none:
                self._said_none = True
                self.say(f"[{self.now():5.0f}s] >> rebalance: no recommendation for "
                         f"{self.java.group} yet; the leader ({who}) uses cooperative-sticky")
            return
        elif (hit := ASKING.search(text)) is not None:
            self.say(f"[{self.now():5.0f}s] >> {who} asks for a rebalance (enforceRebalance): "
                     f"{hit.group(1)}")
            return
        else:
            if text.startswith("log ERROR"):
                self.say(f"[{self.now():5.0f}s] {who}: {text[4:]}")
            return
        self.say(f"[{m.t:5.0f}s] >> {m.text}")

    # -- the run -----------------------------------------------------------------------------------

    def run(self, stop: threading.Event | None = None) -> DemoResult:
        from streaming.apply.feed import RecommendationFeed
        from streaming.dev.workload import Workload, WorkloadOptions
        from streaming.job import query as job_query

        stop = stop or threading.Event()
        o, g, cfg = self.options, self.options.group, self.cfg
        classpath = assignor_classpath()
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.say(f"streaming job: starting (trigger every {o.trigger_interval}, lag skew after "
                 f"{cfg.policy.skew_observations} observations, cooldown "
                 f"{cfg.policy.cooldown_s:g}s) ...")
        query, printer = job_query.start(self.spark, cfg,
                                         checkpoint=cfg.checkpoint_path("rebalancer"))
        printer.out = lambda text: None
        feed = RecommendationFeed(cfg.kafka).start()
        groups: list[JavaGroup] = []
        producer = collector = None
        try:
            feed.wait_ready(30)
            feed.add_listener(self._on_rec)
            groups += self._start_groups(classpath, query, stop)
            producer = Workload(cfg, WorkloadOptions(
                topic=g.topic, group=g.group, partitions=g.partitions,
                replication_factor=g.replication_factor, produce_rate=g.produce_rate, zipf=g.zipf,
                hot=g.hot, hot_factor=g.hot_factor, consumers=0, racks=g.racks), out=None).start()
            collector = CollectorThread(cfg, [self.java, self.range], o.collector_interval_s,
                                        on_sample=self._on_sample).start()
            self.say(f"collector: polling every {o.collector_interval_s:g}s; demo runs "
                     f"{o.duration_s:.0f}s (Ctrl-C to stop early)")
            try:
                self._loop(groups[0], groups, query, stop)
            except KeyboardInterrupt:
                self.say("interrupted: stopping early")
        finally:
            self.say(
                "stopping: collector, producer, Java consumers, feed reader, streaming query ...")
            if collector is not None:
                collector.stop()
            if producer is not None:
                producer.stop()
            for grp in groups:
                grp.stop()
            feed.stop()
            stop_query(query)
            time.sleep(0.5)
            self.spark.streams.removeListener(printer)
        return self._result()

    def _start_groups(self, classpath: str, query: Any, stop: threading.Event) -> list[JavaGroup]:
        """The topic and both Java groups (ours and Kafka's range), once every member holds its
        partitions."""
        from streaming.kafka_clients import factories as kafka_clients

        g, cfg = self.options.group, self.cfg
        kafka_clients.ensure_topics(cfg, {g.topic: {"num_partitions": g.partitions,
                                                    "replication_factor": g.replication_factor}})
        self.say(f"Java consumers: group {g.group} ({g.consumers} x RecommendationAssignor + "
                 f"RebalanceOnRecommendation, clients/java) and group {self.baseline.group} "
                 f"({g.consumers} x Kafka's RangeAssignor), both on topic {g.topic}, "
                 f"{g.consume_rate:.0f} records/s per consumer; "
                 f"starting {2 * g.consumers} JVMs ...")
        self.t0 = self.java.t0 = self.range.t0 = time.monotonic()
        groups: list[JavaGroup] = []
        try:
            for opts in (g, self.baseline):
                java_group = JavaGroup(cfg, opts, classpath, self.out_dir / "java", self._on_line)
                groups.append(java_group.start())
            deadline = time.monotonic() + 120
            while not all(grp.fully_assigned() for grp in groups):
                self._check(groups, query)
                if time.monotonic() > deadline or stop.is_set():
                    raise RuntimeError("the Java groups did not get their partitions within 120 s "
                                       f"(logs: {self.out_dir / 'java'})")
                time.sleep(0.5)
        except BaseException:
            for grp in groups:
                grp.stop()
            raise
        return groups

    def _loop(self, java: JavaGroup, groups: list[JavaGroup], query: Any,
              stop: threading.Event) -> None:
        o = self.options
        end = o.duration_s
        while not stop.is_set() and self.now() < end:
            if self.left is None:
                leave_at = o.duration_s - o.window_s if o.leave_at_s is None else o.leave_at_s
                if o.leave_after_applied_s is not None:
                    first = self.java.first_mark("applied")
                    leave_at = first.t + o.leave_after_applied_s if first else float("inf")
                if self.now() >= leave_at:
                    self._leave(java)
                    if o.leave_after_applied_s is not None:
                        end = min(end, self.now() + o.tail_s)
            self._check(groups, query)
            stop.wait(0.5)

    def _check(self, groups: list[JavaGroup], query: Any) -> None:
        if query.exception() is not None:
            raise RuntimeError(f"the streaming query failed: {query.exception()}")
        for grp in groups:
            for m in grp.dead():
                raise RuntimeError(f"Java consumer {m.client_id} exited with status "
                                   f"{m.proc.returncode} (its log: "
                                   f"{self.out_dir / 'java' / (m.client_id + '.log')})")

    def _leave(self, java: JavaGroup, settle_s: float = 20.0) -> None:
        """Compare the group's assignment with the recommendation it applied last, then one member
        leaves."""
        if self.applied:
            version = self.applied[-1]
            wanted = {e["client_id"]: {(t, p) for t, p in e["partitions"]}
                      for e in (self.recs.get(version) or {}).get("assignment") or []}
            # a second cooperative rebalance may still be under way
            deadline = time.monotonic() + settle_s
            while java.assignment() != wanted and time.monotonic() < deadline:
                time.sleep(0.5)
            same = java.assignment() == wanted
            self.match = {"version": version, "matches": same, "at_s": round(self.now(), 2)}
            self.say(f"[{self.now():5.0f}s] >> {self.java.group}: the assignment its consumers "
                     f"report {'equals' if same else 'differs from'} recommendation v{version}")
        member = java.members[-1]
        m = self.java.mark(time.monotonic(), "leave",
                           f"{self._short(member.client_id)} leaves {self.java.group}: the "
                           "recommendation no longer fits", short="member leaves")
        self.say(f"[{m.t:5.0f}s] >> {m.text}")
        java.leave(-1)
        self.left = {"client_id": member.client_id, "at_s": m.t}

    # -- the summary -------------------------------------------------------------------------------

    def _result(self) -> DemoResult:
        from streaming.dev.demo.plot import plot_lag

        table = self.cfg.table_path(RECOMMENDATIONS)
        summary = summarize(self.java, self.range, list(self.recs.values()), self.fallbacks,
                            self.match, self.left, self.options.window_s)
        summary["rate_horizon_s"] = self.cfg.policy.rate_horizon_s
        plots = [
            plot_lag(mon, self.out_dir / f"lag-{name}.png",
                     f"{mon.group}: lag per consumer ({what})")
            for mon, name, what in ((self.java, "java", "RecommendationAssignor"),
                                    (self.range, "range", "Kafka's range")) if mon.samples]
        (self.out_dir / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
        return DemoResult(self.out_dir, table, plots[0] if plots else None, summary,
                          render(summary, table, plots))


def run(cfg: Config, options: JavaDemoOptions, out: Callable[[str], None] = print) -> DemoResult:
    """Check the Java build, then as :func:`streaming.dev.demo.runner.run` with
    :class:`JavaDemo`."""
    from streaming import jvm
    from streaming.dev.demo import runner

    jvm.resolve()
    assignor_classpath()  # before a cluster and Spark start: say now which make target is missing
    return runner.run(cfg, options, out, demo=JavaDemo)

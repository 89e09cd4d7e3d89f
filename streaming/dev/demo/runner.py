"""``rebalancer demo``: the whole loop on one machine, shown live, with a summary and a plot at the
end.

1. a Kafka cluster (three brokers on racks a, b, c when embedded), the streaming job (in this
   process, Spark local mode, short trigger interval) and the trigger-feed reader start;
2. the workload: a Zipf-skewed producer on a 12-partition topic (one replica per partition) and a
   group of three consumers (one per rack) using
   :class:`~streaming.apply.assignor.RecommendationAssignor`; with no recommendation yet they run
   Kafka's ``range`` assignment, which gives the first consumer two thirds of the traffic: its lag
   grows;
3. the collector polls every few seconds; the job sees the skew, recommends; the group rebalances
   onto the recommendation and the lag drains;
4. midway every replica moves to the next rack: a ``rack_change`` recommendation follows;
5. after ``duration`` (or Ctrl-C) everything stops, and the summary and plot are written.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streaming.apply.identities import client_id_from_member_id
from streaming.config import Config
from streaming.contracts.tables import RECOMMENDATIONS
from streaming.dev.demo.loop import (
    RATE_HORIZON_S,
    CollectorThread,
    GroupOptions,
    GroupRun,
    loop_config,
    stop_query,
)
from streaming.dev.demo.monitor import (
    GroupMonitor,
    Sample,
    line,
    peak,
    recommendation_text,
    short_name,
)
from streaming.paths import DATA_DIR

log = logging.getLogger(__name__)


@dataclass
class DemoOptions:
    duration_s: float = 180.0
    move_replicas_at_s: float | None = None
    """default: half the duration."""
    collector_interval_s: float = 2.5
    trigger_interval: str = "3 seconds"
    cooldown_s: float = 30.0
    rate_horizon_s: float = RATE_HORIZON_S
    min_total_lag: int = 200
    """the demo's group is small (12 partitions, hundreds of records of lag): the production default
    of 1,000 records would keep its lag skew below the floor"""
    group: GroupOptions = field(default_factory=GroupOptions)
    out_dir: Path | None = None
    """default data/demo/<timestamp>."""


@dataclass
class DemoResult:
    out_dir: Path
    table: str
    plot: Path | None
    summary: dict[str, Any]
    lines: list[str]


def _stamp() -> str:
    return time.strftime("%Y%m%d-%H%M%S")


class Demo:
    def __init__(self, cfg: Config, options: DemoOptions, spark: Any,
                 out: Callable[[str], None] = print) -> None:
        self.options = options
        self.out_dir = Path(options.out_dir or DATA_DIR / "demo" / _stamp())
        self.cfg = loop_config(cfg, str(self.out_dir / "delta"), str(self.out_dir / "checkpoints"),
                               cooldown_s=options.cooldown_s,
                               trigger_interval=options.trigger_interval,
                               rate_horizon_s=options.rate_horizon_s,
                               min_total_lag=options.min_total_lag)
        self.spark = spark
        self._out = out
        self.recs: list[dict[str, Any]] = []
        self.monitor: GroupMonitor | None = None
        self._lock = threading.Lock()

    def say(self, text: str) -> None:
        with self._lock:
            self._out(text)

    # -- callbacks (other threads) -----------------------------------------------------------------

    def _on_sample(self, monitor: GroupMonitor, sample: Sample) -> None:
        self.say(line(sample, monitor.group))

    def _on_rec(self, rec: dict[str, Any]) -> None:
        if self.monitor is None or rec["group"] != self.monitor.group:
            return
        self.recs.append(rec)
        short = f"v{rec['version']} {','.join(rec.get('triggers') or [])}"
        m = self.monitor.mark(time.monotonic(), "recommendation",
                              recommendation_text(rec, self.cfg.policy.rate_horizon_s), short=short)
        self.say(f"[{m.t:5.0f}s] >> {m.text}")

    def _on_decision(self, d) -> None:
        if self.monitor is None:
            return
        group = self.monitor.group
        sizes = ", ".join(sorted(f"{short_name(client_id_from_member_id(k) or k, group)} {len(v)}"
                                 for k, v in d.assignment.items()))
        if d.applied:
            m = self.monitor.mark(time.monotonic(), "applied",
                                  f"rebalance: the group applies recommendation v{d.version} "
                                  f"(partitions: {sizes})", version=d.version)
        else:
            m = self.monitor.mark(time.monotonic(), "fallback",
                                  f"rebalance: {d.reason}; {d.assignor} fallback")
        self.say(f"[{m.t:5.0f}s] >> {m.text}")

    # -- the run -----------------------------------------------------------------------------------

    def run(self, stop: threading.Event | None = None) -> DemoResult:
        from streaming.apply.feed import RecommendationFeed
        from streaming.job import query as job_query

        stop = stop or threading.Event()
        cfg = self.cfg
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.say(f"streaming job: starting (trigger every {self.options.trigger_interval}, lag "
                 f"skew after {cfg.policy.skew_observations} observations, cooldown "
                 f"{cfg.policy.cooldown_s:g}s) ...")
        query, printer = job_query.start(self.spark, cfg,
                                         checkpoint=cfg.checkpoint_path("rebalancer"))
        printer.out = lambda text: None
        feed = RecommendationFeed(cfg.kafka).start()
        collector = run = None
        try:
            feed.wait_ready(30)
            feed.add_listener(self._on_rec)
            run = self._start_group(feed)
            self.monitor = GroupMonitor(self.options.group.group, time.monotonic())
            collector = CollectorThread(cfg, [self.monitor], self.options.collector_interval_s,
                                        on_sample=self._on_sample)
            collector.start()
            self.say(f"collector: polling every {self.options.collector_interval_s:g}s; demo runs "
                     f"{self.options.duration_s:.0f}s (Ctrl-C to stop early)")
            self._wait(query, run, stop)
        finally:
            self.say("stopping: collector, consumers, producer, feed reader, streaming query ...")
            if collector is not None:
                collector.stop()
            if run is not None:
                run.stop()
            feed.stop()
            stop_query(query)
            time.sleep(0.5)
            self.spark.streams.removeListener(printer)
        return self._result()

    def _start_group(self, feed) -> GroupRun:
        """The workload and the consumer group on RecommendationAssignor, once it has its
        partitions."""
        g = self.options.group
        run = GroupRun(self.cfg, g, feed, out=None, on_decision=self._on_decision)
        self.say(f"workload: topic {g.topic} ({g.partitions} partitions, one replica each, racks "
                 f"a/b/c), {g.produce_rate:.0f} records/s Zipf({g.zipf:g}); group {g.group}: "
                 f"{g.consumers} consumers at {g.consume_rate:.0f} records/s each, assignor "
                 f"RecommendationAssignor (until a recommendation: {g.fallback})")
        run.start()
        if not run.wait_assigned(90):
            raise RuntimeError("the consumer group did not get its partitions within 90 s")
        return run

    def _wait(self, query, run: GroupRun, stop: threading.Event) -> None:
        """Until the duration is over, Ctrl-C or ``stop``; the replicas move racks once, midway by
        default."""
        o = self.options
        assert self.monitor is not None
        move_at = o.move_replicas_at_s if o.move_replicas_at_s is not None else o.duration_s / 2
        moved = False
        try:
            while not stop.is_set():
                now = time.monotonic() - self.monitor.t0
                if now >= o.duration_s:
                    break
                if not moved and now >= move_at:
                    moved = True
                    threading.Thread(target=self._move, args=(run,), daemon=True,
                                     name="move-replicas").start()
                if query.exception() is not None:
                    raise RuntimeError(f"the streaming query failed: {query.exception()}")
                stop.wait(0.5)
        except KeyboardInterrupt:
            self.say("interrupted: stopping early")

    def _move(self, run: GroupRun) -> None:
        assert self.monitor is not None
        m = self.monitor.mark(time.monotonic(), "replicas",
                              "replicas of every partition move to the next rack",
                              short="replicas move")
        self.say(f"[{m.t:5.0f}s] >> {m.text}")
        try:
            moved = run.workload.move_replicas()
            self.say(f"[{time.monotonic() - self.monitor.t0:5.0f}s] >> replicas moved: "
                     + ", ".join(f"p{p}->broker {r[0]}" for p, r in sorted(moved.items())))
        except Exception as e:
            self.say(f"moving replicas failed: {e}")

    # -- the summary -------------------------------------------------------------------------------

    def _result(self) -> DemoResult:
        from streaming.dev.demo.plot import plot_lag

        mon = self.monitor
        table = self.cfg.table_path(RECOMMENDATIONS)
        summary = summarize(mon, self.recs) if mon is not None else {}
        summary["rate_horizon_s"] = self.cfg.policy.rate_horizon_s
        plot = None
        if mon is not None and mon.samples:
            plot = plot_lag(mon, self.out_dir / "lag.png",
                            f"{mon.group}: lag per consumer (range until the first recommendation)")
        (self.out_dir / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
        lines = render_summary(summary, table, plot)
        return DemoResult(self.out_dir, table, plot, summary, lines)


def summarize(mon: GroupMonitor, recs: list[dict[str, Any]]) -> dict[str, Any]:
    """Figures before (range, up to the first applied recommendation) and after (the last 30 s)."""
    applied = mon.first_mark("applied")
    moved = mon.first_mark("replicas")
    end = mon.samples[-1].t if mon.samples else 0.0
    before = mon.window(end=applied.t) if applied else mon.samples
    after_start = max(applied.t if applied else 0.0, end - 30.0)
    after = mon.window(start=after_start)
    top_before, top_after = peak(before), peak(after)

    def avg(samples: list[Sample], f) -> float | None:
        vals = [f(s) for s in samples if f(s) is not None]
        return round(sum(vals) / len(vals), 2) if vals else None

    pre_move = mon.window(end=moved.t) if moved else mon.samples
    rack_rec = next((m for m in mon.marks if m.kind == "applied" and moved and m.t > moved.t), None)
    post_move = mon.window(start=moved.t, end=rack_rec.t) if moved and rack_rec else \
        (mon.window(start=moved.t) if moved else [])
    return {
        "group": mon.group,
        "duration_s": end,
        "first_recommendation_applied_at_s": applied.t if applied else None,
        "before": {"window_s": [before[0].t, before[-1].t] if before else None,
                   "max_consumer_lag": top_before.max_lag if top_before else None,
                   "imbalance_at_max": round(top_before.imbalance, 2) if top_before else None,
                   "cross_rack": before[0].cross_rack if before else None},
        "after": {"window_s": [after[0].t, after[-1].t] if after else None,
                  "max_consumer_lag": top_after.max_lag if top_after else None,
                  "imbalance_at_max": round(top_after.imbalance, 2) if top_after else None,
                  "mean_max_consumer_lag": avg(after, lambda s: s.max_lag),
                  "end_max_consumer_lag": after[-1].max_lag if after else None,
                  "cross_rack": after[-1].cross_rack if after else None},
        "cross_rack": {"start": mon.samples[0].cross_rack if mon.samples else None,
                       "before_replica_move": pre_move[-1].cross_rack if pre_move else None,
                       "after_replica_move": (max((s.cross_rack or 0) for s in post_move)
                                              if post_move else None),
                       "end": mon.samples[-1].cross_rack if mon.samples else None,
                       "partitions": mon.samples[-1].partitions if mon.samples else None},
        "recommendations": [
            {"version": r["version"], "triggers": r.get("triggers"), "before": r.get("before"),
             "after": r.get("after"), "partitions_moved": r.get("partitions_moved"),
             "at_s": next((m.t for m in mon.marks if m.kind == "recommendation"
                           and m.data.get("short", "").startswith(f"v{r['version']} ")), None)}
            for r in recs],
        "rebalances": [{"at_s": m.t, "what": m.text} for m in mon.marks
                       if m.kind in ("applied", "fallback")],
    }


def render_summary(s: dict[str, Any], table: str, plot: Path | None) -> list[str]:
    def n(v: Any, fmt: str = ",") -> str:
        return "?" if v is None else format(v, fmt)

    b, a, c = s.get("before") or {}, s.get("after") or {}, s.get("cross_rack") or {}
    out = ["", "=" * 100, f"summary: group {s.get('group')}, {n(s.get('duration_s'), '.0f')} s"]
    if s.get("first_recommendation_applied_at_s") is None:
        out.append("  no recommendation was applied (run longer, or see the log above)")
    window = a.get("window_s") or [0, 0]
    out += [
        f"  before (Kafka's range, until the first recommendation was applied at "
        f"{n(s.get('first_recommendation_applied_at_s'), '.0f')} s): max consumer lag "
        f"{n(b.get('max_consumer_lag'))}, imbalance (max/mean) "
        f"{n(b.get('imbalance_at_max'), '.2f')} at that moment",
        f"  after (last {n(window[1] - window[0], '.0f')} s): "
        f"max consumer lag {n(a.get('max_consumer_lag'))} "
        f"(imbalance {n(a.get('imbalance_at_max'), '.2f')} at that moment; "
        f"mean {n(a.get('mean_max_consumer_lag'), ',.0f')}, "
        f"{n(a.get('end_max_consumer_lag'))} at the end)",
        f"  cross-rack partitions (of {n(c.get('partitions'))}): start {n(c.get('start'))}, "
        f"before the replica move {n(c.get('before_replica_move'))}, "
        f"right after it {n(c.get('after_replica_move'))}, end {n(c.get('end'))}",
        f"  recommendations ({len(s.get('recommendations') or [])}):",
    ]
    for r in s.get("recommendations") or []:
        out.append(f"    at {n(r.get('at_s'), '.0f')} s: " +
                   recommendation_text(r, s.get("rate_horizon_s") or 0))
    out.append(f"  rebalances ({len(s.get('rebalances') or [])}):")
    for r in s.get("rebalances") or []:
        out.append(f"    at {r['at_s']:.0f} s: {r['what']}")
    out += [
        f"  recommendations Delta table: {table}",
        "  query it with `rebalancer recommendations --conf "
        f"paths.tables={table.rsplit('/', 1)[0]}`, or in Spark SQL:",
        "    SELECT version, triggers, before_max_lag, after_max_lag, before_cross_rack, "
        f"after_cross_rack, partitions_moved FROM delta.`{table}` ORDER BY version",
        "    SELECT version, a.client_id, a.rack, size(a.partitions) AS partitions "
        f"FROM delta.`{table}` LATERAL VIEW explode(assignment) AS a ORDER BY version, a.client_id",
        f"  plot of lag per consumer: {plot}" if plot else "  no plot (no samples)",
        "=" * 100,
    ]
    return out


def run(cfg: Config, options: Any, out: Callable[[str], None] = print,
        demo: Callable[..., Any] | None = None) -> DemoResult:
    """Start (or use) the cluster, Spark, run the demo, stop everything; return the result.

    ``demo``: the class to run, ``Demo`` (with :class:`DemoOptions`) or another taking the same
    arguments (:class:`~streaming.dev.demo.java.JavaDemo` with its own options)."""
    from streaming import jvm
    from streaming.config import EMBEDDED
    from streaming.embedded.live_cluster import kafka_for
    from streaming.spark_session import get_spark

    jvm.resolve()
    # pandas' FutureWarning from inside pyspark's Arrow serializer, once per batch in every Python
    # worker
    os.environ.setdefault("PYTHONWARNINGS", "ignore::FutureWarning")
    if cfg.kafka.bootstrap_servers == EMBEDDED:
        cfg = dataclasses.replace(cfg, kafka=dataclasses.replace(cfg.kafka, embedded_brokers=3))
    with kafka_for(cfg) as live:
        out(f"Kafka at {live.kafka.bootstrap_servers}; starting Spark ...")
        spark = get_spark(live)
        try:
            result = (demo or Demo)(live, options, spark, out).run()
            try:
                rows = spark.sql(
                    "SELECT `group`, version, triggers, before_max_lag, after_max_lag, "
                    "before_cross_rack, after_cross_rack, partitions_moved FROM "
                    f"delta.`{result.table}` ORDER BY `group`, version"
                ).collect()
                result.lines[-2:-2] = ["  the first query (with the group), run now:"] + [
                    f"    {r.group} v{r.version} {','.join(r.triggers)}: max lag "
                    f"{r.before_max_lag:,.0f} -> {r.after_max_lag:,.0f}, cross-rack "
                    f"{r.before_cross_rack} -> {r.after_cross_rack}, {r.partitions_moved} moved"
                    for r in rows]
            except Exception as e:
                log.warning("reading the recommendations table failed: %s", e)
        finally:
            spark.stop()
    return result

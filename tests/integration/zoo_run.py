"""One run of the project against the zoo (tests/integration/zoo.py), everything test_zoo.py checks,
read once.

In order, on one shared cluster:

1. the zoo formed, the collector polls (publishing to a job's event topics, ``/metrics`` on) until
   every membered group is settled; Kafka's ``kafka-consumer-groups`` describes members and offsets
   right after; ``describe`` (JSON and table) and a scrape of the collector's ``/metrics`` follow;
2. changes under the groups: the doomed group's topic deleted, a third stream thread in the Streams
   app, a third librdkafka member in the classic librdkafka group; the collector polls until each is
   settled again, and Kafka's tool describes the doomed group again;
3. the job drains every event the collector published (``--available-now``): its recommendations,
   rejected events and trigger feed; then ``verify`` of every zoo group.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import logging
import time
import traceback
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from streaming import exporter
from streaming.collector import Collector, CollectorOptions
from streaming.collector.cluster_snapshot import ClusterSnapshot
from streaming.collector.publisher import Publisher
from streaming.contracts import events as ev
from streaming.contracts.tables import RECOMMENDATIONS, REJECTED
from streaming.dev.java_process import TP
from streaming.job import query

from .java_client import consumer_groups, parse_table, wait_for
from .jobrun import count, feed, table
from .test_job import job_config
from .zoo import CROWD, GROUPS, JAVA_GROUPS, Zoo, partitions

ZOO = r"^(zoo-|connect-zoo-)"
MEMBERS = {"streams": 2, "sink": 1, "rdk_classic": 2, "rdk_consumer": 2, "regex_classic": 2,
           "regex_consumer": 2, "doomed": 2, "crowd": CROWD}
"""The zoo's groups with members that Kafka's consumer-group tool describes, and how many each
has."""
CHANGED = {"streams": 3, "rdk_classic": 3, "doomed": 2}
"""The groups phase 2 changes, and their members after."""


@dataclass
class Reading:
    """What the collector's polls of one phase published: every event, the latest members event of
    each group, the latest lag reading of each partition, what it logged, and its last snapshot."""

    events: list[dict] = field(default_factory=list)
    members: dict[str, dict] = field(default_factory=dict)
    lag: dict[tuple[str, str, int], dict] = field(default_factory=dict)
    logged: list[str] = field(default_factory=list)
    snapshot: ClusterSnapshot | None = None
    waiting: str = ""
    """what the last check of :func:`settled` still waited for."""

    def add(self, events: list[dict], snapshot: ClusterSnapshot | None) -> None:
        self.events += events
        self.snapshot = snapshot
        for e in events:
            if e["type"] == ev.MEMBERS:
                self.members[e["group"]] = e
            elif e["type"] in ev.LAG_TYPES:
                self.lag.update({(r["group"], r["topic"], r["partition"]): r
                                 for r in ev.readings(e)})


@dataclass
class ZooRun:
    zoo: Zoo
    before: Reading
    after: Reading | None = None
    tool_members: list[dict[str, str]] = field(default_factory=list)
    tool_offsets: list[dict[str, str]] = field(default_factory=list)
    tool_doomed: tuple[list[dict[str, str]], list[dict[str, str]]] = ([], [])
    """the doomed group's members and offsets tables once its topic is gone."""
    clients: dict[str, dict[str, set[TP]]] = field(default_factory=dict)
    """kind -> client id -> what the client says it holds, when phase 1 settled (librdkafka and Java
    groups)."""
    described: dict = field(default_factory=dict)
    described_table: str = ""
    metrics: str = ""
    recommendations: list = field(default_factory=list)
    rejected: int = -1
    feed: list[dict] = field(default_factory=list)
    verified: dict[str, tuple[int, dict]] = field(default_factory=dict)
    """group -> (verify's exit status, its JSON)."""
    failed: dict[str, str] = field(default_factory=dict)
    """step -> its traceback, for each step that failed: the others still ran, so one run tells
    every fault."""
    seconds: dict[str, float] = field(default_factory=dict)
    """step -> its wall time (the zoo's CI budget is a few minutes: where they go)."""

    def attempt(self, step: str, body: Callable[[], object]) -> None:
        started = time.monotonic()
        try:
            body()
        except Exception:
            self.failed[step] = traceback.format_exc()
        self.seconds[step] = round(time.monotonic() - started, 1)

    def needs(self, *steps: str) -> None:
        """Fail the calling test with the traceback of any of ``steps`` that failed."""
        failed = [f"{s}:\n{self.failed[s]}" for s in steps if s in self.failed]
        assert not failed, "\n".join(failed)


class _Lines(logging.Handler):
    def __init__(self, into: list[str]) -> None:
        super().__init__(logging.INFO)
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        self.into.append(record.getMessage())


@contextlib.contextmanager
def logged_into(lines: list[str]) -> Iterator[None]:
    """Every INFO+ line the project's loggers say meanwhile, into ``lines``."""
    logger = logging.getLogger("streaming")
    handler, level = _Lines(lines), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def settled(kinds: dict[str, int], empty: tuple[str, ...] = ()) -> Callable[[Reading], bool]:
    """Each group of ``kinds`` Stable with its members event of that many members holding all its
    input (``empty``: holding nothing)."""
    def check(r: Reading) -> bool:
        for kind, n in kinds.items():
            e = r.members.get(GROUPS[kind])
            info = r.snapshot.groups.get(GROUPS[kind]) if r.snapshot else None
            held = {(t, int(p)) for m in (e or {}).get("members", ()) for t, p in m["assigned"]}
            if e is None or info is None or info.state != "Stable" or len(e["members"]) != n or \
                    held != (set() if kind in empty else partitions(kind)):
                r.waiting = (f"{kind}: state {info.state if info else None}, "
                             f"{len(e['members']) if e else None} members holding {len(held)} "
                             "partitions")
                return False
        return True
    return check


def poll_until(collector: Collector, publisher: Publisher, done: Callable[[Reading], bool],
               what: str) -> Reading:
    reading = Reading()

    def check() -> bool:
        events = collector.poll_once()
        publisher.publish(events)
        reading.add(events, collector.last_snapshot)
        return done(reading)
    with logged_into(reading.logged):
        try:
            wait_for(check, 120, 1.0, what)
        except AssertionError as e:
            raise AssertionError(f"{e}; still waiting for {reading.waiting}") from None
    return reading


def cli(*argv: str) -> tuple[int, str]:
    """``rebalancer ARGV`` in this process: its exit status and what it printed."""
    from streaming.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(list(argv))
    return code, out.getvalue()


def tool_rows(bootstrap: str, kinds: list[str], *view: str) -> list[dict[str, str]]:
    groups = (a for k in kinds for a in ("--group", GROUPS[k]))
    return parse_table(consumer_groups(bootstrap, "--describe", *view, *groups))


def run(cfg, spark, zoo: Zoo) -> ZooRun:
    """The three phases (the module's docstring) over a started ``zoo``."""
    jc = job_config(cfg, f"zoo{uuid.uuid4().hex[:6]}")
    query.ensure_topics(jc)
    mc = dataclasses.replace(jc, metrics=dataclasses.replace(jc.metrics, enabled=True,
                                                             collector_port=0))
    collector = Collector(mc, CollectorOptions(include=ZOO, client_rack_pattern=None), out=None,
                          export=exporter.for_collector(mc))
    publisher = Publisher(jc)
    try:
        started = time.monotonic()
        zr = ZooRun(zoo, poll_until(collector, publisher, settled(MEMBERS),
                                    "every membered zoo group settled"))
        zr.seconds["settled"] = round(time.monotonic() - started, 1)
        _read_phase1(zr, jc, collector)
        zr.attempt("changes", lambda: _phase2(zr, collector, publisher))
    finally:
        collector.close()
        publisher.close()
    # read: the crowd's part is done (no later poll can see it leave), and its heartbeats would slow
    # the job
    zr.attempt("crowd stopped", zr.zoo.stop_crowd)
    zr.attempt("job", lambda: _run_job(zr, jc, spark))
    zr.attempt("verify", lambda: _verify(zr, jc))
    return zr


def _read_phase1(zr: ZooRun, jc, collector: Collector) -> None:
    import urllib.request

    bootstrap = zr.zoo.bootstrap
    zr.clients = {kind: {c.client_id: c.assignment() for c in members}
                  for kind, members in zr.zoo.rdk.items()}
    zr.clients |= {kind: zr.zoo.java_of(kind).holding(GROUPS[kind]) for kind in JAVA_GROUPS}

    def tool() -> None:
        zr.tool_members = tool_rows(bootstrap, list(MEMBERS), "--members", "--verbose")
        zr.tool_offsets = tool_rows(bootstrap, [*MEMBERS, "offsets"], "--offsets")

    def metrics() -> None:
        zr.metrics = urllib.request.urlopen(collector.export.server.url, timeout=10).read().decode()

    def describe() -> None:
        common = ("--bootstrap", bootstrap, "--groups", ZOO, "--lag-seconds-timeout", "0", "--conf",
                  f"paths.tables={jc.paths.tables}")
        code, out = cli("describe", *common, "--format", "json")
        assert code == 0, out
        zr.described = json.loads(out)
        code, zr.described_table = cli("describe", *common)
        assert code == 0, zr.described_table

    for step, body in (("tool", tool), ("metrics", metrics), ("describe", describe)):
        zr.attempt(step, body)


def _phase2(zr: ZooRun, collector: Collector, publisher: Publisher) -> None:
    zoo = zr.zoo
    zoo.delete_doomed_topic()
    zoo.add_stream_thread()
    zoo.rdk["rdk_classic"].append(zoo.rdk_consumer("rdk_classic", "c", "third"))
    zr.after = poll_until(collector, publisher, settled(CHANGED, empty=("doomed",)),
                          "the changed groups settled")
    zr.tool_doomed = (tool_rows(zoo.bootstrap, ["doomed"], "--members", "--verbose"),
                      tool_rows(zoo.bootstrap, ["doomed"], "--offsets"))


def _run_job(zr: ZooRun, jc, spark) -> None:
    query.run(spark, jc, available_now=True)
    zr.recommendations = (table(spark, jc, RECOMMENDATIONS)
                          if count(spark, jc, RECOMMENDATIONS) else [])
    zr.rejected = count(spark, jc, REJECTED)
    zr.feed = feed(jc)


def _verify(zr: ZooRun, jc) -> None:
    for group in GROUPS.values():
        code, out = cli("verify", group, "--bootstrap", zr.zoo.bootstrap, "--format", "json",
                        "--conf", f"paths.tables={jc.paths.tables}")
        zr.verified[group] = (code, json.loads(out) if out.strip() else {"printed": out})


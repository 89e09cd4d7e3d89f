"""A zoo of real Kafka clients on the shared embedded cluster: every kind of group real clients make
(#29).

Each member is a real client from its own pinned package (:mod:`.zoo_members`): Kafka Streams, Kafka
Connect and kafka-clients from Maven Central (``conf/maven/zoo``), librdkafka through
``confluent-kafka`` from PyPI. :class:`Zoo` starts them, waits until Kafka says each group is formed
(observable conditions only) and stops every process it started. The groups (ids in :data:`GROUPS`):

- ``streams``: a Kafka Streams application on the classic protocol (assignor ``stream``, its own
  user data), two stream threads, so two members; reads ``zoo-streams-in`` (4 partitions);
  :meth:`Zoo.add_stream_thread` makes a third;
- ``kip1071``: the same topology on the streams rebalance protocol (KIP-1071, group type
  ``streams``), in the same JVM; Kafka 4.3 finalizes ``streams.version`` 1 at format, so the broker
  offers it without unstable APIs;
- ``connect``: a Kafka Connect worker in distributed mode (protocol type ``connect``), running a
  FileStreamSink connector, whose task consumes in the consumer group ``sink``
  (``connect-zoo-sink``);
- ``rdk_classic``: two librdkafka consumers, classic protocol, ``cooperative-sticky``, racks a and
  b;
- ``rdk_consumer``: two librdkafka consumers on ``group.protocol=consumer`` (KIP-848), racks b and
  c;
- ``regex_classic``: two static Java consumers (classic, ``range``) subscribed to the regex
  ``zoo-re-.*``, which the client matches itself (two topics);
- ``regex_consumer``: two static Java consumers on KIP-848 with a ``SubscriptionPattern``, which the
  broker matches: its members' descriptions carry the regex, not the topics;
- ``doomed``: two Java consumers (classic) of ``zoo-doomed-in``, which
  :meth:`Zoo.delete_doomed_topic` deletes under them;
- ``crowd``: :data:`CROWD` Java consumers of one group (KIP-848) in a JVM of their own, on
  ``zoo-crowd-in``; :meth:`Zoo.stop_crowd` stops them once the collector has read the zoo, so that
  the job's run afterwards does not compete for the machine's two cores with several hundred
  members' heartbeats (about 0.8 of a core with the brokers' share on top: the job's step took 141 s
  beside them);
- ``share``: a KIP-932 share group with one share consumer (``share.version`` is 1 at Kafka 4.3);
- ``offsets``: a group that only commits offsets (as Flink and Spark jobs do): no member ever joins
  it.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streaming.dev.java_process import TP, JavaProcess

from .conftest import commit_offsets
from .java_client import wait_for
from .zoo_members import ConnectWorker, JavaConsumers, RdkConsumer, zoo_java

GROUPS = {"streams": "zoo-streams", "kip1071": "zoo-streams-kip1071", "connect": "zoo-connect",
          "sink": "connect-zoo-sink", "rdk_classic": "zoo-rdk-classic",
          "rdk_consumer": "zoo-rdk-consumer", "regex_classic": "zoo-regex-classic",
          "regex_consumer": "zoo-regex-consumer", "doomed": "zoo-doomed", "crowd": "zoo-crowd",
          "share": "zoo-share", "offsets": "zoo-offsets"}
CROWD = 300
"""Members of the crowd group: several hundred, as a large real deployment runs."""
TOPICS = {"zoo-streams-in": 4, "zoo-streams-out": 4, "zoo-connect-in": 2, "zoo-rdk": 4,
          "zoo-share-in": 2, "zoo-re-a": 2, "zoo-re-b": 3, "zoo-doomed-in": 2, "zoo-crowd-in": 60}
REGEX = "zoo-re-.*"
DOOMED = "zoo-doomed-in"
SILENT = {"zoo-streams-out", "zoo-crowd-in"}
"""Topics no record is produced to (the crowd's members only hold partitions: its reading is about
members)."""
INPUT = {"streams": "zoo-streams-in", "kip1071": "zoo-streams-in", "sink": "zoo-connect-in",
         "rdk_classic": "zoo-rdk", "rdk_consumer": "zoo-rdk",
         "regex_classic": ("zoo-re-a", "zoo-re-b"),
         "regex_consumer": ("zoo-re-a", "zoo-re-b"), "doomed": DOOMED, "crowd": "zoo-crowd-in"}
"""The topics each consuming group reads."""
RECORDS_PER_PARTITION = 40
OFFSETS_ONLY = {("zoo-rdk", 0): 10, ("zoo-rdk", 1): 25}
"""What the offsets-only group commits."""
RACKS = {"rdk_classic": ("a", "b"), "rdk_consumer": ("b", "c")}
JAVA_GROUPS = {"regex_classic": ("classic", 2, f"regex:{REGEX}", "static"),
               "regex_consumer": ("consumer", 2, f"regex:{REGEX}", "static"),
               "doomed": ("classic", 2, f"topic:{DOOMED}", "manual-commit"),
               "crowd": ("consumer", CROWD, "topic:zoo-crowd-in", "-")}
"""kind -> (protocol, members, subscription, options) of the groups of
:class:`~.zoo_members.JavaConsumers`. The doomed group commits by hand: with auto-commit, a classic
Java member retries committing the deleted topic's offsets before it rejoins
(UNKNOWN_TOPIC_OR_PARTITION is retriable) for up to max.poll.interval.ms, 5 minutes, holding the
group in its rebalance (seen in the zoo's first run: one member still held its partition 120 s after
the deletion)."""


def partitions(kind: str) -> set[TP]:
    topics = INPUT[kind]
    return {(t, p) for t in ((topics,) if isinstance(topics, str) else topics)
            for p in range(TOPICS[t])}


@dataclass
class Zoo:
    bootstrap: str
    work: Path
    classes: Path
    streams: JavaProcess | None = None
    share: JavaProcess | None = None
    java: JavaConsumers | None = None
    crowd: JavaConsumers | None = None
    connect: ConnectWorker | None = None
    rdk: dict[str, list[RdkConsumer]] = field(default_factory=dict)

    # -- start -------------------------------------------------------------------------------------

    def start(self) -> Zoo:
        """Topics, their records, then every member; returns once each group is formed."""
        self._topics()
        self._produce()
        with contextlib.closing(self._admin()) as admin:
            # never joins: protocol type "", no members
            commit_offsets(admin, GROUPS["offsets"], OFFSETS_ONLY)
        self._start_connect()  # the slowest to start: first
        self.streams = zoo_java(self.classes, 192, "streams", self.bootstrap, GROUPS["streams"],
                                "zoo-streams-in", "zoo-streams-out", "zoo-streams",
                                GROUPS["kip1071"], log=self.work / "streams.log")
        self.share = zoo_java(self.classes, 128, "share", self.bootstrap, GROUPS["share"],
                              "zoo-share-in", "zoo-share-0", log=self.work / "share.log")
        self.java = JavaConsumers(self.classes, self.bootstrap,
                                  {GROUPS[k]: v for k, v in JAVA_GROUPS.items() if k != "crowd"},
                                  self.work / "consumers.log")
        self.crowd = JavaConsumers(self.classes, self.bootstrap,
                                   {GROUPS["crowd"]: JAVA_GROUPS["crowd"]}, self.work / "crowd.log")
        self._start_rdk()
        self.connect.run_connector("zoo-sink", {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
            "topics": "zoo-connect-in", "file": str(self.work / "sink.txt"), "tasks.max": "1"}, 180)
        self._wait_formed()
        return self

    def _admin(self):
        from kafka import KafkaAdminClient

        return KafkaAdminClient(bootstrap_servers=self.bootstrap, client_id="zoo-admin")

    def _topics(self) -> None:
        from kafka.admin import NewTopic

        with contextlib.closing(self._admin()) as admin:
            # the crowd's topic on one replica: 60 partitions, kept cheap for the brokers
            admin.create_topics([NewTopic(t, n, 1 if t == "zoo-crowd-in" else 3)
                                 for t, n in TOPICS.items()])
            wait_for(lambda: all(len(t.get("partitions") or ()) == TOPICS[t["name"]] and
                                 all(p["leader_id"] >= 0 for p in t["partitions"])
                                 for t in admin.describe_topics(list(TOPICS))), 60, 0.5,
                                 "the zoo's topics led")

    def _produce(self) -> None:
        from kafka import KafkaProducer

        producer = KafkaProducer(bootstrap_servers=self.bootstrap, acks="all")
        try:
            for topic, n in TOPICS.items():
                if topic in SILENT:
                    continue
                for p in range(n):
                    for i in range(RECORDS_PER_PARTITION):
                        producer.send(topic, f"{topic}-{p}-{i}".encode(), partition=p)
            producer.flush(60)
        finally:
            producer.close()

    def _start_connect(self) -> None:
        self.connect = ConnectWorker({
            "bootstrap.servers": self.bootstrap, "group.id": GROUPS["connect"],
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "org.apache.kafka.connect.storage.StringConverter",
            "config.storage.topic": "zoo-connect-configs",
            "offset.storage.topic": "zoo-connect-offsets",
            "status.storage.topic": "zoo-connect-status", "config.storage.replication.factor": "1",
            "offset.storage.replication.factor": "1", "status.storage.replication.factor": "1",
            "offset.storage.partitions": "2", "status.storage.partitions": "1",
            "offset.flush.interval.ms": "1000",
            # plugins from their ServiceLoader manifests (Kafka's own have them): no reflective scan
            # of the classpath, which took most of the worker's start on a loaded machine
            "plugin.discovery": "service_load"}, self.work)

    def _start_rdk(self) -> None:
        for kind in ("rdk_classic", "rdk_consumer"):
            self.rdk[kind] = [self.rdk_consumer(kind, rack) for rack in RACKS[kind]]

    def rdk_consumer(self, kind: str, rack: str, name: str | None = None) -> RdkConsumer:
        """One librdkafka member of ``kind``'s group (client id ``<group>-<name or rack>``)."""
        base = {"bootstrap.servers": self.bootstrap, "auto.offset.reset": "earliest",
                "auto.commit.interval.ms": 500, "topic.metadata.refresh.interval.ms": 5000}
        proto = {"partition.assignment.strategy": "cooperative-sticky", "session.timeout.ms": 10000,
                 "heartbeat.interval.ms": 1000} if kind == "rdk_classic" \
            else {"group.protocol": "consumer"}
        return RdkConsumer({**base, **proto, "group.id": GROUPS[kind],
                            "client.id": f"{GROUPS[kind]}-{name or rack}",
                            "client.rack": rack}, INPUT[kind])

    def _wait_formed(self) -> None:
        """Every group formed and every consuming group caught up (committed = end), so what the
        project reads and what Kafka's tool reports afterwards is the same still picture."""
        assert self.streams is not None and self.connect is not None
        for kind, members in self.rdk.items():
            self._wait(lambda ms=members, k=kind: rdk_formed(ms, partitions(k)),
                       f"the {kind} librdkafka members sharing {INPUT[kind]}")
        for kind in JAVA_GROUPS:
            self._wait(lambda k=kind: self.java_of(k).formed(GROUPS[k], partitions(k)),
                       f"the {kind} Java members holding {INPUT[kind]}")
        # a share group starts at the log end (share.auto.offset.reset=latest): it exists once
        # listed
        for kind, group_type in (("share", "share"), ("kip1071", "streams")):
            self._wait(lambda k=kind, t=group_type:
                       self.listed().get(GROUPS[k], {}).get("group_type", "").lower() == t,
                       f"the {kind} group listed as a {group_type} group")
        self._wait(lambda: self.connect.task_running("zoo-sink"), "the FileStreamSink task running")
        # every consuming group: the crowd's topic holds no record, but its members commit their
        # positions (0)
        for kind in ("streams", "kip1071", "sink", "rdk_classic", "rdk_consumer", "regex_classic",
                     "regex_consumer", "doomed", "crowd"):
            self._wait(lambda k=kind: self.caught_up(GROUPS[k], partitions(k)),
                       f"{kind} committed up to the end")

    def _wait(self, check, what: str, timeout_s: float = 180) -> None:
        """``wait_for(check)``, failing at once when a member process ended or a Streams app failed
        (its log's tail in the message) rather than at the timeout."""
        def alive_and(check=check):
            for name, proc in (("streams", self.streams), ("share", self.share),
                               ("consumers", self.java), ("crowd", self.crowd)):
                failed = proc is not None and (not proc.alive or any(
                    ln.endswith("state ERROR") or ln.endswith("state PENDING_ERROR")
                    for ln in proc.output()))
                if failed:
                    tail = (self.work / f"{name}.log").read_text(errors="replace")[-3000:]
                    raise AssertionError(f"zoo {name} failed waiting for {what}:\n{tail}")
            if self.connect is not None and self.connect.proc.poll() is not None:
                raise AssertionError("the Connect worker ended: "
                                     f"{(self.work / 'connect.log').read_text()[-3000:]}")
            return check()
        wait_for(alive_and, timeout_s, 0.5, what)

    def java_of(self, kind: str) -> JavaConsumers:
        """The JVM of the Java group ``kind`` (:data:`JAVA_GROUPS`)."""
        proc = self.crowd if kind == "crowd" else self.java
        assert proc is not None, f"the zoo's {kind} JVM is not running"
        return proc

    def listed(self) -> dict[str, dict[str, Any]]:
        """ListGroups over every broker: group id -> what it says (type, protocol type, state)."""
        with contextlib.closing(self._admin()) as admin:
            return {g["group_id"]: g for g in admin.list_groups()}

    def caught_up(self, group: str, tps: set[TP]) -> bool:
        """Whether ``group`` committed the end offset of every partition of ``tps``."""
        from kafka import TopicPartition
        from kafka.admin import OffsetSpec
        from kafka.errors import KafkaError

        with contextlib.closing(self._admin()) as admin:
            try:
                committed = {
                    (tp.topic, tp.partition): om.offset
                    for tp, om in admin.list_group_offsets({group: None}).get(group, {}).items()}
                ends = admin.list_partition_offsets({TopicPartition(t, p): OffsetSpec.LATEST
                                                     for t, p in tps})
                return all(committed.get((tp.topic, tp.partition)) == o.offset
                           for tp, o in ends.items())
            except KafkaError:  # the group's coordinator still loading: not yet
                return False

    # -- changes under the groups ------------------------------------------------------------------

    def delete_doomed_topic(self) -> None:
        """Delete the doomed group's topic under its running members; returns once they hold
        nothing."""
        with contextlib.closing(self._admin()) as admin:
            admin.delete_topics([DOOMED])
        wait_for(lambda: (held := self.java.holding(GROUPS["doomed"])) and
                 not any(held.values()), 120, 0.5,
                 f"the doomed members holding nothing once {DOOMED} is gone")

    def add_stream_thread(self) -> None:
        """A third stream thread in the Streams application (a third member of its classic
        group)."""
        assert self.streams is not None and self.streams.proc.stdin is not None
        self.streams.proc.stdin.write("add-thread\n")
        self.streams.proc.stdin.flush()
        wait_for(lambda: any(ln.startswith("added ") for ln in self.streams.output()), 60, 0.5,
                 "a stream thread added")

    # -- stop --------------------------------------------------------------------------------------

    def stop_crowd(self) -> None:
        """Stop the crowd's JVM (the other groups go on)."""
        if self.crowd is not None:
            self.crowd.stop()

    def stop(self) -> None:
        """Stop every member this zoo started (JVMs included: none is left behind)."""
        for members in self.rdk.values():
            for m in members:
                m.stop()
        for proc in (self.streams, self.share, self.java, self.crowd):
            if proc is not None:
                proc.stop()
        if self.connect is not None:
            self.connect.stop()

    def pids(self) -> list[int]:
        procs = [p.proc for p in (self.streams, self.share, self.java, self.crowd) if p is not None]
        return [p.pid for p in [*procs, *([self.connect.proc] if self.connect else [])]]

    def __enter__(self) -> Zoo:
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(Exception):
            self.stop()


def rdk_formed(members: list[RdkConsumer], tps: set[TP]) -> bool:
    """Whether every librdkafka member holds something and together they hold ``tps`` once."""
    held = [m.assignment() for m in members]
    owned = [tp for h in held for tp in h]
    return all(held) and len(owned) == len(set(owned)) and set(owned) == tps

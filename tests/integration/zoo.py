"""A zoo of real Kafka clients on the shared embedded cluster: every kind of group real clients make (#29).

Each member is a real client from its own pinned package: Kafka Streams and Kafka Connect from Maven Central
(``conf/maven/zoo``, resolved into ``<jar cache>/zoo``), librdkafka through ``confluent-kafka`` from PyPI,
the share consumer from kafka-clients. :class:`Zoo` starts them, waits until Kafka says each group is formed
(observable conditions only) and stops every process it started. The groups (ids in :data:`GROUPS`):

- ``streams``: a Kafka Streams application on the classic protocol (assignor ``stream``, its own user data),
  two stream threads, so two members; reads ``zoo-streams-in`` (4 partitions);
- ``connect``: a Kafka Connect worker in distributed mode (protocol type ``connect``), running a
  FileStreamSink connector, whose task consumes in the consumer group ``sink`` (``connect-zoo-sink``);
- ``rdk_classic``: two librdkafka consumers, classic protocol, ``cooperative-sticky``, racks a and b;
- ``rdk_consumer``: two librdkafka consumers on ``group.protocol=consumer`` (KIP-848), racks b and c;
- ``share``: a KIP-932 share group with one share consumer (``share.version`` is 1 at Kafka 4.3);
- ``offsets``: a group that only commits offsets (as Flink and Spark jobs do): no member ever joins it.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import threading
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streaming import jvm
from streaming.dev.java_process import JavaProcess
from streaming.embedded.cluster import free_port

from .java_client import wait_for

SOURCE = Path(__file__).parents[1] / "java" / "ZooMembers.java"
GROUPS = {"streams": "zoo-streams", "connect": "zoo-connect", "sink": "connect-zoo-sink",
          "rdk_classic": "zoo-rdk-classic", "rdk_consumer": "zoo-rdk-consumer", "share": "zoo-share",
          "offsets": "zoo-offsets"}
TOPICS = {"zoo-streams-in": 4, "zoo-streams-out": 4, "zoo-connect-in": 2, "zoo-rdk": 4, "zoo-share-in": 2}
RECORDS_PER_PARTITION = 40
OFFSETS_ONLY = {("zoo-rdk", 0): 10, ("zoo-rdk", 1): 25}
"""What the offsets-only group commits."""
RACKS = {"rdk_classic": ("a", "b"), "rdk_consumer": ("b", "c")}


def compile_members(out_dir: Path) -> Path:
    """Compile ZooMembers.java against the zoo's classpath into ``out_dir``; return it."""
    jvm.resolve()
    javac = Path(jvm.java_executable()).with_name("javac")
    out_dir.mkdir(parents=True, exist_ok=True)
    subprocess.run([str(javac), "-d", str(out_dir), "-cp", jvm.zoo_classpath(), str(SOURCE)], check=True,
                   capture_output=True, text=True)
    return out_dir


class RdkConsumer:
    """One confluent-kafka (librdkafka) consumer polling in a thread of this process until :meth:`stop`."""

    def __init__(self, conf: dict[str, Any], topic: str) -> None:
        from confluent_kafka import Consumer

        self.client_id = conf["client.id"]
        self.rack = conf.get("client.rack")
        self._assigned: set[tuple[str, int]] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._consumer = Consumer(conf)
        self._consumer.subscribe([topic])
        self._thread = threading.Thread(target=self._run, name=f"rdk-{self.client_id}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self._consumer.poll(0.2)
                held = {(tp.topic, tp.partition) for tp in self._consumer.assignment()}
                with self._lock:
                    self._assigned = held
        finally:
            self._consumer.close()  # leaves the group

    def assignment(self) -> set[tuple[str, int]]:
        with self._lock:
            return set(self._assigned)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)


@dataclass
class Zoo:
    bootstrap: str
    work: Path
    classes: Path
    streams: JavaProcess | None = None
    share: JavaProcess | None = None
    connect: subprocess.Popen | None = None
    rdk: dict[str, list[RdkConsumer]] = field(default_factory=dict)
    connect_port: int = 0

    # -- start ----------------------------------------------------------------------------------------

    def start(self) -> Zoo:
        """Topics, their records, then every member; returns once each group is formed."""
        self._topics()
        self._produce()
        self._commit_offsets_only()
        java = jvm.java_executable()
        cp = f"{self.classes}:{jvm.zoo_classpath()}"
        self.streams = JavaProcess([java, "-Xmx160m", f"-Djava.io.tmpdir={self.work}", "-cp", cp, "ZooMembers",
                                    "streams", self.bootstrap, GROUPS["streams"], "zoo-streams-in",
                                    "zoo-streams-out", "zoo-streams"], "zoo-streams", log=self._log("streams"))
        self.share = JavaProcess([java, "-Xmx128m", "-cp", cp, "ZooMembers", "share", self.bootstrap,
                                  GROUPS["share"], "zoo-share-in", "zoo-share-0"], "zoo-share-0",
                                 log=self._log("share"))
        self._start_connect(java)
        self._start_rdk()
        self._wait_formed()
        return self

    def _log(self, name: str):
        return open(self.work / f"{name}.log", "w")  # JavaProcess closes it

    def _admin(self):
        from kafka import KafkaAdminClient

        return KafkaAdminClient(bootstrap_servers=self.bootstrap, client_id="zoo-admin")

    def _topics(self) -> None:
        from kafka.admin import NewTopic

        admin = self._admin()
        try:
            admin.create_topics([NewTopic(t, n, 3) for t, n in TOPICS.items()])
            wait_for(lambda: all(len(t.get("partitions") or ()) == TOPICS[t["name"]] and
                                 all(p["leader_id"] >= 0 for p in t["partitions"])
                                 for t in admin.describe_topics(list(TOPICS))), 60, 0.5, "the zoo's topics led")
        finally:
            admin.close()

    def _produce(self) -> None:
        from kafka import KafkaProducer

        producer = KafkaProducer(bootstrap_servers=self.bootstrap, acks="all")
        try:
            for topic, n in TOPICS.items():
                if topic.endswith("-out"):
                    continue
                for p in range(n):
                    for i in range(RECORDS_PER_PARTITION):
                        producer.send(topic, f"{topic}-{p}-{i}".encode(), partition=p)
            producer.flush(60)
        finally:
            producer.close()

    def _commit_offsets_only(self) -> None:
        """Commit without ever joining: the group exists with protocol type "" and no members."""
        from kafka import KafkaConsumer, TopicPartition
        from kafka.structs import OffsetAndMetadata

        consumer = KafkaConsumer(bootstrap_servers=self.bootstrap, group_id=GROUPS["offsets"],
                                 enable_auto_commit=False)
        try:
            tps = {TopicPartition(t, p): o for (t, p), o in OFFSETS_ONLY.items()}
            consumer.assign(list(tps))
            consumer.commit({tp: OffsetAndMetadata(o, "", -1) for tp, o in tps.items()})
        finally:
            consumer.close(autocommit=False)

    def _start_connect(self, java: str) -> None:
        self.connect_port = free_port()
        props = {
            "bootstrap.servers": self.bootstrap, "group.id": GROUPS["connect"],
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "org.apache.kafka.connect.storage.StringConverter",
            "config.storage.topic": "zoo-connect-configs", "offset.storage.topic": "zoo-connect-offsets",
            "status.storage.topic": "zoo-connect-status", "config.storage.replication.factor": "1",
            "offset.storage.replication.factor": "1", "status.storage.replication.factor": "1",
            "offset.flush.interval.ms": "1000", "listeners": f"http://127.0.0.1:{self.connect_port}",
        }
        worker = self.work / "connect-worker.properties"
        worker.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        self.connect = subprocess.Popen(
            [java, "-Xmx256m", "-cp", jvm.zoo_classpath(), "org.apache.kafka.connect.cli.ConnectDistributed",
             str(worker)], stdout=self._log("connect"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        wait_for(lambda: self._rest("GET", "/") is not None, 180, 1.0, "the Connect worker's REST API")
        self._rest("POST", "/connectors", {"name": "zoo-sink", "config": {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
            "topics": "zoo-connect-in", "file": str(self.work / "sink.txt"), "tasks.max": "1"}})

    def _rest(self, method: str, path: str, body: dict | None = None) -> Any:
        """A call to the worker's REST API: its JSON answer, or None while it does not answer."""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"http://127.0.0.1:{self.connect_port}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return json.loads(resp.read() or b"null")
        except OSError:
            return None

    def _start_rdk(self) -> None:
        base = {"bootstrap.servers": self.bootstrap, "auto.offset.reset": "earliest",
                "auto.commit.interval.ms": 500, "topic.metadata.refresh.interval.ms": 5000}
        classic = {"partition.assignment.strategy": "cooperative-sticky", "session.timeout.ms": 10000,
                   "heartbeat.interval.ms": 1000}
        self.rdk = {kind: [RdkConsumer({**base, **(classic if kind == "rdk_classic" else
                                                   {"group.protocol": "consumer"}),
                                        "group.id": GROUPS[kind], "client.id": f"{GROUPS[kind]}-{rack}",
                                        "client.rack": rack}, "zoo-rdk")
                           for rack in RACKS[kind]]
                    for kind in ("rdk_classic", "rdk_consumer")}

    def _wait_formed(self) -> None:
        """Every group formed and every consuming group caught up (committed = end), so what the project reads
        and what Kafka's tool reports afterwards is the same still picture."""
        everything = {("zoo-rdk", p) for p in range(TOPICS["zoo-rdk"])}
        for kind, members in self.rdk.items():
            wait_for(lambda ms=members: all(m.assignment() for m in ms) and
                     set().union(*(m.assignment() for m in ms)) == everything, 120, 0.5,
                     f"the {kind} librdkafka members sharing zoo-rdk")
        assert self.streams is not None and self.share is not None
        # a share group starts at the log end (share.auto.offset.reset=latest): it exists once listed
        wait_for(lambda: self.listed().get(GROUPS["share"], {}).get("group_type", "").lower() == "share", 120, 1.0,
                 "the share group listed")
        wait_for(lambda: (self._rest("GET", "/connectors/zoo-sink/status") or {}).get("tasks", [{}])[0]
                 .get("state") == "RUNNING", 120, 1.0, "the FileStreamSink task running")
        for kind in ("streams", "sink", "rdk_classic", "rdk_consumer"):
            wait_for(lambda k=kind: self.caught_up(GROUPS[k]), 120, 1.0, f"{kind} committed up to the end")

    def listed(self) -> dict[str, dict[str, Any]]:
        """ListGroups over every broker: group id -> what it says (type, protocol type, state)."""
        admin = self._admin()
        try:
            return {g["group_id"]: g for g in admin.list_groups()}
        finally:
            admin.close()

    def caught_up(self, group: str) -> bool:
        """Whether ``group`` committed the end offset of every partition of its input topic."""
        from kafka import TopicPartition
        from kafka.admin import OffsetSpec
        from kafka.errors import KafkaError

        topic = {"zoo-streams": "zoo-streams-in", "connect-zoo-sink": "zoo-connect-in"}.get(group, "zoo-rdk")
        admin = self._admin()
        try:
            committed = {(tp.topic, tp.partition): om.offset
                         for tp, om in admin.list_group_offsets({group: None}).get(group, {}).items()}
            ends = admin.list_partition_offsets({TopicPartition(topic, p): OffsetSpec.LATEST
                                                 for p in range(TOPICS[topic])})
            return all(committed.get((tp.topic, tp.partition)) == o.offset for tp, o in ends.items())
        except KafkaError:  # the group's coordinator still loading: not yet
            return False
        finally:
            admin.close()

    # -- stop -----------------------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop every member this zoo started (JVMs included: none is left behind)."""
        for members in self.rdk.values():
            for m in members:
                m.stop()
        for proc in (self.streams, self.share):
            if proc is not None:
                proc.stop()
        if self.connect is not None and self.connect.poll() is None:
            self.connect.terminate()  # ConnectDistributed stops its worker on SIGTERM
            try:
                self.connect.wait(30)
            except subprocess.TimeoutExpired:
                self.connect.kill()
                self.connect.wait(10)

    def pids(self) -> list[int]:
        procs = [p.proc for p in (self.streams, self.share) if p is not None]
        return [p.pid for p in [*procs, *([self.connect] if self.connect else [])]]

    def __enter__(self) -> Zoo:
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(Exception):
            self.stop()

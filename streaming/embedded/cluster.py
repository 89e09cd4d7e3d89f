"""An embedded Apache Kafka cluster (KRaft) on loopback, run from the Maven Central artifacts.

Each node is one JVM acting as broker and controller (``process.roles=broker,controller``) with a
static voter set, so ``StorageTool format`` needs no quorum flags. One node by default; three with
``broker.rack`` a, b, c when racks matter. Every node gets free loopback ports, its own data folder
and a log file; :meth:`KafkaCluster.start` waits until the cluster answers with every broker, and
kills whatever it started if anything fails. A cluster ends with the process that started it,
however that process ends (a SIGKILL included): a run stopped mid-way leaves no broker behind.

``rebalancer kafka up`` detaches a cluster and records it (:mod:`streaming.embedded.detached`);
``rebalancer kafka down`` stops the one recorded there.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from assignors.rack_placement import RACK_AWARE_SELECTOR, SELECTOR_CONFIG
from streaming import jvm
from streaming.embedded import detached
from streaming.embedded.sasl_ssl import EmbeddedSecurity, write_private
from streaming.errors import KafkaClusterError
from streaming.paths import CACHE_DIR, CONF_DIR

log = logging.getLogger(__name__)

DEFAULT_RACKS = ("a", "b", "c")
JVM_OPTS = [
    "-Xms256m", "-Xmx512m", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
    "-XX:+ExplicitGCInvokesConcurrent", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true",
]


def new_cluster_id() -> str:
    """A Kafka cluster id: 16 random bytes, URL-safe base64 without padding. Like Kafka's
    Uuid.randomUuid, never one starting with '-', which the storage tool's argument parser would
    take for an option."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@dataclass
class Node:
    node_id: int
    port: int
    controller_port: int
    rack: str | None
    data_dir: Path
    log_file: Path
    process: subprocess.Popen | None = field(default=None, repr=False)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"


class KafkaCluster:
    """A KRaft cluster of ``brokers`` combined nodes under ``base_dir`` (a temp folder by
    default)."""

    def __init__(
        self,
        brokers: int = 1,
        racks: tuple[str, ...] | None = None,
        base_dir: Path | None = None,
        ports: list[int] | None = None,
        extra_config: dict[str, str] | None = None,
        security: EmbeddedSecurity | None = None,
        outlives_owner: bool = False,
    ) -> None:
        if brokers < 1:
            raise KafkaClusterError(f"brokers must be >= 1, got {brokers}")
        if racks is None:
            racks = DEFAULT_RACKS if brokers > 1 else ()
        if racks and len(racks) < brokers:
            racks = tuple(racks[i % len(racks)] for i in range(brokers))
        self.base_dir = (Path(base_dir) if base_dir
                         else CACHE_DIR / "kafka" / f"cluster-{uuid.uuid4().hex[:8]}")
        self.cluster_id = new_cluster_id()
        self.extra_config = extra_config or {}
        # SASL_SSL listeners, SCRAM users and ACLs (streaming/embedded/sasl_ssl.py)
        self.security = security
        self.outlives_owner = outlives_owner  # `kafka up`: the nodes stay after this process
        self.nodes = [
            Node(
                node_id=i + 1,
                port=ports[i] if ports else free_port(),
                controller_port=free_port(),
                rack=racks[i] if racks else None,
                data_dir=self.base_dir / f"node-{i + 1}" / "data",
                log_file=self.base_dir / f"node-{i + 1}" / "server.log",
            )
            for i in range(brokers)
        ]
        self._started = False

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(n.address for n in self.nodes)

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self, timeout_s: float = 120.0) -> str:
        """Format and start every node, wait until all brokers answer; return the bootstrap
        servers."""
        java = jvm.java_executable()
        classpath = jvm.kafka_classpath()
        if self.security:
            self.security.make_certificates()
        for node in self.nodes:
            if _port_in_use(node.port):
                raise KafkaClusterError(
                    f"port {node.port} for broker {node.node_id} is already in use")
            node.data_dir.mkdir(parents=True, exist_ok=True)
            self._write_properties(node)
        atexit.register(self.stop)
        self._started = True
        try:
            self._format(java, classpath)
            for node in self.nodes:
                self._launch(node, java, classpath)
            self._wait_ready(timeout_s)
            if self.security:
                self.security.grant(self.bootstrap_servers)
        except BaseException:
            self.stop()
            raise
        log.info("Kafka cluster up: %s (%d broker(s), logs in %s)", self.bootstrap_servers,
                 len(self.nodes), self.base_dir)
        return self.bootstrap_servers

    def stop(self, timeout_s: float = 30.0) -> None:
        """Stop every node: SIGTERM (controlled shutdown), SIGKILL after ``timeout_s``."""
        procs = [n.process for n in self.nodes
                 if n.process is not None and n.process.poll() is None]
        for p in procs:
            with contextlib.suppress(ProcessLookupError):
                p.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        for p in procs:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log.warning("Kafka node pid %d did not stop in %.0fs; killing it", p.pid, timeout_s)
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
                p.wait(10)
        self._started = False
        with contextlib.suppress(Exception):
            atexit.unregister(self.stop)

    def pids(self) -> list[int]:
        return [n.process.pid for n in self.nodes if n.process is not None]

    def stop_broker(self, node_id: int, timeout_s: float = 30.0) -> None:
        """Stop one node (for fault tests); :meth:`start_broker` brings it back."""
        node = self._node(node_id)
        if node.process is None or node.process.poll() is not None:
            return
        node.process.send_signal(signal.SIGTERM)
        try:
            node.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(node.process.pid, signal.SIGKILL)
            node.process.wait(10)

    def start_broker(self, node_id: int, timeout_s: float = 90.0) -> None:
        """Bring a stopped node back and wait until it is registered and leads its preferred
        partitions again, so the leadership move does not happen later in the middle of other
        work."""
        node = self._node(node_id)
        self._launch(node, jvm.java_executable(), jvm.kafka_classpath())
        self._wait_ready(timeout_s)
        self.wait_preferred_leaders(timeout_s)

    def wait_preferred_leaders(self, timeout_s: float = 60.0) -> bool:
        """Wait until every partition is led by its preferred (first) replica; False on timeout."""
        from kafka import KafkaAdminClient

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                admin = KafkaAdminClient(bootstrap_servers=self.bootstrap_servers,
                                         request_timeout_ms=5000, client_id="rebalancer-wait",
                                         **self._admin_options())
                try:
                    topics = admin.describe_topics()
                finally:
                    admin.close()
                if all(p["leader_id"] == p["replica_nodes"][0] for t in topics
                       for p in t["partitions"] if p["replica_nodes"]):
                    return True
            except Exception:  # the cluster is still settling
                pass
            time.sleep(1.0)
        log.warning("partitions not back on their preferred leaders after %.0fs", timeout_s)
        return False

    def __enter__(self) -> KafkaCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- internals ---------------------------------------------------------------------------------

    def _admin_options(self) -> dict:
        return self.security.python_admin_options() if self.security else {}

    def _node(self, node_id: int) -> Node:
        for n in self.nodes:
            if n.node_id == node_id:
                return n
        raise KafkaClusterError(f"no broker with id {node_id}")

    def _write_properties(self, node: Node) -> None:
        voters = ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in self.nodes)
        rf = min(3, len(self.nodes))
        props = {
            "process.roles": "broker,controller",
            "node.id": str(node.node_id),
            "controller.quorum.voters": voters,
            "listeners": f"PLAINTEXT://127.0.0.1:{node.port},CONTROLLER://127.0.0.1:"
                         f"{node.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(node.data_dir),
            "num.partitions": "1",
            "default.replication.factor": str(rf),
            "offsets.topic.replication.factor": str(rf),
            "offsets.topic.num.partitions": "10",
            "transaction.state.log.replication.factor": str(rf),
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": str(rf),
            "share.coordinator.state.topic.min.isr": "1",
            "min.insync.replicas": "1",
            "group.initial.rebalance.delay.ms": "0",
            # after a broker restart, move leaders back within seconds rather than at the next
            # 5-minute check, so the move does not land minutes later in the middle of unrelated
            # work
            "leader.imbalance.check.interval.seconds": "10",
            "auto.create.topics.enable": "false",
            "log.segment.bytes": str(64 * 1024 * 1024),
            "num.network.threads": "2",
            "num.io.threads": "2",
            "background.threads": "2",
        }
        if self.security:
            props.update(self.security.broker_properties(node.port, node.controller_port))
        if node.rack:
            props["broker.rack"] = node.rack
            props[SELECTOR_CONFIG] = RACK_AWARE_SELECTOR
        props.update(self.extra_config)
        text = "".join(f"{k}={v}\n" for k, v in props.items())
        # with security it holds passwords
        write_private(node.data_dir.parent / "server.properties", text)

    def _java_cmd(self, java: str, classpath: str, node: Node, main: list[str]) -> list[str]:
        log4j = CONF_DIR / "kafka-log4j2.properties"
        return [
            java, *JVM_OPTS, f"-Dlog4j2.configurationFile={log4j}",
            f"-Dkafka.logs.dir={node.log_file.parent}", "-cp", classpath, *main,
        ]

    def _owner_bound(self) -> list[str]:
        """The prefix that has a node sent SIGTERM when the process that started it ends: Linux's
        parent-death signal, set by util-linux's ``setpriv``. None for a cluster that outlives its
        owner, nor off the main thread (the signal follows the thread that started the node)."""
        if self.outlives_owner or threading.current_thread() is not threading.main_thread():
            return []
        setpriv = shutil.which("setpriv") if sys.platform.startswith("linux") else None
        return [setpriv, "--pdeathsig", "TERM", "--"] if setpriv else []

    def _format(self, java: str, classpath: str) -> None:
        procs = []
        for node in self.nodes:
            props = node.data_dir.parent / "server.properties"
            cmd = self._java_cmd(java, classpath, node,
                                 ["kafka.tools.StorageTool", "format", "-t", self.cluster_id, "-c",
                                  str(props), "--ignore-formatted",
                                  *([f"@{self.security.format_argument_file()}"]
                                    if self.security else [])])
            out = open(node.data_dir.parent / "format.log", "w")  # noqa: SIM115 - closed below
            procs.append((node, out, subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)))
        for node, out, p in procs:
            rc = p.wait(120)
            out.close()
            if rc != 0:
                raise KafkaClusterError(
                    f"formatting storage of broker {node.node_id} failed (exit {rc})",
                    str(node.data_dir.parent / "format.log"))

    def _launch(self, node: Node, java: str, classpath: str) -> None:
        props = node.data_dir.parent / "server.properties"
        cmd = [*self._owner_bound(), *self._java_cmd(java, classpath, node,
                                                     ["kafka.Kafka", str(props)])]
        out = open(node.data_dir.parent / "stdout.log", "ab")  # noqa: SIM115 - owned by the child
        node.process = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                        start_new_session=True)
        out.close()

    def _wait_ready(self, timeout_s: float) -> None:
        from kafka import KafkaAdminClient

        # kafka-python logs every refused connection while the brokers start; those are expected
        # here
        kafka_log = logging.getLogger("kafka")
        level = kafka_log.level
        kafka_log.setLevel(logging.CRITICAL)
        try:
            self._poll_ready(timeout_s, KafkaAdminClient)
        finally:
            kafka_log.setLevel(level)

    def _poll_ready(self, timeout_s: float, KafkaAdminClient: type) -> None:
        deadline = time.monotonic() + timeout_s
        want = {n.node_id for n in self.nodes if n.process is not None and n.process.poll() is None}
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            for n in self.nodes:
                if n.process is not None and n.process.poll() is not None:
                    raise KafkaClusterError(
                        f"broker {n.node_id} exited with status {n.process.returncode} while "
                        "starting"
                        + _log_hint(n), str(n.log_file))
            try:
                admin = KafkaAdminClient(bootstrap_servers=self.bootstrap_servers,
                                         request_timeout_ms=5000, client_id="rebalancer-wait",
                                         **self._admin_options())
                try:
                    seen = {b["broker_id"] for b in admin.describe_cluster()["brokers"]}
                finally:
                    admin.close()
                if want <= seen:
                    return
                last_error = KafkaClusterError(f"brokers {sorted(want - seen)} not registered yet")
            except Exception as e:  # the cluster is still starting
                last_error = e
            time.sleep(0.5)
        raise KafkaClusterError(
            f"Kafka cluster did not come up within {timeout_s:.0f}s ({last_error})",
            str(self.nodes[0].log_file))

    # -- detached clusters (rebalancer kafka up/down) ----------------------------------------------

    def save_state(self) -> None:
        """Record the cluster for ``kafka down`` (:mod:`streaming.embedded.detached`); it outlives
        this process (made with ``outlives_owner``)."""
        if not self.outlives_owner:
            raise KafkaClusterError("only a cluster made with outlives_owner=True is recorded for "
                                    "`kafka down`: this one ends with the process that started it")
        detached.record({
            "bootstrap_servers": self.bootstrap_servers,
            "base_dir": str(self.base_dir),
            "pids": self.pids(),
            **({"client_properties": self.security.client_files()} if self.security else {}),
        })
        with contextlib.suppress(Exception):
            atexit.unregister(self.stop)


def _log_hint(node: Node) -> str:
    for f in (node.log_file, node.data_dir.parent / "stdout.log"):
        if f.exists():
            lines = [ln for ln in f.read_text(errors="replace").splitlines()
                     if "ERROR" in ln or "Exception" in ln]
            if lines:
                return f": {lines[-1].strip()[:300]}"
    return ""

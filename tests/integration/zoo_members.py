"""The zoo's member processes (tests/integration/zoo.py): each a real client from its own pinned
package.

- :func:`compile_members`: tests/java/ZooMembers.java against the zoo's classpath (kafka-streams,
  connect and kafka-clients from Maven Central at the broker's version, ``conf/maven/zoo``);
- :class:`JavaConsumers`: one JVM of ``ZooMembers consumers``, any number of KafkaConsumers of
  several groups, each member's assignment as it says it (``held CLIENT_ID t-p,...``);
- :class:`RdkConsumer`: one confluent-kafka (librdkafka) consumer polling in a thread of this
  process;
- :class:`ConnectWorker`: a Kafka Connect worker in distributed mode with its REST API.
"""

from __future__ import annotations

import json
import subprocess
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from streaming import jvm
from streaming.dev.java_process import TP, JavaProcess
from streaming.embedded.cluster import free_port

from .java_client import compile_java, wait_for

QUICK_JVM = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")
"""JVM flags for the zoo's short-lived client JVMs: C1 only and the serial collector start them in
less CPU on a loaded machine (the clients do little work)."""


def compile_members(out_dir: Path) -> Path:
    """Compile ZooMembers.java against the zoo's classpath into ``out_dir``; return it."""
    jvm.resolve()
    return compile_java(out_dir, ["ZooMembers.java"], jvm.zoo_classpath())


def zoo_java(classes: Path, heap_mb: int, *args: str, log: Path) -> JavaProcess:
    """``ZooMembers ARGS`` in its own JVM, every line it prints in ``log``."""
    cmd = [jvm.java_executable(), f"-Xmx{heap_mb}m", *QUICK_JVM, f"-Djava.io.tmpdir={log.parent}",
           "-cp", f"{classes}:{jvm.zoo_classpath()}", "ZooMembers", *args]
    return JavaProcess(cmd, args[0], log=open(log, "w"))


def _tps(cells: str) -> set[TP]:
    return {(tp.rsplit("-", 1)[0], int(tp.rsplit("-", 1)[1])) for tp in cells.split(",") if tp}


class JavaConsumers(JavaProcess):
    """``ZooMembers consumers``: ``groups`` maps a group id to (protocol, members, subscription,
    options) as ZooMembers takes them; the member i of group G has client id ``G-i``."""

    def __init__(self, classes: Path, bootstrap: str, groups: dict[str, tuple[str, int, str, str]],
                 log: Path) -> None:
        self.held: dict[str, set[TP]] = {}
        self.groups = groups
        args = [a for g, (proto, n, sub, options) in groups.items()
                for a in (g, proto, str(n), sub, options)]
        heap = 128 + sum(n for _, n, _, _ in groups.values())  # ~1 MB a member
        cmd = [jvm.java_executable(), f"-Xmx{heap}m", *QUICK_JVM,
               "-cp", f"{classes}:{jvm.zoo_classpath()}",
               "ZooMembers", "consumers", bootstrap, *args]
        # JavaProcess closes the log
        super().__init__(cmd, "zoo-consumers", log=open(log, "w"))  # noqa: SIM115

    def on_line(self, line: str) -> None:
        if line.startswith("held "):
            _, client_id, *cells = line.split(" ")
            with self._lock:
                self.held[client_id] = _tps(cells[0] if cells else "")

    def holding(self, group: str) -> dict[str, set[TP]]:
        """Client id -> what it holds, for every member of ``group`` that said so yet."""
        with self._lock:
            return {c: set(h) for c, h in self.held.items() if c.rsplit("-", 1)[0] == group}

    def formed(self, group: str, partitions: set[TP]) -> bool:
        """Whether every member of ``group`` said what it holds, and together they hold
        ``partitions`` once."""
        held = self.holding(group)
        owned = [tp for tps in held.values() for tp in tps]
        return len(held) == self.groups[group][1] and len(owned) == len(set(owned)) \
            and set(owned) == partitions


class RdkConsumer:
    """One confluent-kafka (librdkafka) consumer polling in a thread of this process until
    :meth:`stop`."""

    def __init__(self, conf: dict[str, Any], topic: str) -> None:
        from confluent_kafka import Consumer

        self.client_id = conf["client.id"]
        self.rack = conf.get("client.rack")
        self._assigned: set[TP] = set()
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

    def assignment(self) -> set[TP]:
        with self._lock:
            return set(self._assigned)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)


class ConnectWorker:
    """``ConnectDistributed`` with ``settings`` (Kafka Connect's own names) and a REST API on a free
    port."""

    def __init__(self, settings: dict[str, str], work: Path) -> None:
        self.port = free_port()
        worker = work / "connect-worker.properties"
        props = {**settings, "listeners": f"http://127.0.0.1:{self.port}"}
        worker.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        with open(work / "connect.log", "w") as log:
            self.proc = subprocess.Popen(
                [jvm.java_executable(), "-Xmx256m", *QUICK_JVM, "-cp", jvm.zoo_classpath(),
                 "org.apache.kafka.connect.cli.ConnectDistributed", str(worker)],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def rest(self, method: str, path: str, body: dict | None = None) -> Any:
        """A call to the worker's REST API: its JSON answer, or None while it does not answer or
        refuses (409 while the workers rebalance)."""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data,
                                     method=method, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return json.loads(resp.read() or b"null")
        except (OSError, urllib.error.URLError):
            return None

    def run_connector(self, name: str, config: dict[str, str], timeout_s: float) -> None:
        """Create (or update) connector ``name`` once the worker answers; PUT is idempotent, so a
        retry after a refused call never makes a second one."""
        wait_for(lambda: self.rest("PUT", f"/connectors/{name}/config", config) is not None,
                 timeout_s, 1.0, f"the Connect worker taking connector {name}")

    def task_running(self, name: str) -> bool:
        tasks = (self.rest("GET", f"/connectors/{name}/status") or {}).get("tasks") or [{}]
        return tasks[0].get("state") == "RUNNING"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()  # ConnectDistributed stops its worker on SIGTERM
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

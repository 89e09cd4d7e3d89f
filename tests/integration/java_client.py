"""Java processes for the tests: the programs of tests/java (the one home of the Java that tests and
benchmarks run; :func:`compile_java`) compiled against the cached Kafka jars, and Kafka's own
ConsumerGroupCommand (``kafka-consumer-groups``) and ShareGroupCommand (``kafka-share-groups``) from
the kafka-tools jar.

A :class:`JavaMember` is a real KafkaConsumer in its own JVM, wrapped by the project's
:class:`streaming.dev.java_process.JavaProcess` (the demo's Java consumers use the same wrapper).
"""

from __future__ import annotations

import functools
import re
import subprocess
import time
from pathlib import Path

from streaming import jvm
from streaming.dev.java_process import TP, JavaProcess
from streaming.embedded.broker_config import ASSIGNOR_BUILD, build_jar

JAVA_SOURCES = Path(__file__).parents[1] / "java"
"""Every Java program the tests and benchmarks run (the shipped assignor is in clients/java)."""
SOURCE = JAVA_SOURCES / "GroupMember.java"
GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
SHARE_GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"


def compile_java(out_dir: Path, names: list[str], classpath: str) -> Path:
    """Compile ``names`` (files of tests/java) against ``classpath`` into ``out_dir``; return it (a
    classpath entry). javac's own message when it fails."""
    jvm.resolve()
    javac = Path(jvm.java_executable()).with_name("javac")
    out_dir.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([str(javac), "-d", str(out_dir), "-cp", classpath,
                           *(str(JAVA_SOURCES / n) for n in names)], capture_output=True, text=True)
    assert done.returncode == 0, f"javac {' '.join(names)}: {done.stderr[-3000:]}"
    return out_dir


def compile_member(out_dir: Path, assignor_classes: list[str] | None = None) -> Path:
    """Compile GroupMember.java (and with ``assignor_classes``, AssignorMember.java) into
    ``out_dir``; return it (a classpath entry)."""
    names = ["GroupMember.java"] + (["AssignorMember.java"] if assignor_classes else [])
    classpath = ":".join([*(assignor_classes or []), jvm.kafka_classpath()])
    return compile_java(out_dir, names, classpath)


def compile_remote_member(out_dir: Path) -> Path:
    """Compile GroupMember.java and RemoteAssignorMember.java (a KIP-848 consumer that sets
    ``group.remote.assignor``) into ``out_dir``; return it."""
    return compile_java(out_dir, ["GroupMember.java", "RemoteAssignorMember.java"],
                        jvm.kafka_classpath())


def java(classes: Path, *args: str, timeout_s: float = 120.0) -> str:
    """Run GroupMember with ``args`` to completion; its stdout."""
    cmd = [jvm.java_executable(), "-Xmx128m", "-cp", f"{classes}:{jvm.kafka_classpath()}",
           "GroupMember", *args]
    return subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=timeout_s).stdout


def consumer_groups(bootstrap: str, *args: str, timeout_s: float = 120.0,
                    command: str = GROUP_COMMAND) -> str:
    """``kafka-consumer-groups --bootstrap-server B ARGS`` (or another of Kafka's group tools): its
    stdout."""
    cmd = [jvm.java_executable(), "-Xmx128m", "-cp", jvm.kafka_classpath(), command,
           "--bootstrap-server", bootstrap, *args]
    return subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=timeout_s).stdout


def share_groups(bootstrap: str, *args: str, timeout_s: float = 120.0) -> str:
    """``kafka-share-groups --bootstrap-server B ARGS``: its stdout (its tables read with
    :func:`parse_table`)."""
    return consumer_groups(bootstrap, *args, timeout_s=timeout_s, command=SHARE_GROUP_COMMAND)


def parse_table(text: str) -> list[dict[str, str]]:
    """The rows of a kafka-consumer-groups table. The tool pads every column to its widest value and
    leaves an absent value blank, so cells are cut at the header's column starts; a blank or ``-``
    cell is ``""``."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    rows: list[dict[str, str]] = []
    starts: list[tuple[str, int]] = []
    for ln in lines:
        if ln.startswith("GROUP "):
            starts = [(m.group(0), m.start()) for m in re.finditer(r"\S+", ln)]
            continue
        if not starts:
            continue
        row = {}
        for i, (name, at) in enumerate(starts):
            cell = ln[at:starts[i + 1][1]] if i + 1 < len(starts) else ln[at:]
            row[name] = "" if cell.strip() == "-" else cell.strip()
        rows.append(row)
    return rows


def parse_assignment(cell: str) -> set[TP]:
    """``orders:0,2;audit:1`` (the tool's format) -> {(orders, 0), (orders, 2), (audit, 1)}; blank
    -> empty."""
    out: set[TP] = set()
    for part in cell.split(";"):
        topic, sep, parts = part.strip().rpartition(":")
        if sep:
            out |= {(topic, int(p)) for p in parts.split(",") if p}
    return out


class JavaMember(JavaProcess):
    """One Java consumer in ``group`` (``protocol`` classic or consumer) reading ``topic``; with
    ``assignor_classes`` (see :func:`build_assignor`) an AssignorMember of a classic group that uses
    RecommendationAssignor and reads recommendations from ``trigger_topic``."""

    def __init__(self, classes: Path, bootstrap: str, group: str, topic: str, protocol: str,
                 rack: str, client_id: str, instance_id: str | None = None,
                 assignor_classes: list[str] | None = None,
                 trigger_topic: str = "rebalancer.triggers", rate: int = 0,
                 remote_assignor: str | None = None) -> None:
        self.rack = rack
        self.instance_id = instance_id
        classpath = ":".join([str(classes), *(assignor_classes or []), jvm.kafka_classpath()])
        # a KIP-848 member naming a server-side assignor (see compile_remote_member)
        if remote_assignor:
            main = ["-cp", classpath, "RemoteAssignorMember", bootstrap, group, topic, rack,
                    client_id, remote_assignor]
        elif assignor_classes:
            main = ["-Dlog4j2.configurationFile=" + str(SOURCE.with_name("log4j2.properties")),
                    "-cp", classpath, "AssignorMember", bootstrap, group, topic, rack, client_id,
                    trigger_topic]
        else:
            main = ["-cp", classpath, "GroupMember", "consume", bootstrap, group, topic, protocol,
                    rack, client_id]
            main += [instance_id] if instance_id else []
        # rate: records/s the consumer processes (0 = as fast as it can)
        super().__init__([jvm.java_executable(), "-Xmx128m", f"-Drate={int(rate)}", *main],
                         client_id)


def wait_for(check, timeout_s: float, pause_s: float = 0.5, what: str = "condition"):
    """Call ``check()`` until it returns something truthy; return it (AssertionError after
    ``timeout_s``)."""
    deadline = time.monotonic() + timeout_s
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached in {timeout_s:.0f}s")
        time.sleep(pause_s)


@functools.cache
def build_jar_once() -> Path:
    """``make java-assignor`` (:func:`streaming.embedded.broker_config.build_jar`: clients/java with
    Maven, offline after the first resolve) once per test session: the sources do not change within
    one, and every Maven start costs seconds (2-3 s up to date, 8 s under load, 2 cores) for each
    test and cluster that needs the classes or the jar. The jar."""
    return build_jar()


def build_assignor() -> list[str]:
    """The classpath entries of clients/java's classes and test classes, built once per session."""
    build_jar_once()
    return [str(ASSIGNOR_BUILD / "classes"), str(ASSIGNOR_BUILD / "test-classes")]

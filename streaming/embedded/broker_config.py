"""Broker settings that load the project's KIP-848 server-side assignor (clients/java
ServerAssignor).

:func:`server_assignor_config` is what a broker needs (``group.consumer.assignors`` with ours first,
Kafka's ``uniform`` and ``range`` still there for clients that ask for them, and the feed settings);
:func:`build_jar` builds the assignor jar with Maven into ``.cache/java/assignor`` (offline after
the first resolve); :class:`ServerAssignorCluster` is the embedded cluster with that jar on every
broker's classpath (``rebalancer kafka up --server-assignor``). docs/server-assignor.md shows the
same for a real cluster.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

from streaming import jvm
from streaming.embedded.cluster import KafkaCluster, Node
from streaming.errors import KafkaClusterError
from streaming.paths import CACHE_DIR, SOURCE_ROOT

ASSIGNOR_CLASS = "io.github.kafkarebalancer.ServerAssignor"
ASSIGNOR_NAME = "rebalancer"
ASSIGNOR_POM = SOURCE_ROOT / "clients" / "java" / "pom.xml"
ASSIGNOR_BUILD = CACHE_DIR / "java" / "assignor"


def server_assignor_config(trigger_topic: str = "rebalancer.triggers",
                           default: bool = True) -> dict[str, str]:
    """Broker properties for the server-side assignor. With ``default`` it is the group default
    (first in the list): a group whose members name no ``group.remote.assignor`` gets it, which is
    uniform until a recommendation fits the group."""
    others = ["uniform", "range"]
    assignors = [ASSIGNOR_CLASS, *others] if default else [*others, ASSIGNOR_CLASS]
    return {
        "group.consumer.assignors": ",".join(assignors),
        "rebalancer.trigger.topic": trigger_topic,
    }


def assignor_jar() -> Path | None:
    """The built assignor jar, or None."""
    jars = sorted(ASSIGNOR_BUILD.glob("rebalancer-assignor-*.jar"))
    return jars[-1] if jars else None


def build_jar(timeout_s: float = 600.0) -> Path:
    """``make java-assignor``: build clients/java with Maven (the project's settings and local
    repository)."""
    jvm.resolve()
    mvn = shutil.which("mvn")
    if not mvn:
        raise KafkaClusterError(
            "Maven (mvn) is needed to build the server-side assignor (clients/java)")
    cmd = [mvn, "-B", "-q", "-s", str(jvm.MAVEN_DIR / "settings.xml"),
           f"-Dmaven.repo.local={CACHE_DIR / 'm2'}", "-f", str(ASSIGNOR_POM), "package"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    jar = assignor_jar()
    if done.returncode != 0 or jar is None:
        raise KafkaClusterError("building the server-side assignor failed: " +
                                (done.stdout + done.stderr)[-2000:])
    return jar


class ServerAssignorCluster(KafkaCluster):
    """A :class:`KafkaCluster` whose brokers load ServerAssignor (``jar``: built if not given)."""

    def __init__(self, *args: Any, jar: Path | None = None,
                 trigger_topic: str = "rebalancer.triggers", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.jar = jar or assignor_jar() or build_jar()
        self.extra_config = {**server_assignor_config(trigger_topic), **self.extra_config}

    def _java_cmd(self, java: str, classpath: str, node: Node, main: list[str]) -> list[str]:
        return super()._java_cmd(java, f"{classpath}:{self.jar}", node, main)

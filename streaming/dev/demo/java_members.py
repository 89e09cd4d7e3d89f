"""The Java consumers of ``rebalancer demo --consumers java``: real KafkaConsumers, one JVM each.

Each is ``io.github.kafkarebalancer.demo.DemoConsumer`` from the clients/java module
(``make java-assignor`` builds it into ``.cache/java/assignor``), run against the cached Kafka jars,
in a classic group on either Kafka's ``range`` or the project's ``RecommendationAssignor`` (with
``RebalanceOnRecommendation``). The client settings (bootstrap servers, security) reach it on its
standard input, never on its command line; closing that input makes it leave the group. It prints
``assigned t-p,...`` on every change of assignment and the assignor's log lines;
:class:`JavaConsumer` (a :class:`streaming.dev.java_process.JavaProcess`) keeps both and copies
every line to a log file.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from pathlib import Path

from streaming import jvm
from streaming.config import Config
from streaming.dev.demo.loop import GroupOptions
from streaming.dev.java_process import TP, JavaProcess
from streaming.dev.workload.consumers import client_id_for
from streaming.errors import SetupError
from streaming.java_properties import format_properties
from streaming.kafka_clients.properties import for_spark
from streaming.paths import CACHE_DIR, SOURCE_ROOT

ASSIGNOR_BUILD = CACHE_DIR / "java" / "assignor"
MAIN_CLASS = "io.github.kafkarebalancer.demo.DemoConsumer"
SOURCES = SOURCE_ROOT / "clients" / "java" / "src" / "main" / "java"

# the rebalancer's own decisions (INFO and up) on stdout; the Kafka client's only from WARN
LOG4J2 = """\
status = warn
appender.out.type = Console
appender.out.name = out
appender.out.target = SYSTEM_OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = log %p %c{1}: %m%n
rootLogger.level = warn
rootLogger.appenderRef.out.ref = out
logger.rebalancer.name = io.github.kafkarebalancer
logger.rebalancer.level = info
"""


def assignor_classpath(build: Path = ASSIGNOR_BUILD, sources: Path = SOURCES) -> str:
    """The classpath of the built clients/java module plus the Kafka jars; a :class:`SetupError`
    naming ``make java-assignor`` when the module is not built or its sources changed since."""
    classes = build / "classes"
    main = classes.joinpath(*MAIN_CLASS.split(".")).with_suffix(".class")
    if not main.is_file():
        raise SetupError(f"the Java demo consumer is not built ({main} is missing): "
                         f"run `make java-assignor` (it builds clients/java into {build}; "
                         "Maven and Java 17+ needed)")
    if sources.is_dir():
        built = max(p.stat().st_mtime for p in classes.rglob("*.class"))
        stale = sorted(p.name for p in sources.rglob("*.java") if p.stat().st_mtime > built)
        if stale:
            raise SetupError(
                f"the build in {build} is older than {', '.join(stale)}: run `make java-assignor`")
    return ":".join([str(classes), jvm.kafka_classpath()])


def client_settings(cfg: Config) -> dict[str, str]:
    """What a Java consumer needs to reach the cluster (and the trigger feed), in Kafka's own
    names."""
    return {"bootstrap.servers": cfg.kafka.bootstrap_servers, **for_spark(cfg.kafka.options),
            "rebalancer.trigger.topic": cfg.kafka.trigger_topic}


class JavaConsumer(JavaProcess):
    """One DemoConsumer process; ``on_log(consumer, line)`` is called (from a reader thread) for
    every log line it prints. Every line it prints goes to ``log_dir/<client id>.log`` too."""

    def __init__(self, classpath: str, settings: Mapping[str, str], group: str, topic: str,
                 rack: str, client_id: str, assignor: str, rate: float, log_dir: Path,
                 on_log: Callable[[JavaConsumer, str], None] | None = None) -> None:
        self.rack = rack
        self.on_log = on_log
        log_dir.mkdir(parents=True, exist_ok=True)
        config = log_dir / "log4j2.properties"
        if not config.exists():
            config.write_text(LOG4J2)
        # a small heap and the quick JIT only: six of these share two cores with Kafka and Spark
        cmd = [jvm.java_executable(), "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
               f"-Dlog4j2.configurationFile={config}", "-cp", classpath, MAIN_CLASS,
               group, topic, rack, client_id, assignor, str(int(rate))]
        log = open(log_dir / f"{client_id}.log", "w")  # noqa: SIM115 (closed by the reader thread)
        super().__init__(cmd, client_id, stdin_text=format_properties(settings) + "#end\n", log=log)

    def on_line(self, line: str) -> None:
        if line.startswith("log ") and self.on_log is not None:
            self.on_log(self, line)


class JavaGroup:
    """``options.consumers`` Java consumers of ``options.group`` on ``options.topic``, one per rack
    in turn; ``options.apply``: RecommendationAssignor, else Kafka's range."""

    def __init__(self, cfg: Config, options: GroupOptions, classpath: str, log_dir: Path,
                 on_log: Callable[[JavaConsumer, str], None] | None = None) -> None:
        self.options = options
        self.members: list[JavaConsumer] = []
        self.left: list[JavaConsumer] = []
        self._args = (classpath, client_settings(cfg))
        self._log_dir = log_dir
        self._on_log = on_log

    @property
    def assignor(self) -> str:
        return "rebalancer" if self.options.apply else "range"

    def start(self) -> JavaGroup:
        o = self.options
        for i in range(o.consumers):
            # The range baseline runs without client.rack: Kafka's RangeAssignor is rack-aware when
            # members have racks (KIP-881), and with one replica per partition its split would then
            # follow the topic's random replica placement, skewed in one run and not in the next.
            # Without racks it is the plain contiguous split, the same in every run.
            rack = o.racks[i % len(o.racks)] if o.racks and o.apply else ""
            self.members.append(
                JavaConsumer(*self._args, o.group, o.topic, rack, client_id_for(o.group, i, rack),
                             self.assignor, o.consume_rate, self._log_dir, self._on_log))
        return self

    def assignment(self) -> dict[str, set[TP]]:
        """client id -> partitions, as the running members report them."""
        return {m.client_id: m.assignment() for m in self.members if m.alive}

    def fully_assigned(self) -> bool:
        """Every partition of the topic held by exactly one running member."""
        held = [tp for tps in self.assignment().values() for tp in tps]
        return sorted(held) == [(self.options.topic, p) for p in range(self.options.partitions)]

    def dead(self) -> list[JavaConsumer]:
        """Members that exited without being asked to."""
        return [m for m in self.members if not m.alive]

    def leave(self, index: int = -1) -> JavaConsumer:
        """Member ``index`` leaves the group (its process closes its consumer and exits)."""
        member = self.members.pop(index)
        member.stop()
        self.left.append(member)
        return member

    def stop(self) -> None:
        members, self.members = self.members, []
        threads = [threading.Thread(target=m.stop, daemon=True) for m in members]
        for t in threads:
            t.start()
        for t in threads:
            t.join(45)
        self.left.extend(members)

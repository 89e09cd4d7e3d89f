"""Kafka's own Java assignors as a reference: run ``kafka-clients`` on the project's scenario
format.

``tests/java/KafkaAssignorRunner.java`` (tests/java holds the Java the tests and benchmarks run) is
compiled once into ``.cache/javaref/`` (again whenever the source or the jar set changes) against
the jars ``make setup`` resolved into ``.cache/jars/kafka/``. Then::

    from benchmarks import javaref
    results = javaref.run_cases("sticky", scenarios)  # one JVM for the whole list
    results[0]["assignment"]  # {member: [(topic, p), ...]} in Kafka's order

Scenarios use the conformance schema (``tests/data/conformance/assignor-scenarios.json``, element
0).

As a script::

    .venv/bin/python -m benchmarks.javaref --check            # conformance scenarios vs Java,
                                                              # print diffs
    .venv/bin/python -m benchmarks.javaref --write-overrides  # ... and write
                                                              # tests/data/java_overrides.json

``tests/data/java_overrides.json`` lists every conformance scenario (per assignor) whose
``expected`` value disagrees with Kafka 4.3.1 on the same input, with Java's answer; the conformance
test compares with Java's answer for those.

The package: :mod:`.build` (the JDK, the jars, compiling the runner), :mod:`.run` (cases and timing
runs), :mod:`.conformance` (the conformance scenarios against Java), ``__main__`` (the script).
"""

from .build import (
    JAVA_ASSIGNORS,
    KAFKA_VERSION,
    ROOT,
    JavaRefError,
    classpath,
    ensure_built,
    kafka_clients_version,
)
from .build import _tool as _tool  # benchmarks.speed asks it for ``java -version``
from .conformance import (
    CONFORMANCE,
    OVERRIDES,
    check_conformance,
    rack_mismatches,
    same_assignment,
    to_snapshot,
    write_overrides,
)
from .run import assignments, run_cases, run_timing

__all__ = [
    "CONFORMANCE", "JAVA_ASSIGNORS", "KAFKA_VERSION", "OVERRIDES", "ROOT", "JavaRefError",
    "assignments", "check_conformance", "classpath", "ensure_built", "kafka_clients_version",
    "rack_mismatches", "run_cases", "run_timing", "same_assignment", "to_snapshot",
    "write_overrides",
]

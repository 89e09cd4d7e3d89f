"""The Java side: the JDK's tools, the pinned Kafka jars, and the runner compiled once against
them."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "tests" / "java" / "KafkaAssignorRunner.java"
JARS_DIR = ROOT / ".cache" / "jars" / "kafka"
BUILD_DIR = ROOT / ".cache" / "javaref"
CLASSES_DIR = BUILD_DIR / "classes"
STAMP = BUILD_DIR / "build.stamp"
MAIN_CLASS = "KafkaAssignorRunner"
JAVA_ASSIGNORS = ("range", "roundrobin", "sticky", "cooperative-sticky")
KAFKA_VERSION = "4.3.1"
# Kafka logs through slf4j -> log4j2; without a config log4j2 prints ERROR lines to stdout. Silence
# it.
JVM_FLAGS = ("-Dlog4j2.level=OFF", "-Dorg.apache.logging.log4j.level=OFF", "-Xss4m")


class JavaRefError(RuntimeError):
    """The Java reference cannot run (missing JDK or jars, compile error, JVM failure)."""


def _tool(name: str) -> str:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / name).exists():
        return str(Path(home) / "bin" / name)
    found = shutil.which(name)
    if not found:
        raise JavaRefError(
            f"`{name}` not found (no JAVA_HOME/bin/{name}, none on PATH): the Java reference needs "
            "a JDK 17+ (e.g. `apt-get install openjdk-17-jdk-headless`); then run `make setup`"
        )
    return found


def _jars() -> list[Path]:
    jars = sorted(JARS_DIR.glob("*.jar")) if JARS_DIR.is_dir() else []
    names = {j.name for j in jars}
    missing = [
        what
        for what, prefix in (
            ("kafka-clients", "kafka-clients-"),
            ("jackson-databind", "jackson-databind-"),
            ("jackson-core", "jackson-core-"),
        )
        if not any(n.startswith(prefix) for n in names)
    ]
    if missing:
        raise JavaRefError(
            f"missing {', '.join(missing)} jar(s) in {JARS_DIR}: run `make setup` (resolves the "
            "pinned Kafka jars with Maven from conf/maven/pom.xml)"
        )
    return jars


def kafka_clients_version() -> str:
    for jar in _jars():
        if jar.name.startswith("kafka-clients-"):
            return jar.name[len("kafka-clients-") : -len(".jar")]
    return "?"


def classpath() -> str:
    return os.pathsep.join([str(CLASSES_DIR), str(JARS_DIR / "*")])


def _fingerprint(jars: Sequence[Path]) -> str:
    h = hashlib.sha256(SOURCE.read_bytes())
    for jar in jars:
        h.update(jar.name.encode())
    return h.hexdigest()


def ensure_built() -> str:
    """Compile the runner if needed; return the ``java`` executable to run it with."""
    java = _tool("java")
    jars = _jars()
    want = _fingerprint(jars)
    if (STAMP.exists() and STAMP.read_text().strip() == want
            and (CLASSES_DIR / f"{MAIN_CLASS}.class").exists()):
        return java
    javac = _tool("javac")
    BUILD_DIR.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="classes.", dir=BUILD_DIR))
    proc = subprocess.run(
        [javac, "-nowarn", "-encoding", "UTF-8", "-cp", str(JARS_DIR / "*"),
         "-d", str(tmp), str(SOURCE)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise JavaRefError(f"javac failed on {SOURCE}:\n{proc.stderr[-4000:]}")
    # swap in atomically enough for concurrent test workers: rename the fresh dir over the old one
    old = BUILD_DIR / f"old.{os.getpid()}"
    if CLASSES_DIR.exists():
        CLASSES_DIR.rename(old)
    tmp.rename(CLASSES_DIR)
    shutil.rmtree(old, ignore_errors=True)
    STAMP.write_text(want + "\n")
    return java

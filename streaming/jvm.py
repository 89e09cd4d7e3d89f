"""JVM artifacts: resolve them once from Maven Central into the jar cache, then run offline.

The cache is ``.cache/jars`` in a checkout, ``~/.cache/kafka-rebalancer/jars`` when installed from
the wheel (``REBALANCER_CACHE`` / ``REBALANCER_HOME`` move it: see streaming/paths.py).
``conf/maven/pom.xml`` (package data when installed) pins every version. ``resolve()`` runs Maven
only when the poms changed since the last successful resolve (a stamp holds their hash), so the
second start costs nothing.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import subprocess
from functools import cache
from pathlib import Path

from streaming.errors import SetupError
from streaming.paths import CACHE_DIR, CONF_DIR, JARS_DIR, LOG_DIR

log = logging.getLogger(__name__)

MAVEN_DIR = CONF_DIR / "maven"
STAMP = JARS_DIR / ".resolved"
MIN_JAVA = 17


def _poms_hash() -> str:
    h = hashlib.sha256()
    for pom in sorted(MAVEN_DIR.rglob("*.xml")):
        h.update(pom.relative_to(MAVEN_DIR).as_posix().encode())
        h.update(pom.read_bytes())
    return h.hexdigest()


def java_executable() -> str:
    """``java`` from ``JAVA_HOME`` or ``PATH``, checked to be Java 17 or newer."""
    home = os.environ.get("JAVA_HOME")
    in_home = Path(home) / "bin" / "java" if home else None
    java = str(in_home) if in_home and in_home.exists() else shutil.which("java")
    if not java:
        raise SetupError(
            f"Java {MIN_JAVA}+ not found (no JAVA_HOME, no java on PATH): install a JDK, "
            "e.g. `apt-get install openjdk-17-jdk-headless`"
        )
    _check_java_version(java)
    return java


@cache
def _check_java_version(java: str) -> None:
    out = subprocess.run([java, "-version"], capture_output=True, text=True, check=False).stderr
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    if not m:
        raise SetupError(f"could not read the version of {java}: {out.strip()[:200]}")
    major = int(m.group(1)) if m.group(1) != "1" else int(m.group(2) or 0)
    if major < MIN_JAVA:
        raise SetupError(
            f"{java} is Java {major}; Kafka 4 and Spark 4 need Java {MIN_JAVA} or newer")


def is_resolved() -> bool:
    return STAMP.exists() and STAMP.read_text().strip() == _poms_hash()


def resolve(force: bool = False) -> None:
    """Copy the pinned JVM artifacts into ``<jar cache>/{spark,kafka,zoo}`` with Maven, once."""
    if not force and is_resolved():
        log.debug("JVM artifacts already resolved in %s", JARS_DIR)
        return
    java_executable()
    mvn = shutil.which("mvn")
    if not mvn:
        raise SetupError("Maven (mvn) not found on PATH: install it, e.g. `apt-get install maven`")
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    log_file = LOG_DIR / "maven-resolve.log"
    for sub in ("spark", "kafka", "zoo"):
        shutil.rmtree(JARS_DIR / sub, ignore_errors=True)
    cmd = [
        mvn, "-B", "-s", str(MAVEN_DIR / "settings.xml"), "-f", str(MAVEN_DIR / "pom.xml"),
        # jars.dir: the pom's default is the checkout's .cache/jars; the cache may be elsewhere
        f"-Dmaven.repo.local={CACHE_DIR / 'm2'}", f"-Djars.dir={JARS_DIR}",
        "dependency:copy-dependencies",
    ]
    print(f"Resolving JVM artifacts from Maven Central into {JARS_DIR} (first run only) ...",
          flush=True)
    with open(log_file, "w") as out:
        rc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, check=False).returncode
    if rc != 0:
        text = log_file.read_text(errors="replace")
        if re.search(r"Unknown host|Connection refused|transfer failed|timed out|"
                     r"Network is unreachable", text):
            raise SetupError("could not reach Maven Central to resolve the JVM artifacts",
                             str(log_file))
        missing = re.search(r"Could not find artifact (\S+)", text)
        if missing:
            raise SetupError(f"Maven Central has no artifact {missing.group(1)}", str(log_file))
        raise SetupError(f"Maven failed (exit {rc}) resolving the JVM artifacts", str(log_file))
    STAMP.write_text(_poms_hash() + "\n")


def _require(sub: str) -> Path:
    folder = JARS_DIR / sub
    if not is_resolved() or not any(folder.glob("*.jar")):
        raise SetupError(f"JVM artifacts are not resolved ({folder} is empty): "
                         "run `rebalancer setup` or `make setup`")
    return folder


def spark_jars() -> list[str]:
    """The Kafka-source and Delta jars for ``spark.jars``, minus those pyspark already ships.

    Duplicates of Spark's own jars (jackson, hadoop, parquet, scala, slf4j) in other versions cause
    NoSuchMethodErrors, so any artifact whose name pyspark's ``jars/`` holds is left out.
    """
    import pyspark

    shipped = {_artifact(p.name) for p in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    return sorted(str(p) for p in _require("spark").glob("*.jar")
                  if _artifact(p.name) not in shipped)


def kafka_classpath() -> str:
    """Classpath of the Apache Kafka broker (and its kafka-clients), for ``java -cp``."""
    return str(_require("kafka") / "*")


def zoo_classpath() -> str:
    """Classpath of the zoo's Kafka Streams application and Connect worker
    (tests/integration/zoo.py): their own directory, so Connect's Jetty and Jersey never reach the
    broker's classpath."""
    return str(_require("zoo") / "*")


def _artifact(jar_name: str) -> str:
    """``jackson-core-2.21.2.jar`` -> ``jackson-core``."""
    return re.sub(r"-\d[\w.\-]*\.jar$", "", jar_name)

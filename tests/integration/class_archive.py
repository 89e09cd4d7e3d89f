"""A class-data-sharing archive of the Spark driver's JVM, made once and mapped by every
``spark-submit`` JVM the tests start (the suite's own session and each ``rebalancer run`` child
process).

A Spark driver loads and verifies some ten thousand classes at every start (Spark, Delta, the Kafka
source, Arrow), which costs seconds of CPU on each of the suite's many job starts. Java's dynamic
CDS (JDK 13+) keeps them, parsed and verified, in a file the next JVM maps: one short job run with
``-XX:ArchiveClassesAtExit`` writes it, later ones start with ``-XX:SharedArchiveFile`` (measured on
this machine, a job's start to its query: 44 s -> 29 s). Behaviour is the same: the classes are the
same bytes. A JVM whose class path or Java differs from the archive's ignores it and starts as
before (the warning it would print is off), so a stale archive costs only time; the file's name
carries a hash of what it depends on, so a change of Java or jars makes a new one. The archive lives
in ``.cache/cds`` (git-ignored) and is written atomically.
"""

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
import time
import uuid
from pathlib import Path

from streaming import jvm
from streaming.config import Config
from streaming.dev.produce import produce
from streaming.paths import CACHE_DIR

from .jobrun import bad_records, cli_args, membership_phase
from .machine_lock import machine_lock

log = logging.getLogger(__name__)

QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"
"""A JVM that cannot use the archive says so on standard output (where tools' tables are read): not
here."""


def options(archive: Path) -> str:
    """``SPARK_SUBMIT_OPTS`` that map ``archive``."""
    return f"-XX:SharedArchiveFile={archive} {QUIET}"


def ensure(cfg: Config, work: Path) -> Path | None:
    """The archive for this Java and these jars, made now (one short job run on ``cfg``'s cluster)
    when missing; None when it could not be made (the suite then runs without it, only slower)."""
    archive = CACHE_DIR / "cds" / f"spark-{_key()}.jsa"
    # the other test worker waits for it rather than making its own
    with machine_lock("class-archive"):
        return archive if archive.exists() else _make(cfg, work, archive)


def _make(cfg: Config, work: Path, archive: Path) -> Path | None:
    archive.parent.mkdir(parents=True, exist_ok=True)
    partial = archive.with_name(f"{archive.name}.{uuid.uuid4().hex[:8]}.partial")
    try:
        _record(cfg, work, partial)
        if partial.exists() and partial.stat().st_size > 0:
            os.replace(partial, archive)
            return archive
        log.warning("no class archive was written (%s): the tests run without one", partial)
    except (subprocess.SubprocessError, OSError) as e:
        log.warning("making the class archive failed (%s): the tests run without one", e)
    finally:
        partial.unlink(missing_ok=True)
    return None


def _record(cfg: Config, work: Path, into: Path) -> None:
    """One ``run --available-now`` over a few groups' events and malformed records (so a batch runs
    the stateful step and both sinks), its JVM writing the classes it loaded into ``into`` at
    exit."""
    from .test_job import job_config

    jc = job_config(cfg, f"cds{uuid.uuid4().hex[:6]}")
    groups = ["a0", "a1"]
    produce(jc, membership_phase(groups, 0) + membership_phase(groups, 1), bad_records(1, 2))
    args = cli_args(jc, available_now=True, checkpoint=str(work / "checkpoint"))
    env = {**os.environ, "SPARK_SUBMIT_OPTS": f"-XX:ArchiveClassesAtExit={into} {QUIET}"}
    with open(work / "record.log", "w") as out:
        subprocess.run(args, stdout=out, stderr=subprocess.STDOUT, env=env, timeout=600, check=True)
    _wait_gone(str(into), 120)


def _wait_gone(marker: str, timeout_s: float) -> None:
    """Until no process's command line names ``marker``: the driver's JVM outlives the Python
    process that started it by the seconds it takes to write the archive."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not any(marker in _cmdline(p) for p in Path("/proc").iterdir() if p.name.isdigit()):
            return
        time.sleep(0.5)
    raise OSError(f"the JVM writing {marker} did not exit within {timeout_s:.0f}s")


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().decode(errors="replace")
    except OSError:  # gone meanwhile
        return ""


def _key() -> str:
    """What the archive depends on: the Java runtime, the JVM options every test JVM gets, and the
    jars on the driver's class path and beside it."""
    import pyspark

    h = hashlib.sha256()
    java = jvm.java_executable()
    h.update(subprocess.run([java, "-version"], capture_output=True, text=True,
                            check=False).stderr.encode())
    h.update(os.environ.get("JDK_JAVA_OPTIONS", "").encode())
    for folder in (Path(pyspark.__file__).parent / "jars", jvm.JARS_DIR):
        for jar in sorted(folder.rglob("*.jar")):
            h.update(f"{jar.relative_to(folder)}:{jar.stat().st_size}".encode())
    return h.hexdigest()[:16]

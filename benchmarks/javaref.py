"""Kafka's own Java assignors as a reference: run ``kafka-clients`` on the project's scenario format.

``benchmarks/java/KafkaAssignorRunner.java`` is compiled once into ``.cache/javaref/`` (again whenever the
source or the jar set changes) against the jars ``make setup`` resolved into ``.cache/jars/kafka/``. Then::

    from benchmarks import javaref
    results = javaref.run_cases("sticky", scenarios)      # one JVM for the whole list
    results[0]["assignment"]                               # {member: [(topic, p), ...]} in Kafka's order

Scenarios use the conformance schema (``tests/data/conformance/assignor-scenarios.json``, element 0).

As a script::

    .venv/bin/python -m benchmarks.javaref --check              # conformance scenarios vs Java, print diffs
    .venv/bin/python -m benchmarks.javaref --write-overrides    # ... and write tests/data/java_overrides.json

``tests/data/java_overrides.json`` lists every conformance scenario (per assignor) whose ``expected`` value
disagrees with Kafka 4.3.1 on the same input, with Java's answer; the conformance test compares with Java's
answer for those.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "benchmarks" / "java" / "KafkaAssignorRunner.java"
JARS_DIR = ROOT / ".cache" / "jars" / "kafka"
BUILD_DIR = ROOT / ".cache" / "javaref"
CLASSES_DIR = BUILD_DIR / "classes"
STAMP = BUILD_DIR / "build.stamp"
MAIN_CLASS = "KafkaAssignorRunner"
CONFORMANCE = ROOT / "tests" / "data" / "conformance" / "assignor-scenarios.json"
OVERRIDES = ROOT / "tests" / "data" / "java_overrides.json"

JAVA_ASSIGNORS = ("range", "roundrobin", "sticky", "cooperative-sticky")
KAFKA_VERSION = "4.3.1"
# Kafka logs through slf4j -> log4j2; without a config log4j2 prints ERROR lines to stdout. Silence it.
JVM_FLAGS = ("-Dlog4j2.level=OFF", "-Dorg.apache.logging.log4j.level=OFF", "-Xss4m")


class JavaRefError(RuntimeError):
    """The Java reference cannot run (missing JDK or jars, compile error, JVM failure)."""


# -- build ------------------------------------------------------------------------------------------------


def _tool(name: str) -> str:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / name).exists():
        return str(Path(home) / "bin" / name)
    found = shutil.which(name)
    if not found:
        raise JavaRefError(
            f"`{name}` not found (no JAVA_HOME/bin/{name}, none on PATH): the Java reference needs a JDK 17+ "
            "(e.g. `apt-get install openjdk-17-jdk-headless`); then run `make setup`"
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
            f"missing {', '.join(missing)} jar(s) in {JARS_DIR}: run `make setup` (resolves the pinned "
            "Kafka jars with Maven from conf/maven/pom.xml)"
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
    if STAMP.exists() and STAMP.read_text().strip() == want and (CLASSES_DIR / f"{MAIN_CLASS}.class").exists():
        return java
    javac = _tool("javac")
    BUILD_DIR.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="classes.", dir=BUILD_DIR))
    proc = subprocess.run(
        [javac, "-nowarn", "-encoding", "UTF-8", "-cp", str(JARS_DIR / "*"), "-d", str(tmp), str(SOURCE)],
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


def _run_java(args: Sequence[str], timeout: float, heap: str | None = None) -> subprocess.CompletedProcess:
    java = ensure_built()
    cmd = [java, *JVM_FLAGS, *([f"-Xmx{heap}"] if heap else []), "-cp", classpath(), MAIN_CLASS, *args]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as e:
        raise JavaRefError(f"Java reference timed out after {timeout:.0f}s: {' '.join(args)}") from e
    if proc.returncode != 0:
        raise JavaRefError(f"Java reference failed (exit {proc.returncode}): {' '.join(args)}\n{proc.stderr[-4000:]}")
    return proc


# -- cases ------------------------------------------------------------------------------------------------


def _jsonable(scenario: Mapping[str, Any]) -> dict[str, Any]:
    keep = ("name", "topics", "replica_racks", "members", "prefer_rack_aware_logic", "java_map")
    out = {k: scenario[k] for k in keep if k in scenario}
    out["members"] = [
        {
            "id": m["id"],
            "instance_id": m.get("instance_id"),
            "rack": m.get("rack"),
            "topics": list(m["topics"]),
            "owned": [[t, p] for t, p in (m.get("owned") or [])],
            "generation": m.get("generation"),
        }
        for m in scenario["members"]
    ]
    return out


def run_cases(
    assignor: str, scenarios: Iterable[Mapping[str, Any]], *, map_kind: str = "hash", timeout: float = 300.0
) -> list[dict[str, Any]]:
    """Run Kafka's ``assignor`` on every scenario in one JVM; one result dict per scenario, in order.

    Each result has ``assignment`` ({member: [(topic, partition), ...]} in Java's list order, every member
    present), ``member_order`` (Java's iteration order of the subscriptions map), ``transferring``
    ({"topic-p": member} for the sticky family, else None), ``time_ns`` and ``error`` (None or the Java
    exception as text; then ``assignment`` is absent).
    """
    if assignor not in JAVA_ASSIGNORS:
        raise ValueError(f"kafka-clients has no assignor {assignor!r}; it has {', '.join(JAVA_ASSIGNORS)}")
    cases = [_jsonable(s) for s in scenarios]
    BUILD_DIR.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="run.", dir=BUILD_DIR) as tmp:
        src, dst = Path(tmp) / "cases.json", Path(tmp) / "results.json"
        src.write_text(json.dumps(cases))
        _run_java(["cases", "--assignor", assignor, "--in", str(src), "--out", str(dst), "--map", map_kind], timeout)
        results = json.loads(dst.read_text())
    for r in results:
        if r.get("assignment") is not None:
            r["assignment"] = {m: [(t, p) for t, p in tps] for m, tps in r["assignment"].items()}
    return results


def assignments(assignor: str, scenarios: Iterable[Mapping[str, Any]]) -> list[dict[str, list[tuple[str, int]]]]:
    """Just the assignments (raises :class:`JavaRefError` if Java threw on any scenario)."""
    out = []
    for r in run_cases(assignor, scenarios):
        if r["error"]:
            raise JavaRefError(f"{assignor} on {r.get('name')!r}: {r['error']}")
        out.append(r["assignment"])
    return out


def run_timing(
    assignor: str,
    *,
    topics: int,
    partitions: int,
    consumers: int,
    subscription: str,
    rounds: int = 1,
    warmup: int = 1,
    warmup_topics: int | None = None,
    repeat: int = 1,
    heap: str | None = None,
    timeout: float = 900.0,
) -> dict[str, Any]:
    """Time Kafka's ``assignor`` on a group generated in Java (see the runner's ``timing`` mode).

    With ``repeat`` > 1 the measured rounds run that many times in the one JVM: ``repeat_ns`` (all rounds)
    and ``repeat_round_ns`` (per round) list every repetition, the first one cold when ``warmup`` is 0."""
    proc = _run_java(
        [
            "timing",
            "--assignor",
            assignor,
            "--topics",
            str(topics),
            "--partitions",
            str(partitions),
            "--consumers",
            str(consumers),
            "--subscription",
            subscription,
            "--rounds",
            str(rounds),
            "--warmup",
            str(warmup),
            *(["--warmup-topics", str(warmup_topics)] if warmup_topics else []),
            "--repeat",
            str(repeat),
        ],
        timeout,
        heap,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        raise JavaRefError(f"no result from the Java timing run:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return json.loads(lines[-1])


# -- scenario helpers shared with the tests -----------------------------------------------------------------


def to_snapshot(scenario: Mapping[str, Any]):
    """The :class:`assignors.model.GroupSnapshot` of a scenario dict (conformance schema)."""
    from assignors.model import GroupSnapshot, Member

    racks = scenario.get("replica_racks")
    lags = scenario.get("lags") or {}
    return GroupSnapshot(
        topics=dict(scenario["topics"]),
        members=tuple(
            Member(
                member_id=m["id"],
                topics=tuple(m["topics"]),
                instance_id=m.get("instance_id"),
                rack=m.get("rack"),
                owned=tuple((t, int(p)) for t, p in (m.get("owned") or [])),
                generation=m.get("generation"),
            )
            for m in scenario["members"]
        ),
        replica_racks=None if racks is None else {t: tuple(tuple(r) for r in per) for t, per in racks.items()},
        lag={t: tuple(v) for t, v in lags.items()},
    )


def same_assignment(a: Mapping[str, Sequence], b: Mapping[str, Sequence], *, ordered: bool = False) -> bool:
    """Equal per member (members with no partitions may be absent on either side)."""
    members = {m for m, v in a.items() if v} | {m for m, v in b.items() if v}
    norm = (lambda v: [tuple(x) for x in v]) if ordered else (lambda v: sorted(tuple(x) for x in v))
    return all(norm(a.get(m, [])) == norm(b.get(m, [])) for m in members)


def rack_mismatches(scenario: Mapping[str, Any], assignment: Mapping[str, Sequence]) -> int:
    """Assigned partitions whose member has a rack that holds none of the partition's replicas."""
    racks = scenario.get("replica_racks")
    rack_of = {m["id"]: m.get("rack") for m in scenario["members"]}
    n = 0
    for member, tps in assignment.items():
        rack = rack_of.get(member)
        if not rack:
            continue
        for t, p in tps:
            replica = set() if racks is None or t not in racks else {r for r in racks[t][p] if r is not None}
            if rack not in replica:
                n += 1
    return n


# -- conformance scenarios vs Java ------------------------------------------------------------


def _load_conformance(path: Path) -> list[dict[str, Any]]:
    data = json.loads(path.read_text())
    return [s for s in data if not s.get("_schema")]


def check_conformance(path: Path = CONFORMANCE) -> tuple[list[dict[str, Any]], int]:
    """Run every conformance scenario of a Java assignor through Java 4.3.x.

    Returns (disagreements, scenarios checked). A disagreement names the scenario and assignor, what the
    file expects and what Java gives (assignment, transferring, properties, member iteration order).
    """
    scenarios = _load_conformance(path)
    disagreements: list[dict[str, Any]] = []
    checked = 0
    for assignor in JAVA_ASSIGNORS:
        mine = [s for s in scenarios if assignor in s.get("assignors", [])]
        if not mine:
            continue
        results = run_cases(assignor, mine)
        for s, r in zip(mine, results, strict=True):
            checked += 1
            problems = []
            if r["error"]:
                problems.append(f"Java threw {r['error']}")
            else:
                java = r["assignment"]
                ordered = bool(s.get("order_significant"))
                # `expected` may name only the members the test asserts on
                # (testNoReassignmentOnCurrentMembers)
                expected = s.get("expected")
                if expected is not None and not same_assignment(
                    expected, {m: java.get(m, []) for m in expected}, ordered=ordered
                ):
                    problems.append("assignment" + (" (list order significant)" if ordered else ""))
                exp_t = s.get("expected_transferring")
                if (
                    exp_t is not None
                    and assignor in ("sticky", "cooperative-sticky")
                    and exp_t != (r["transferring"] or {})
                ):
                    problems.append("expected_transferring")
                for prop in s.get("properties") or []:
                    if prop == "fully_balanced":
                        sizes = [len(v) for v in java.values()]
                        if sizes and max(sizes) - min(sizes) > 1:
                            problems.append("fully_balanced")
                    elif prop.startswith("rack_mismatches="):
                        want = int(prop.split("=", 1)[1])
                        got = rack_mismatches(s, java)
                        if got != want:
                            problems.append(f"rack_mismatches: file {want}, Java {got}")
                order = s.get("java_member_iteration_order")
                if order and assignor in ("sticky", "cooperative-sticky") and order != r["member_order"]:
                    problems.append(f"java_member_iteration_order: file {order}, Java {r['member_order']}")
            if problems:
                disagreements.append(
                    {
                        "name": s["name"],
                        "assignor": assignor,
                        "problems": problems,
                        "expected": s.get("expected"),
                        "expected_transferring": s.get("expected_transferring"),
                        "java": None if r["error"] else {m: [list(tp) for tp in v] for m, v in r["assignment"].items()},
                        "java_transferring": r.get("transferring"),
                        "java_member_order": r.get("member_order"),
                        "java_error": r["error"],
                    }
                )
    return disagreements, checked


def write_overrides(path: Path = CONFORMANCE, out: Path = OVERRIDES) -> dict[str, Any]:
    disagreements, checked = check_conformance(path)
    doc = {
        "_about": (
            "Conformance scenarios whose `expected` (or expected_transferring / properties / "
            "java_member_iteration_order) disagrees with Kafka's own Java assignor on the same input. "
            "Java is the truth: conformance tests compare these (name, assignor) pairs with `java` "
            "(and `java_transferring`) instead of the file's `expected`. Regenerate with "
            "`.venv/bin/python -m benchmarks.javaref --write-overrides`."
        ),
        "kafka_clients": kafka_clients_version(),
        "conformance_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "scenarios_checked": checked,
        "overrides": disagreements,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1) + "\n")
    return doc


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.javaref", description=__doc__.split("\n\n")[0])
    ap.add_argument("--conformance", type=Path, default=CONFORMANCE, help="scenario file (default: %(default)s)")
    ap.add_argument("--check", action="store_true", help="run the conformance scenarios through Java, print diffs")
    ap.add_argument("--write-overrides", action="store_true", help=f"also write {OVERRIDES.relative_to(ROOT)}")
    ap.add_argument("--out", type=Path, default=OVERRIDES, help="overrides file (default: %(default)s)")
    args = ap.parse_args(argv)
    try:
        if args.write_overrides:
            doc = write_overrides(args.conformance, args.out)
            disagreements, checked = doc["overrides"], doc["scenarios_checked"]
            print(f"wrote {args.out} ({len(disagreements)} override(s))")
        else:
            disagreements, checked = check_conformance(args.conformance)
    except JavaRefError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(
        f"kafka-clients {kafka_clients_version()}: {checked} (scenario, assignor) pairs checked, "
        f"{len(disagreements)} disagree with the file"
    )
    for d in disagreements:
        print(f"- [{d['assignor']}] {d['name']}: {'; '.join(d['problems'])}")
        print(f"    file: {json.dumps(d['expected'])}")
        print(f"    java: {json.dumps(d['java'])}  transferring={json.dumps(d['java_transferring'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

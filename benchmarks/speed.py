"""Speed and memory of our assignors beside Kafka's own Java ones, on the sizes of Kafka's scale tests.

    .venv/bin/python -m benchmarks.speed                 # full sizes (~10-15 min on 2 cores)
    .venv/bin/python -m benchmarks.speed --quick         # small sizes, a minute
    .venv/bin/python -m benchmarks.speed --assignors range,sticky --save

Cases (``AbstractStickyAssignorTest`` in apache/kafka, run there for Sticky and CooperativeSticky):

* ``uniform-1M``: 500 topics x 2000 partitions (1,000,000), 2000 consumers, all subscribed to every topic
  (``testLargeAssignmentAndGroupWithUniformSubscription``, 30 s timeout).
* ``one-single-1M``: the same, but the last consumer subscribes to topic 0 only
  (``testLargeAssignmentAndGroupWithNonEqualSubscription``, 90 s timeout).
* ``split-20k``: 100 topics x 200 partitions, 500 consumers; i % 4 == 0 take the first half of the topics,
  the others the second half (``testAssignmentAndGroupWithNonEqualSubscriptionNotTimeout``, 90 s).
* ``balanced-100k``: ours alone, 100 topics x 1000 partitions, 1000 members on 3 racks, random lags,
  replicas on 2 of 3 racks, owned partitions from a previous round-robin assignment.

Names are Kafka's (``t``/``c`` + zero-padded index). Like Kafka's tests, the sticky family runs two rounds:
a fresh assignment, then every member but member 0 re-joins owning what it got (generation 1); the time
is both rounds together. Each of our runs is a fresh subprocess (so ``ru_maxrss`` is that case's peak
RSS, the interpreter and the input snapshot included; ``base`` is RSS before the assign call); each Java
run is a fresh JVM (benchmarks/javaref.py ``timing`` mode: input generated in Java, one warm-up, then the
assign call alone; peak heap = sum of the heap pools' peaks during it). ``lag`` and ``balanced`` have no
counterpart in kafka-clients: ``lag`` is compared with Java's RangeAssignor on the same input.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "speed.txt"
MIB = 1024 * 1024
GIB = 1024 * MIB


@dataclass(frozen=True)
class Case:
    name: str
    topics: int
    partitions: int
    consumers: int
    subscription: str  # equal | one-single | split  (as KafkaAssignorRunner.topicsFor)
    assignors: tuple[str, ...]
    sticky_limit_s: float | None = None  # Kafka's test timeout for the sticky family


def cases(quick: bool) -> list[Case]:
    if quick:
        return [
            Case(
                "uniform-10k", 50, 200, 200, "equal", ("range", "roundrobin", "lag", "sticky", "cooperative-sticky"), 30
            ),
            Case("one-single-10k", 50, 200, 200, "one-single", ("range", "roundrobin", "sticky"), 90),
            Case("split-2k", 20, 100, 100, "split", ("range", "roundrobin", "lag", "sticky", "cooperative-sticky"), 90),
            Case("balanced-10k", 10, 1000, 100, "equal", ("balanced",)),
        ]
    return [
        Case(
            "uniform-1M", 500, 2000, 2000, "equal", ("range", "roundrobin", "lag", "sticky", "cooperative-sticky"), 30
        ),
        Case(
            "one-single-1M", 500, 2000, 2000, "one-single", ("range", "roundrobin", "sticky", "cooperative-sticky"), 90
        ),
        Case("split-20k", 100, 200, 500, "split", ("range", "roundrobin", "lag", "sticky", "cooperative-sticky"), 90),
        Case("balanced-100k", 100, 1000, 1000, "equal", ("balanced",)),
    ]


STICKY = ("sticky", "cooperative-sticky")
JAVA = ("range", "roundrobin", "sticky", "cooperative-sticky")


def canonical(prefix: str, i: int, count: int) -> str:
    """``t007`` / ``c0042``: as KafkaAssignorRunner.canonicalName (digits of count - 1)."""
    return f"{prefix}{i:0{len(str(max(count - 1, 0)))}d}"


def topics_for(pattern: str, i: int, consumers: int, topics: tuple[str, ...]) -> tuple[str, ...]:
    n = len(topics)
    if pattern == "equal":
        return topics
    if pattern == "one-single":
        return topics[:1] if i == consumers - 1 else topics
    if pattern == "split":
        return topics[: n // 2] if i % 4 == 0 else topics[n // 2 :]
    raise ValueError(f"unknown subscription pattern {pattern!r}")


# -- our side, in a child process -------------------------------------------------------------------------


def _rss() -> int:
    """Current RSS in bytes (Linux), else the peak so far."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _snapshot(spec: dict[str, Any], owned: dict | None = None):
    import numpy as np

    from assignors.model import GroupSnapshot, Member

    t, p, c = spec["topics"], spec["partitions"], spec["consumers"]
    names = tuple(canonical("t", i, t) for i in range(t))
    ids = [canonical("c", i, c) for i in range(c)]
    kwargs: dict[str, Any] = {}
    racks = ("a", "b", "c")
    if spec["assignor"] in ("lag", "balanced"):
        rng = np.random.default_rng(42)
        lags = rng.pareto(1.5, size=(t, p)) * 1000
        kwargs["lag"] = {n: lags[k].astype(np.int64).tolist() for k, n in enumerate(names)}
    if spec["assignor"] == "balanced":
        rng = np.random.default_rng(7)
        first = rng.integers(0, 3, size=(t, p))
        kwargs["replica_racks"] = {
            n: [(racks[f], racks[(f + 1) % 3]) for f in first[k].tolist()] for k, n in enumerate(names)
        }
        # previous round-robin assignment over all partitions in topic order
        owned = {m: [] for m in ids}
        k = 0
        for n in names:
            for q in range(p):
                owned[ids[k % c]].append((n, q))
                k += 1
    members = []
    for i, m in enumerate(ids):
        mine = owned.get(m, ()) if owned else ()
        members.append(
            Member(
                member_id=m,
                topics=topics_for(spec["subscription"], i, c, names),
                rack=racks[i % 3] if spec["assignor"] == "balanced" else None,
                owned=tuple(mine),
                generation=1 if mine else None,
            )
        )
    return GroupSnapshot(topics=dict.fromkeys(names, p), members=tuple(members), **kwargs)


def child(spec: dict[str, Any]) -> dict[str, Any]:
    from assignors import registry

    fn = registry.get(spec["assignor"])
    snap = _snapshot(spec)
    base = _rss()
    rounds = []
    t0 = time.perf_counter()
    result = fn(snap)
    rounds.append(time.perf_counter() - t0)
    if spec["rounds"] > 1:
        ids = [m.member_id for m in snap.members]
        owned = {m: result.get(m, []) for m in ids[1:]}  # member 0 re-joins without owned partitions
        del result
        snap = _snapshot(spec, owned)
        del owned
        t0 = time.perf_counter()
        result = fn(snap)
        rounds.append(time.perf_counter() - t0)
    assigned = sum(len(v) for v in result.values())
    return {
        "rounds_s": rounds,
        "time_s": sum(rounds),
        "assigned": assigned,
        "base_rss": base,
        "peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }


def run_ours(case: Case, assignor: str, timeout: float) -> dict[str, Any]:
    spec = {
        "assignor": assignor,
        "topics": case.topics,
        "partitions": case.partitions,
        "consumers": case.consumers,
        "subscription": case.subscription,
        "rounds": 2 if assignor in STICKY else 1,
    }
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "benchmarks.speed", "--child", json.dumps(spec)],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=ROOT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timeout {timeout:.0f}s"}
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1][:120]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_java(case: Case, assignor: str, timeout: float) -> dict[str, Any]:
    from benchmarks import javaref

    rounds = 2 if assignor in STICKY else 1
    # JIT warm-up on the full input for the cheap assignors; on 1/10 of the topics for the sticky family
    warmup_topics = case.topics if assignor not in STICKY else max(1, case.topics // 10)
    # small inputs: a few more warm-ups so the JIT has compiled the hot loops before the measured call
    warmup = 5 if case.topics * case.partitions < 100_000 else (2 if assignor not in STICKY else 1)
    try:
        r = javaref.run_timing(
            assignor,
            topics=case.topics,
            partitions=case.partitions,
            consumers=case.consumers,
            subscription=case.subscription,
            rounds=rounds,
            warmup=warmup,
            timeout=timeout,
            warmup_topics=warmup_topics,
        )
    except javaref.JavaRefError as e:
        return {"error": str(e).splitlines()[0][:120]}
    return {
        "time_s": r["time_ns"] / 1e9,
        "rounds_s": [x / 1e9 for x in r["round_ns"]],
        "peak_heap": r["peak_heap_bytes"],
        "gc_ms": r["gc_ms"],
    }


# -- table ------------------------------------------------------------------------------------------------

HEADER = (
    f"{'assignor':<19}{'case':<16}{'ours s':>9}{'ours RSS':>10}{'(base)':>8}{'Java s':>9}{'Java heap':>11}"
    f"{'ratio':>7}  target"
)


def _mib(b: float | None) -> str:
    return "-" if b is None else f"{b / MIB:.0f}M"


def verdict(case: Case, assignor: str, ours: dict, java: dict | None, yardstick: dict | None) -> str:
    if "error" in ours:
        return f"ours: {ours['error']}"
    t = ours["time_s"]
    big = case.topics * case.partitions >= 1_000_000
    if assignor in ("range", "roundrobin"):
        if not java or "error" in java:
            return "no Java figure"
        ok = t <= 2 * java["time_s"] and (not big or ours["peak_rss"] < 2 * GIB)
        return f"<=2x Java{', <2GiB' if big else ''}: {'OK' if ok else 'MISSED'}"
    if assignor in STICKY:
        limit = case.sticky_limit_s or 90
        return f"<={limit:.0f}s (Kafka test timeout): {'OK' if t <= limit else 'MISSED'}"
    if assignor == "lag":
        if yardstick and "time_s" in yardstick:
            return f"{t / yardstick['time_s']:.1f}x Java range (yardstick, no target)"
        return "no Java range yardstick"
    if assignor == "balanced":
        limit = 5.0
        return f"<{limit:.0f}s: {'OK' if t < limit else 'MISSED'}"
    return ""


def row(case: Case, assignor: str, ours: dict, java: dict | None, yardstick: dict | None) -> str:
    o_t = f"{ours['time_s']:.2f}" if "time_s" in ours else "ERR"
    j = java if java is not None else yardstick
    j_t = f"{j['time_s']:.2f}" if j and "time_s" in j else ("ERR" if j else "-")
    j_label = "" if java is not None or j is None else "*"
    ratio = f"{ours['time_s'] / j['time_s']:.2f}" if "time_s" in ours and j and "time_s" in j and j["time_s"] else "-"
    return (
        f"{assignor:<19}{case.name:<16}{o_t:>9}{_mib(ours.get('peak_rss')):>10}{_mib(ours.get('base_rss')):>8}"
        f"{j_t + j_label:>9}{_mib(j.get('peak_heap') if j else None):>11}{ratio:>7}  "
        f"{verdict(case, assignor, ours, java, yardstick)}"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.speed", description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (a minute)")
    ap.add_argument(
        "--assignors", help="comma-separated subset (range,roundrobin,lag,sticky,cooperative-sticky,balanced)"
    )
    ap.add_argument("--cases", help="comma-separated subset of case names")
    ap.add_argument("--no-java", action="store_true", help="ours only")
    ap.add_argument("--timeout", type=float, default=240.0, help="per run, seconds (default %(default)s)")
    ap.add_argument("--save", action="store_true", help=f"also write {RESULTS.relative_to(ROOT)}")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return 0

    wanted = set(args.assignors.split(",")) if args.assignors else None
    lines: list[str] = []

    def emit(text: str = "") -> None:
        print(text, flush=True)
        lines.append(text)

    from benchmarks import javaref

    java_ok = not args.no_java
    java_note = "Java: off"
    if java_ok:
        try:
            javaref.ensure_built()
            java_note = f"Java: kafka-clients {javaref.kafka_clients_version()} on {_java_version()}"
        except javaref.JavaRefError as e:
            java_ok = False
            java_note = f"Java: unavailable ({e})"
    started = time.time()
    emit(
        f"# benchmarks.speed {'--quick ' if args.quick else ''}{time.strftime('%Y-%m-%d %H:%M:%S')} on "
        f"{platform.node()} ({os.cpu_count()} cores, load {_load()}, Python {platform.python_version()}); {java_note}"
    )
    emit(
        "# ours s / Java s: assign call only (sticky family: both rounds); ours RSS: peak RSS of the child process "
        "(base: RSS before assign); Java heap: peak heap during assign; ratio: ours / Java "
        "(* = Java RangeAssignor on the same input as yardstick)"
    )
    emit(HEADER)
    for case in cases(args.quick):
        if args.cases and case.name not in args.cases.split(","):
            continue
        range_java: dict | None = None
        for assignor in case.assignors:
            if wanted and assignor not in wanted and not (assignor == "range" and "lag" in wanted):
                continue
            java = run_java(case, assignor, args.timeout) if java_ok and assignor in JAVA else None
            if assignor == "range":
                range_java = java
                if wanted and "range" not in wanted:
                    continue
            if assignor == "lag" and range_java is None and java_ok:
                range_java = run_java(case, "range", args.timeout)
            ours = run_ours(case, assignor, args.timeout)
            emit(row(case, assignor, ours, java, range_java if assignor == "lag" else None))
    emit(
        f"# total wall time {time.time() - started:.0f}s; load average at the end {_load()} (a shared machine: "
        "figures move with it)"
    )
    if args.save:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text("\n".join(lines) + "\n")
        print(f"saved {RESULTS.relative_to(ROOT)}")
    return 0


def _load() -> str:
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "?"


def _java_version() -> str:
    from benchmarks import javaref

    try:
        out = subprocess.run([javaref._tool("java"), "-version"], capture_output=True, text=True, check=False).stderr
        return out.splitlines()[0].strip()
    except (OSError, IndexError, javaref.JavaRefError):
        return "java ?"


if __name__ == "__main__":
    sys.exit(main())

"""Speed and memory of our assignors beside Kafka's own Java ones, on the sizes of Kafka's scale tests.

    .venv/bin/python -m benchmarks.speed                 # full sizes (~10-15 min on 2 cores)
    .venv/bin/python -m benchmarks.speed --quick         # small sizes, a minute
    .venv/bin/python -m benchmarks.speed --assignors range,sticky --save
    .venv/bin/python -m benchmarks.speed --assignors sticky,cooperative-sticky --cases uniform-1M,one-single-1M --rounds
    .venv/bin/python -m benchmarks.speed --cases many-topics-r1   # sticky family, round 1 only (#31)

Cases (``AbstractStickyAssignorTest`` in apache/kafka, run there for Sticky and CooperativeSticky):

* ``uniform-1M``: 500 topics x 2000 partitions (1,000,000), 2000 consumers, all subscribed to every topic
  (``testLargeAssignmentAndGroupWithUniformSubscription``, 30 s timeout).
* ``many-topics-r1``: the same group, the sticky family's first round alone (a fresh assignment of many
  topics, where the constrained builder's cost is making a million partitions; round 2 is in ``uniform-1M``).
* ``one-single-1M``: the same, but the last consumer subscribes to topic 0 only
  (``testLargeAssignmentAndGroupWithNonEqualSubscription``, 90 s timeout).
* ``split-20k``: 100 topics x 200 partitions, 500 consumers; i % 4 == 0 take the first half of the topics,
  the others the second half (``testAssignmentAndGroupWithNonEqualSubscriptionNotTimeout``, 90 s).
* ``balanced-100k``: ours alone, 100 topics x 1000 partitions, 1000 members on 3 racks, random lags,
  replicas on 2 of 3 racks, owned partitions from a previous round-robin assignment.

Names are Kafka's (``t``/``c`` + zero-padded index). Like Kafka's tests, the sticky family runs two rounds:
a fresh assignment, then every member but member 0 re-joins owning what it got (generation 1); a time is
both rounds together (``--rounds`` prints each round too).

Each side is timed **cold** and **warm**, JMH-style. Cold: the first assign call in a fresh process (ours:
a fresh Python subprocess, the module imported; Java: a fresh JVM, no warm-up, so mostly interpretation and
JIT compilation). Warm: then ``--warmups`` more calls that are not timed and the median of ``--repeats``
timed calls in the same process, which is what a group leader's long-running JVM does. The headline
ratio is ours (warm) / Java (warm). ``ru_maxrss`` of our subprocess is that case's peak RSS (interpreter
and input snapshot included; ``base`` is RSS before the first assign call); Java's peak heap is the sum of
the heap pools' peaks during the cold call (benchmarks/javaref ``timing`` mode, the group generated in
Java). ``lag`` and ``balanced`` have no counterpart in kafka-clients: ``lag`` is compared with Java's
RangeAssignor on the same input.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS_DIR = ROOT / "benchmarks" / "results"
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
    sticky_rounds: int = 2  # rounds the sticky family runs (1: the fresh assignment only)


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
        Case("many-topics-r1", 500, 2000, 2000, "equal", STICKY, 30, sticky_rounds=1),
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


def _timed_rounds(fn, spec: dict[str, Any], snap) -> list[float]:
    """One timed call per round (round 2: every member but member 0 re-joins owning its round-1 result)."""
    t0 = time.perf_counter()
    result = fn(snap)
    rounds = [time.perf_counter() - t0]
    if spec["rounds"] > 1:
        ids = [m.member_id for m in snap.members]
        owned = {m: result.get(m, []) for m in ids[1:]}  # member 0 re-joins without owned partitions
        del result
        second = _snapshot(spec, owned)
        del owned
        t0 = time.perf_counter()
        result = fn(second)
        rounds.append(time.perf_counter() - t0)
    spec["assigned"] = sum(len(v) for v in result.values())
    return rounds


def child(spec: dict[str, Any]) -> dict[str, Any]:
    from assignors import registry

    fn = registry.get(spec["assignor"])
    snap = _snapshot(spec)
    base = _rss()
    cold = _timed_rounds(fn, spec, snap)
    peak_cold = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    for _ in range(spec.get("warmups", 0)):
        _timed_rounds(fn, spec, snap)
    warm = [_timed_rounds(fn, spec, snap) for _ in range(spec.get("repeats", 0))]
    return {
        "rounds_s": cold,
        "time_s": sum(cold),
        "warm_rounds_s": warm,
        "assigned": spec["assigned"],
        "base_rss": base,
        "peak_rss": peak_cold,
    }


def run_ours(case: Case, assignor: str, timeout: float, warmups: int, repeats: int) -> dict[str, Any]:
    spec = {
        "assignor": assignor,
        "topics": case.topics,
        "partitions": case.partitions,
        "consumers": case.consumers,
        "subscription": case.subscription,
        "rounds": case.sticky_rounds if assignor in STICKY else 1,
        "warmups": warmups,
        "repeats": repeats,
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
    return _with_warm(json.loads(proc.stdout.strip().splitlines()[-1]))


def _with_warm(r: dict[str, Any]) -> dict[str, Any]:
    """Add ``warm_s`` (median of the warm repetitions' totals) and ``warm_round_s`` (per-round medians)."""
    warm = r.get("warm_rounds_s") or []
    if warm:
        r["warm_s"] = statistics.median(sum(x) for x in warm)
        r["warm_round_s"] = [statistics.median(x[i] for x in warm) for i in range(len(warm[0]))]
    return r


def run_java(case: Case, assignor: str, timeout: float, warmups: int, repeats: int) -> dict[str, Any]:
    """One fresh JVM: repetition 1 is the cold call, then ``warmups`` untimed ones, then ``repeats``."""
    from benchmarks import javaref

    rounds = case.sticky_rounds if assignor in STICKY else 1
    try:
        r = javaref.run_timing(
            assignor,
            topics=case.topics,
            partitions=case.partitions,
            consumers=case.consumers,
            subscription=case.subscription,
            rounds=rounds,
            warmup=0,
            repeat=1 + warmups + repeats,
            timeout=timeout,
        )
    except javaref.JavaRefError as e:
        return {"error": str(e).splitlines()[0][:120]}
    per_round = [[x / 1e9 for x in rep] for rep in r["repeat_round_ns"]]
    return _with_warm({
        "time_s": r["time_ns"] / 1e9,
        "rounds_s": per_round[0],
        "warm_rounds_s": per_round[1 + warmups:],
        "peak_heap": r["peak_heap_bytes"],
        "gc_ms": r["gc_ms"],
    })


# -- table ------------------------------------------------------------------------------------------------

HEADER = (
    f"{'assignor':<19}{'case':<15}{'ours cold':>10}{'warm':>7}{'Java cold':>10}{'warm':>7}{'ratio':>7}"
    f"{'ours RSS':>9}{'(base)':>7}{'Java heap':>10}  target"
)


def _mib(b: float | None) -> str:
    return "-" if b is None else f"{b / MIB:.0f}M"


def _secs(x: float) -> str:
    """Seconds: a third decimal below one second, where a first round's figures live."""
    return f"{x:.3f}" if x < 1 else f"{x:.2f}"


def _s(r: dict | None, key: str) -> str:
    if r is None:
        return "-"
    if "error" in r:
        return "ERR"
    return _secs(r[key]) if key in r else "-"


def verdict(case: Case, assignor: str, ours: dict, java: dict | None, yardstick: dict | None) -> str:
    if "error" in ours:
        return f"ours: {ours['error']}"
    t = ours.get("warm_s", ours["time_s"])
    big = case.topics * case.partitions >= 1_000_000
    j = java.get("warm_s", java.get("time_s")) if java and "error" not in java else None
    if assignor in ("range", "roundrobin"):
        if j is None:
            return "no Java figure"
        ok = t <= 2 * j and (not big or ours["peak_rss"] < 2 * GIB)
        return f"<=2x warm Java{', <2GiB' if big else ''}: {'OK' if ok else 'MISSED'}"
    if assignor in STICKY:
        limit = case.sticky_limit_s or 90
        text = f"cold <={limit:.0f}s (Kafka test timeout): {'OK' if ours['time_s'] <= limit else 'MISSED'}"
        if j is not None:
            text = f"<=1.0x warm Java: {'OK' if t <= j else 'MISSED'}; {text}"
        return text
    if assignor == "lag":
        y = yardstick.get("warm_s", yardstick.get("time_s")) if yardstick and "error" not in yardstick else None
        return f"{t / y:.1f}x warm Java range (yardstick, no target)" if y else "no Java range yardstick"
    if assignor == "balanced":
        limit = 5.0
        return f"cold <{limit:.0f}s: {'OK' if ours['time_s'] < limit else 'MISSED'}"
    return ""


def row(case: Case, assignor: str, ours: dict, java: dict | None, yardstick: dict | None) -> str:
    j = java if java is not None else yardstick
    mark = "*" if java is None and j is not None else ""
    o_warm = ours.get("warm_s", ours.get("time_s"))
    j_warm = j.get("warm_s", j.get("time_s")) if j and "error" not in j else None
    ratio = f"{o_warm / j_warm:.2f}" if o_warm is not None and j_warm else "-"
    return (
        f"{assignor:<19}{case.name:<15}{_s(ours, 'time_s'):>10}{_s(ours, 'warm_s'):>7}"
        f"{_s(j, 'time_s') + mark:>10}{_s(j, 'warm_s') + mark:>7}{ratio:>7}"
        f"{_mib(ours.get('peak_rss')):>9}{_mib(ours.get('base_rss')):>7}{_mib(j.get('peak_heap') if j else None):>10}"
        f"  {verdict(case, assignor, ours, java, yardstick)}"
    )


def round_rows(case: Case, assignor: str, ours: dict, java: dict | None) -> list[str]:
    """Per-round figures of a two-round run: cold and warm, ours and Java."""
    out = []
    for i in range(len(ours.get("rounds_s", []))):
        def fig(r: dict | None, key: str, i: int = i) -> str:
            vals = r.get(key) if r and "error" not in r else None
            return _secs(vals[i]) if vals and i < len(vals) else "-"

        o_w = ours.get("warm_round_s", [None] * (i + 1))[i]
        j_w = java.get("warm_round_s", [None] * (i + 1))[i] if java and "error" not in java else None
        ratio = f"{o_w / j_w:.2f}" if o_w is not None and j_w else "-"
        out.append(
            f"{'  round ' + str(i + 1):<19}{case.name:<15}{fig(ours, 'rounds_s'):>10}{fig(ours, 'warm_round_s'):>7}"
            f"{fig(java, 'rounds_s'):>10}{fig(java, 'warm_round_s'):>7}{ratio:>7}"
        )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.speed", description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (a minute)")
    ap.add_argument(
        "--assignors", help="comma-separated subset (range,roundrobin,lag,sticky,cooperative-sticky,balanced)"
    )
    ap.add_argument("--cases", help="comma-separated subset of case names")
    ap.add_argument("--no-java", action="store_true", help="ours only")
    ap.add_argument("--timeout", type=float, default=900.0, help="per run, seconds (default %(default)s)")
    ap.add_argument("--warmups", type=int, default=2, help="untimed calls after the cold one (default %(default)s)")
    ap.add_argument("--repeats", type=int, default=3, help="timed warm calls, median reported (default %(default)s)")
    ap.add_argument("--rounds", action="store_true", help="also print each round of the sticky family")
    ap.add_argument("--save", action="store_true", help="also write benchmarks/results/speed-<date>.txt")
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
        "# seconds of the assign call only (sticky family: both rounds; many-topics-r1: round 1 alone). "
        "cold: first call in a fresh process/JVM; "
        f"warm: median of {args.repeats} calls after {args.warmups} more untimed ones in that process/JVM; "
        "ratio: ours warm / Java warm (the headline); ours RSS: peak RSS of our process by the end of the cold "
        "call (base: before it); Java heap: peak heap during the cold call (* = Java RangeAssignor on the same "
        "input as yardstick)"
    )
    emit(HEADER)
    for case in cases(args.quick):
        if args.cases and case.name not in args.cases.split(","):
            continue
        range_java: dict | None = None
        for assignor in case.assignors:
            if wanted and assignor not in wanted and not (assignor == "range" and "lag" in wanted):
                continue
            java = (run_java(case, assignor, args.timeout, args.warmups, args.repeats)
                    if java_ok and assignor in JAVA else None)
            if assignor == "range":
                range_java = java
                if wanted and "range" not in wanted:
                    continue
            if assignor == "lag" and range_java is None and java_ok:
                range_java = run_java(case, "range", args.timeout, args.warmups, args.repeats)
            ours = run_ours(case, assignor, args.timeout, args.warmups, args.repeats)
            emit(row(case, assignor, ours, java, range_java if assignor == "lag" else None))
            if args.rounds and assignor in STICKY and "error" not in ours:
                for line in round_rows(case, assignor, ours, java):
                    emit(line)
    emit(
        f"# total wall time {time.time() - started:.0f}s; load average at the end {_load()} (a shared machine: "
        "figures move with it)"
    )
    if args.save:
        out = RESULTS_DIR / f"speed-{time.strftime('%Y-%m-%d')}.txt"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("\n".join(lines) + "\n")
        print(f"saved {out.relative_to(ROOT)}")
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

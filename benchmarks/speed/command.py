"""The command line of ``python -m benchmarks.speed``: options, the Java side's set-up, the table,
--save."""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import time
from collections.abc import Callable

import benchmarks.speed as package

from .cases import JAVA, RESULTS_DIR, ROOT, STICKY, Case, cases
from .child import child
from .runs import run_java, run_ours
from .table import HEADER, round_rows, row


def main(argv: list[str] | None = None) -> int:
    """The table (or, with ``--child``, one timed run of ours as JSON); 0 when it ran."""
    args = args_of(argv)
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return 0

    lines: list[str] = []

    def emit(text: str = "") -> None:
        print(text, flush=True)
        lines.append(text)

    java_ok, java_note = java_side(args.no_java)
    started = time.time()
    header(args, java_note, emit)
    for case in cases(args.quick):
        if args.cases and case.name not in args.cases.split(","):
            continue
        run_case(case, args, java_ok, emit)
    emit(
        f"# total wall time {time.time() - started:.0f}s; load average at the end {_load()} "
        "(a shared machine: figures move with it)"
    )
    if args.save:
        save(lines)
    return 0


def args_of(argv: list[str] | None) -> argparse.Namespace:
    """The options (``--child`` hidden: the subprocess that times ours)."""
    description = (package.__doc__ or "").split("\n\n")[0]
    ap = argparse.ArgumentParser(prog="python -m benchmarks.speed", description=description)
    ap.add_argument("--quick", action="store_true", help="small sizes (a minute)")
    ap.add_argument(
        "--assignors",
        help="comma-separated subset (range,roundrobin,lag,sticky,cooperative-sticky,balanced)"
    )
    ap.add_argument("--cases", help="comma-separated subset of case names")
    ap.add_argument("--no-java", action="store_true", help="ours only")
    ap.add_argument("--timeout", type=float, default=900.0,
                    help="per run, seconds (default %(default)s)")
    ap.add_argument("--warmups", type=int, default=2,
                    help="untimed calls after the cold one (default %(default)s)")
    ap.add_argument("--repeats", type=int, default=3,
                    help="timed warm calls, median reported (default %(default)s)")
    ap.add_argument("--rounds", action="store_true",
                    help="also print each round of the sticky family")
    ap.add_argument("--save", action="store_true",
                    help="also write benchmarks/results/speed-<date>.txt")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def java_side(no_java: bool) -> tuple[bool, str]:
    """Whether Java runs (built, unless ``--no-java``) and the header's note on it."""
    from benchmarks import javaref

    if no_java:
        return False, "Java: off"
    try:
        javaref.ensure_built()
        return True, f"Java: kafka-clients {javaref.kafka_clients_version()} on {_java_version()}"
    except javaref.JavaRefError as e:
        return False, f"Java: unavailable ({e})"


def header(args: argparse.Namespace, java_note: str, emit: Callable[[str], None]) -> None:
    """The table's first lines: when and where, what the columns mean, the column names."""
    emit(
        "# benchmarks.speed "
        f"{'--quick ' if args.quick else ''}{time.strftime('%Y-%m-%d %H:%M:%S')} on "
        f"{platform.node()} ({os.cpu_count()} cores, load {_load()}, Python "
        f"{platform.python_version()}); {java_note}"
    )
    emit(
        "# seconds of the assign call only (sticky family: both rounds; many-topics-r1: round 1 "
        f"alone). cold: first call in a fresh process/JVM; warm: median of {args.repeats} calls "
        f"after {args.warmups} more untimed ones in that process/JVM; ratio: ours warm / Java warm "
        "(the headline); ours RSS: peak RSS of our process by the end of the cold call (base: "
        "before it); Java heap: peak heap during the cold call (* = Java RangeAssignor on the same "
        "input as yardstick)"
    )
    emit(HEADER)


def run_case(case: Case, args: argparse.Namespace, java_ok: bool,
             emit: Callable[[str], None]) -> None:
    """The rows of one case: each wanted assignor, ours and Java's (Java's range as the yardstick of
    lag)."""
    wanted = set(args.assignors.split(",")) if args.assignors else None
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


def save(lines: list[str]) -> None:
    """Write the lines to ``benchmarks/results/speed-<date>.txt``."""
    out = RESULTS_DIR / f"speed-{time.strftime('%Y-%m-%d')}.txt"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print(f"saved {out.relative_to(ROOT)}")


def _load() -> str:
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "?"


def _java_version() -> str:
    from benchmarks import javaref

    try:
        out = subprocess.run([javaref._tool("java"), "-version"], capture_output=True, text=True,
                             check=False).stderr
        return out.splitlines()[0].strip()
    except (OSError, IndexError, javaref.JavaRefError):
        return "java ?"

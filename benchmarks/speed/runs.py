"""One run of a case and assignor: ours in a fresh Python subprocess, Java's in a fresh JVM; cold
and warm."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from typing import Any

from .cases import ROOT, STICKY, Case


def run_ours(case: Case, assignor: str, timeout: float, warmups: int,
             repeats: int) -> dict[str, Any]:
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
        return {"error": (proc.stderr.strip().splitlines()
                          or [f"exit {proc.returncode}"])[-1][:120]}
    return _with_warm(json.loads(proc.stdout.strip().splitlines()[-1]))


def _with_warm(r: dict[str, Any]) -> dict[str, Any]:
    """Add ``warm_s`` (median of the warm repetitions' totals) and ``warm_round_s`` (per-round
    medians)."""
    warm = r.get("warm_rounds_s") or []
    if warm:
        r["warm_s"] = statistics.median(sum(x) for x in warm)
        r["warm_round_s"] = [statistics.median(x[i] for x in warm) for i in range(len(warm[0]))]
    return r


def run_java(case: Case, assignor: str, timeout: float, warmups: int,
             repeats: int) -> dict[str, Any]:
    """One fresh JVM: repetition 1 is the cold call, then ``warmups`` untimed ones, then
    ``repeats``."""
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


# -- table -----------------------------------------------------------------------------------------

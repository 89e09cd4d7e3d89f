"""Running the compiled runner: Kafka's assignor on a list of scenarios, or timed on a generated
group."""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .build import (
    BUILD_DIR,
    JAVA_ASSIGNORS,
    JVM_FLAGS,
    MAIN_CLASS,
    JavaRefError,
    classpath,
    ensure_built,
)


def _run_java(args: Sequence[str], timeout: float,
              heap: str | None = None) -> subprocess.CompletedProcess:
    java = ensure_built()
    cmd = [java, *JVM_FLAGS, *([f"-Xmx{heap}"] if heap else []), "-cp", classpath(), MAIN_CLASS,
           *args]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as e:
        raise JavaRefError(f"Java reference timed out after {timeout:.0f}s: "
                           f"{' '.join(args)}") from e
    if proc.returncode != 0:
        raise JavaRefError(f"Java reference failed (exit {proc.returncode}): "
                           f"{' '.join(args)}\n{proc.stderr[-4000:]}")
    return proc


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
    assignor: str, scenarios: Iterable[Mapping[str, Any]], *, map_kind: str = "hash",
    timeout: float = 300.0
) -> list[dict[str, Any]]:
    """Run Kafka's ``assignor`` on every scenario in one JVM; one result dict per scenario, in
    order.

    Each result has ``assignment`` ({member: [(topic, partition), ...]} in Java's list order, every
    member present), ``member_order`` (Java's iteration order of the subscriptions map),
    ``transferring`` ({"topic-p": member} for the sticky family, else None), ``time_ns`` and
    ``error`` (None or the Java exception as text; then ``assignment`` is absent).
    """
    if assignor not in JAVA_ASSIGNORS:
        raise ValueError(f"kafka-clients has no assignor {assignor!r}; it has "
                         f"{', '.join(JAVA_ASSIGNORS)}")
    cases = [_jsonable(s) for s in scenarios]
    BUILD_DIR.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="run.", dir=BUILD_DIR) as tmp:
        src, dst = Path(tmp) / "cases.json", Path(tmp) / "results.json"
        src.write_text(json.dumps(cases))
        _run_java(["cases", "--assignor", assignor, "--in", str(src), "--out", str(dst),
                   "--map", map_kind], timeout)
        results = json.loads(dst.read_text())
    for r in results:
        if r.get("assignment") is not None:
            r["assignment"] = {m: [(t, p) for t, p in tps] for m, tps in r["assignment"].items()}
    return results


def assignments(assignor: str,
                scenarios: Iterable[Mapping[str, Any]]) -> list[dict[str, list[tuple[str, int]]]]:
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

    With ``repeat`` > 1 the measured rounds run that many times in the one JVM: ``repeat_ns`` (all
    rounds) and ``repeat_round_ns`` (per round) list every repetition, the first one cold when
    ``warmup`` is 0."""
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
        raise JavaRefError(f"no result from the Java timing run:\n{proc.stdout[-2000:]}\n"
                           f"{proc.stderr[-2000:]}")
    return json.loads(lines[-1])

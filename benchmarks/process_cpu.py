"""Where a machine's CPU goes, by kind of process: run beside a command (``make test``, a benchmark)
and read the CPU seconds each kind used.

    python -m benchmarks.process_cpu --out /tmp/cpu.json &    # stop it with Ctrl-C or kill
    make test

Every ``--every`` seconds it reads each process's user + system time from ``/proc`` and adds what
each used since the last reading to its kind (:func:`kind`: a Kafka broker, a Spark driver, a test
worker, ...); a process that started since counts from its start. A process that starts and ends
between two readings is missed. ``--out`` (JSON, rewritten atomically at each reading) has the
totals by kind and, for the JVMs and job processes, each one's CPU seconds and lifetime: the suite's
run on 2026-12-03 is in ``benchmarks/results/suite.txt``. Linux only.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import Counter
from pathlib import Path

HZ = os.sysconf("SC_CLK_TCK")
JAVA_MAINS = (("kafka.Kafka", "broker"), ("SparkSubmit", "spark-driver"),
              ("deploy.master", "spark-master"), ("deploy.worker", "spark-worker"),
              ("CoarseGrainedExecutor", "spark-executor"), ("ConnectDistributed", "connect"),
              ("ConnectStandalone", "connect"), ("plexus", "maven"))
KEPT = {"broker", "spark-driver", "rebalancer-cli", "java-other"}
"""The kinds whose processes are listed one by one."""


def kind(cmd: str) -> str:
    """The kind of a process from its command line."""
    program = cmd.split(" ", 1)[0]
    if program.endswith("/java") or program == "java":
        return next((name for main, name in JAVA_MAINS if main in cmd), "java-other")
    if "pyspark.daemon" in cmd or "pyspark.worker" in cmd:
        return "py-spark-worker"
    if "exec(eval(sys.stdin" in cmd:
        return "xdist-worker"
    if "streaming.cli" in cmd or "bin/rebalancer" in cmd:
        return "rebalancer-cli"
    for word in ("pytest", "prometheus", "mypy", "pip"):
        if word in cmd:
            return word
    return "python-other" if "python" in program else program.rsplit("/", 1)[-1][:20] or "?"


def stat_cpu_s(stat: str) -> float:
    """User and system CPU seconds so far from a ``/proc/<pid>/stat`` text (fields 14 and 15)."""
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / HZ


def read() -> dict[tuple[str, str], tuple[float, str]]:
    """(pid, start time) -> (CPU seconds so far, command line) of every process now."""
    out = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(
                errors="replace").strip()
        except OSError:
            continue
        start = stat.rsplit(")", 1)[1].split()[19]  # a pid and its start time name one process
        out[(pid, start)] = (stat_cpu_s(stat), cmd)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--every", type=float, default=2.0)
    args = parser.parse_args()
    start, last = time.time(), read()
    totals: Counter[str] = Counter()
    procs: dict[tuple[str, str], dict] = {}
    while True:
        time.sleep(args.every)
        now = read()
        for key, (cpu, cmd) in now.items():
            k = kind(cmd)
            totals[k] += cpu - last.get(key, (0.0, ""))[0]
            if k in KEPT:
                seen = procs.setdefault(key, {"kind": k, "first_s": time.time() - start})
                seen.update(cpu_s=round(cpu, 2), last_s=time.time() - start, cmd=cmd[-150:])
        last = now
        tmp = args.out.with_name(args.out.name + ".tmp")
        tmp.write_text(json.dumps({"elapsed_s": round(time.time() - start, 1),
                                   "cpu_s": {k: round(v, 1) for k, v in totals.most_common()},
                                   "processes": list(procs.values())}))
        os.replace(tmp, args.out)


if __name__ == "__main__":
    main()

"""Where a machine's CPU goes, by kind of process: run beside a command (``make test``, a benchmark)
and read the CPU seconds each kind used.

    python -m benchmarks.process_cpu --out /tmp/cpu.json &    # stop it with Ctrl-C or kill
    make test

Every ``--every`` seconds it reads each process's user + system time from ``/proc`` and adds what
each used since the last reading to its kind (:func:`kind`: a Kafka broker, a Spark driver, a test
worker, ...); a process that started since counts from its start. A process that starts and ends
between two readings is missed. ``--out`` (JSON, rewritten atomically at each reading) has the
totals by kind; for the JVMs and job processes, each one's CPU seconds and lifetime; and for the
Spark drivers, their CPU seconds by thread name (digits as ``#``: the compiler, the code cache
sweeper, py4j's gateway threads, the executor's tasks, ...). The suite's runs of 2026-12-03 are in
``benchmarks/results/suite.txt``. Linux only.
"""

from __future__ import annotations

import argparse
import json
import os
import re
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
THREADED = {"spark-driver"}
"""The kinds whose threads' CPU is added up by thread name."""


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


def threads(pid: str) -> dict[str, tuple[float, str]]:
    """Thread id -> (CPU seconds so far, its name with digits as ``#``) of one process."""
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        out[tid] = (stat_cpu_s(stat), re.sub(r"\d+", "#", name))
    return out


class ThreadTotals:
    """CPU seconds by thread name over the processes of :data:`THREADED` kinds."""

    def __init__(self) -> None:
        self.by_name: Counter[str] = Counter()
        self._last: dict[tuple[str, str, str], float] = {}

    def add(self, key: tuple[str, str], count: bool = True) -> None:
        """Add what the threads of process ``key`` (pid, start time) used since the last reading
        (since they started, at the first); ``count=False`` only reads them (a process running
        before the sampler: what it used until then is not counted, as for the kinds' totals)."""
        for tid, (cpu, name) in threads(key[0]).items():
            if count:
                self.by_name[name] += cpu - self._last.get((*key, tid), 0.0)
            self._last[(*key, tid)] = cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--every", type=float, default=2.0)
    args = parser.parse_args()
    start, last = time.time(), read()
    totals: Counter[str] = Counter()
    procs: dict[tuple[str, str], dict] = {}
    by_thread = ThreadTotals()
    for key, (_, cmd) in last.items():
        if kind(cmd) in THREADED:
            by_thread.add(key, count=False)
    while True:
        time.sleep(args.every)
        now = read()
        for key, (cpu, cmd) in now.items():
            k = kind(cmd)
            totals[k] += cpu - last.get(key, (0.0, ""))[0]
            if k in KEPT:
                seen = procs.setdefault(key, {"kind": k, "first_s": time.time() - start})
                seen.update(cpu_s=round(cpu, 2), last_s=time.time() - start, cmd=cmd[-150:])
            if k in THREADED:
                by_thread.add(key)
        last = now
        tmp = args.out.with_name(args.out.name + ".tmp")
        tmp.write_text(json.dumps({"elapsed_s": round(time.time() - start, 1),
                                   "cpu_s": {k: round(v, 1) for k, v in totals.most_common()},
                                   "processes": list(procs.values()),
                                   "threads": {k: round(v, 1)
                                               for k, v in by_thread.by_name.most_common()}}))
        os.replace(tmp, args.out)


if __name__ == "__main__":
    main()

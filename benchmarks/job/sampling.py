"""What the machine spends during a run: peak memory of the job's processes, and busy CPU over
time."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path


class MemorySampler(threading.Thread):
    """Peak memory of this process and its descendants, minus the pids to ignore (the brokers).

    ``peak`` sums PSS (proportional set size): the Python workers are forked from pyspark's daemon
    and share its pages, which a sum of RSS would count once per worker. ``peak_rss`` is that larger
    sum, for reference."""

    def __init__(self, ignore: set[int]) -> None:
        super().__init__(daemon=True)
        self.ignore = ignore
        self.peak = 0
        self.peak_rss = 0
        self.stop_flag = threading.Event()

    def reset(self) -> None:
        """Peaks from now on (one run's)."""
        self.peak = self.peak_rss = 0

    def run(self) -> None:
        while not self.stop_flag.wait(0.5):
            pss, rss = _tree_memory(os.getpid(), self.ignore)
            self.peak, self.peak_rss = max(self.peak, pss), max(self.peak_rss, rss)


class CpuSampler(threading.Thread):
    """The whole machine's busy CPU time (``/proc/stat``: all but idle and iowait), sampled every
    0.25 s, so a run can tell how busy the cores were during its batches: everything on the machine
    counts (the broker, the driver, the Python workers), as all of it is part of the job's cost
    here. Beside it, the CPU time of this process and its descendants alone (the broker, Spark's
    JVM, the Python workers, the load generator, less ``ignore``): on a machine shared with other
    work, that is the figure to compare runs by."""

    def __init__(self, ignore: set[int] | None = None) -> None:
        super().__init__(daemon=True)
        # (wall time, machine busy, this tree's CPU)
        self.samples: list[tuple[float, float, float]] = []
        # beside each sample: this tree's CPU by process kind (KINDS)
        self.kinds: list[dict[str, float]] = []
        self._kind_of: dict[int, str] = {}
        self.ignore = ignore or set()
        self.stop_flag = threading.Event()
        self.hz = os.sysconf("SC_CLK_TCK")

    def busy_s(self) -> float:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        # user..steal, less idle and iowait
        return (sum(fields[:8]) - fields[3] - fields[4]) / self.hz

    def tree_s(self) -> float:
        """CPU seconds of this process and its descendants so far (the reaped ones through their
        parents')."""
        return sum(_tree_cpu_by_kind(os.getpid(), self.ignore, self._kind_of, self.hz).values())

    def run(self) -> None:
        while not self.stop_flag.is_set():
            by_kind = _tree_cpu_by_kind(os.getpid(), self.ignore, self._kind_of, self.hz)
            self.samples.append((time.time(), self.busy_s(), sum(by_kind.values())))
            self.kinds.append(by_kind)
            self.stop_flag.wait(0.25)

    def busy_between(self, t0: float, t1: float, own: bool = False) -> float:
        """Core-seconds busy between two wall times (interpolated between samples); ``own``: this
        process tree's alone."""
        import numpy as np

        ts, machine, tree = (np.array(x) for x in zip(*self.samples, strict=True))
        busy = tree if own else machine
        return float(np.interp(t1, ts, busy) - np.interp(t0, ts, busy))

    def kinds_between(self, t0: float, t1: float) -> dict[str, float]:
        """This tree's CPU seconds between two wall times by process kind (:data:`KINDS`)."""
        import numpy as np

        ts = np.array([s[0] for s in self.samples])
        return {k: float(np.interp(t1, ts, col) - np.interp(t0, ts, col))
                for k in KINDS for col in [np.array([d.get(k, 0.0) for d in self.kinds])]}


def started_s(line: dict) -> float:
    """A progress line's batch start (Spark's ISO 8601 timestamp) as epoch seconds."""
    import datetime as dt

    return dt.datetime.fromisoformat(line["started"].replace("Z", "+00:00")).timestamp()


def _processes() -> tuple[dict[int, list[int]], dict[int, list[str]]]:
    """Every process's children, and its ``/proc/<pid>/stat`` fields after the command (``state``
    first)."""
    children: dict[int, list[int]] = {}
    stat: dict[int, list[str]] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(d.name))
            stat[int(d.name)] = fields
        except (OSError, IndexError, ValueError):
            continue
    return children, stat


def _tree(root: int, ignore: set[int]) -> tuple[list[int], dict[int, list[str]]]:
    """``root`` and its descendants, less the subtrees of the ``ignore`` pids, and their stat
    fields."""
    children, stat = _processes()
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        if pid not in ignore:
            out.append(pid)
            todo += children.get(pid, [])
    return out, stat


KINDS = ("broker", "spark JVM", "python workers", "driver")
"""Who spends a run's CPU: the embedded brokers' JVMs, Spark's JVM, pyspark's daemon and its forked
workers, and this process (the driver's Python and the load generator)."""


def _kind(pid: int) -> str:
    """A process's kind (:data:`KINDS`), from its command line."""
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "driver"
    if b"kafka.Kafka" in cmd or b"kafka.logs.dir" in cmd:
        return "broker"
    if b"pyspark.daemon" in cmd or b"pyspark.worker" in cmd:
        return "python workers"
    return "spark JVM" if b"java" in cmd.split(b"\0", 1)[0] else "driver"


def _tree_cpu_by_kind(root: int, ignore: set[int], known: dict[int, str],
                      hz: int) -> dict[str, float]:
    """CPU seconds of the tree by process kind, the reaped children's with their parent (``known``:
    the kinds told so far by pid; a process seen as ``driver`` is asked again, as a launcher script
    may exec a JVM)."""
    pids, stat = _tree(root, ignore)
    out = dict.fromkeys(KINDS, 0.0)
    for pid in pids:
        if pid in stat:
            kind = known.get(pid) or _kind(pid)
            if kind != "driver":
                known[pid] = kind
            out[kind] += sum(int(x) for x in stat[pid][11:15]) / hz
    return out


def _tree_memory(root: int, ignore: set[int]) -> tuple[int, int]:
    """Summed PSS and RSS of ``root`` and its descendants, less the subtrees of the ``ignore``
    pids."""
    pss = rss = 0
    for pid in _tree(root, ignore)[0]:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                key, _, value = line.partition(":")
                if key in ("Pss", "Rss"):
                    kib = int(value.split()[0]) * 1024
                    pss, rss = (pss + kib, rss) if key == "Pss" else (pss, rss + kib)
        except (OSError, ValueError):
            pass
    return pss, rss

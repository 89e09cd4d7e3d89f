"""What the soak measures: the process tree's RSS and the files and bytes of the checkpoint and
tables."""

from __future__ import annotations

import contextlib
import os
import re
import time
from pathlib import Path

COMMIT = re.compile(r"^\d{20}\.json$")
STATE_VERSION = re.compile(r"^(\d+)\.(?:changelog|zip|delta|snapshot)$")
"""A version's file in a state store partition's folder (RocksDB's changelog and snapshot,
HDFS-backed's)."""


def _tree(root: int) -> list[tuple[int, int]]:
    """``(pid, parent pid)`` of ``root`` and every process below it, parents before children."""
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stat = Path(f"/proc/{d}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(d))
    out, todo = [], [(root, 0)]
    while todo:
        pid, parent = todo.pop()
        out.append((pid, parent))
        todo += [(child, pid) for child in children.get(pid, [])]
    return out


def _rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def memory(root: int) -> dict[str, float]:
    """RSS of the job's Python driver, its JVM and its Python workers (daemon and forks; shared
    pages of the forks are counted once each)."""
    out = {"jvm_rss_mb": 0.0, "py_rss_mb": _rss_mb(root), "workers_rss_mb": 0.0}
    jvms: set[int] = set()
    for pid, parent in _tree(root)[1:]:
        try:
            raw = Path(f"/proc/{pid}/cmdline").read_bytes()
            cmd = raw.replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "pyspark.daemon" in cmd or "pyspark/daemon" in cmd or "pyspark.worker" in cmd:
            out["workers_rss_mb"] += _rss_mb(pid)
        elif "java" in cmd.split(" ", 1)[0]:
            jvms.add(pid)
            # a JVM's child that still reads as java is its fork before exec (Hadoop runs readlink
            # at each checkpoint commit): its RSS is the parent's pages again, once counted as a
            # 5.7 GB JVM
            if parent not in jvms:
                out["jvm_rss_mb"] += _rss_mb(pid)
    return out


def du(folder: Path, pick=lambda p: True) -> tuple[int, int]:
    """Files and bytes under ``folder`` whose path ``pick`` accepts."""
    files = size = 0
    for dirpath, _dirs, names in os.walk(folder):
        for n in names:
            p = Path(dirpath, n)
            if pick(p):
                try:
                    size += p.stat().st_size
                    files += 1
                except OSError:  # removed meanwhile (cleanup, VACUUM)
                    pass
    return files, size


def folders(checkpoint: Path, tables: Path) -> dict[str, float]:
    state = du(checkpoint / "state")
    ckpt = du(checkpoint)
    data = du(tables, lambda p: p.suffix == ".parquet" and "_delta_log" not in p.parts)
    log = du(tables, lambda p: "_delta_log" in p.parts)
    return {"state_files": state[0], "state_mb": state[1] / 2**20,
            "state_versions": state_versions(checkpoint / "state"),
            "ckpt_files": ckpt[0], "ckpt_mb": ckpt[1] / 2**20,
            "delta_files": data[0], "delta_mb": data[1] / 2**20,
            "log_files": log[0], "log_kb": log[1] / 1024,
            "log_orphans": orphan_files(tables)}


def state_versions(state: Path) -> int:
    """The most versions any one state store partition keeps (what maintenance trims to
    ``minBatchesToRetain``; it runs every 60 s, so between runs this follows the batch rate)."""
    most = 0
    for _path, _dirs, names in os.walk(state):
        versions = {m.group(1) for m in map(STATE_VERSION.match, names) if m}
        most = max(most, len(versions))
    return most


def orphan_files(tables: Path) -> int:
    """Checksum files the tables' logs keep of expired commits
    (:mod:`streaming.operations.log_orphans`): the log's own size follows the commit rate over its
    time retention, this count follows nothing and must stay low."""
    from streaming.operations import log_orphans

    count = 0
    for log_dir in tables.glob("*/_delta_log"):
        with contextlib.suppress(OSError):  # removed meanwhile
            count += len(log_orphans.orphans(p.name for p in log_dir.iterdir()))
    return count


def window_commits(tables: Path, seconds: float) -> int:
    """Commits (``N.json``) the tables' logs got in the last ``seconds``: the log keeps its
    retention window's commits and the data files wait out theirs, so both follow this rate, which
    follows the machine's speed (a trigger shorter than a batch runs batches back to back)."""
    since, count = time.time() - seconds, 0
    for log_dir in tables.glob("*/_delta_log"):
        with contextlib.suppress(OSError):  # removed meanwhile
            for p in log_dir.iterdir():
                if COMMIT.match(p.name):
                    with contextlib.suppress(OSError):
                        count += p.stat().st_mtime >= since
    return count


def interval_s(sql_interval: str) -> float:
    """Seconds of a Delta retention such as ``interval 5 minutes``."""
    pattern = r"\s*interval\s+(\d+(?:\.\d+)?)\s+(second|minute|hour|day|week)s?\s*"
    m = re.fullmatch(pattern, sql_interval)
    if not m:
        raise ValueError(f"not an interval: {sql_interval!r}")
    unit = {"second": 1, "minute": 60, "hour": 3600, "day": 86400, "week": 604800}[m.group(2)]
    return float(m.group(1)) * unit

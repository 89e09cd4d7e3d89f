"""A cluster ``rebalancer kafka up`` left running: recorded in ``.cache/kafka/cluster.json`` (or
``$REBALANCER_KAFKA_STATE``: tests point it elsewhere so they never touch a developer's), found and
stopped by ``rebalancer kafka down`` and read by the commands that default to it."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import time
from pathlib import Path
from typing import Any

from streaming.paths import CACHE_DIR

STATE_FILE = Path(os.environ.get("REBALANCER_KAFKA_STATE", CACHE_DIR / "kafka" / "cluster.json"))


def record(state: dict[str, Any]) -> None:
    """Write the record whole or not at all (a temporary file renamed into place)."""
    STATE_FILE.parent.mkdir(parents=True, exist_ok=True)
    tmp = STATE_FILE.with_name(f".{STATE_FILE.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(state, indent=2))
    os.replace(tmp, STATE_FILE)


def stop_detached(timeout_s: float = 30.0) -> list[int]:
    """Stop the cluster recorded by ``kafka up``; return the pids that were stopped."""
    if not STATE_FILE.exists():
        return []
    state = json.loads(STATE_FILE.read_text())
    pids = [p for p in state.get("pids", []) if _is_kafka_process(p)]
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.2)
    for pid in pids:
        if alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.1)
    STATE_FILE.unlink(missing_ok=True)
    shutil.rmtree(state.get("base_dir", ""), ignore_errors=True)
    return pids


def detached_state() -> dict | None:
    return json.loads(STATE_FILE.read_text()) if STATE_FILE.exists() else None


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie child of ours still answers kill(0); treat it as gone
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def _is_kafka_process(pid: int) -> bool:
    try:
        return b"kafka.Kafka" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False

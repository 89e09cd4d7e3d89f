"""One job per checkpoint: a lease file in the checkpoint folder.

A job takes the lease before its query starts: it creates ``<checkpoint>/rebalancer.lease`` holding
its run id, host and pid; a background thread rewrites it every ``timeout / 4`` while the query is
active, and each batch checks that the file still names its run (:meth:`Lease.check`). Another job
finds the file and is refused with a message naming the holder, unless the lease is stale: not
rewritten for ``lease_timeout_s`` (by the store's modification time), or held by a process of this
host that is gone (a crashed or killed job, so a restart need not wait out the timeout). A stale
lease is taken over.

Limits. The file is written whole (a temporary file renamed into place, :func:`hfs.write_text`) and
created exclusively on a local file system (``link(2)``) and HDFS; on object stores the create
checks then renames, so two jobs starting within the same moment could both write: each reads the
file back after a short pause and only the one it names goes on, and a job that finds another run in
the file at a batch stops before writing. An empty or damaged file (an older release's half write)
is nobody's and is taken over. Staleness trusts the store's clock against this host's (skew shortens
or lengthens the timeout), and a job paused longer than the timeout (GC, a frozen VM) can lose its
lease to another: it then fails at its next batch, but a batch already past that check may still
write (Delta's idempotent writes make a replay harmless, not two live writers).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any, TypedDict

from pyspark.sql import SparkSession

from streaming.errors import JobError
from streaming.operations import hfs

log = logging.getLogger(__name__)

LEASE_FILE = "rebalancer.lease"
UNREADABLE = "unreadable"
SETTLE_S = 0.5  # pause between writing the lease and reading it back (see Limits)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def holder_state(holder: dict[str, Any] | None, modified_ms: int | None, now_ms: int,
                 timeout_s: float, host: str, pid: int,
                 pid_alive: Callable[[int], bool] = _pid_alive) -> str:
    """``free`` (no lease), ``ours`` (this process), ``stale`` (may be taken over) or ``held``."""
    if holder is None or modified_ms is None:
        return "free"
    if holder.get("host") == host and holder.get("pid") == pid:
        return "ours"
    # writes are whole (hfs.write_text): damaged, or an older release's
    if holder.get("run_id") == UNREADABLE:
        return "stale"
    if now_ms - modified_ms > timeout_s * 1000:
        return "stale"
    if (holder.get("host") == host and isinstance(holder.get("pid"), int)
            and not pid_alive(holder["pid"])):
        return "stale"
    return "held"


def describe(holder: dict[str, Any] | None) -> str:
    if holder is None:
        return "nobody (the file is gone)"
    return f"run {holder.get('run_id')} (host {holder.get('host')}, pid {holder.get('pid')})"


class _Holder(TypedDict):
    """Who holds a lease, as its file says (and ``written_ms``)."""

    run_id: str
    host: str
    pid: int


class Lease:
    """The lease of one checkpoint, held by this process until :meth:`release`."""

    def __init__(self, spark: SparkSession, checkpoint: str, timeout_s: float) -> None:
        self.spark = spark
        self.checkpoint = checkpoint
        self.timeout_s = timeout_s
        self.me: _Holder = {"run_id": uuid.uuid4().hex, "host": socket.gethostname(),
                            "pid": os.getpid()}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- taking and giving back ------------------------------------------------------------------

    def _read(self) -> dict[str, Any] | None:
        text = hfs.read_text(self.spark, self.checkpoint, LEASE_FILE)
        if text is None:
            return None
        try:
            holder = json.loads(text)
        except ValueError:
            holder = None
        # empty or damaged: nobody's (see holder_state)
        return holder if isinstance(holder, dict) else {"run_id": UNREADABLE}

    def _write(self, overwrite: bool) -> bool:
        body = json.dumps({**self.me, "written_ms": int(time.time() * 1000)})
        return hfs.write_text(self.spark, self.checkpoint, LEASE_FILE, body, overwrite=overwrite)

    def acquire(self, active: Callable[[], bool] = lambda: True) -> Lease:
        """Take the lease or raise :class:`JobError` naming its holder; then keep it
        fresh while ``active()``."""
        holder = self._read()
        state = holder_state(holder, hfs.modified_ms(self.spark, self.checkpoint, LEASE_FILE),
                             int(time.time() * 1000), self.timeout_s, self.me["host"],
                             self.me["pid"])
        if state == "held":
            raise JobError(
                f"checkpoint {self.checkpoint} is in use by another job: {describe(holder)}; it "
                f"must stop first (a lease not refreshed for {self.timeout_s:.0f}s is taken over; "
                f"file {LEASE_FILE})")
        if state == "stale":
            log.warning("taking over the stale lease of %s on %s", describe(holder),
                        self.checkpoint)
            hfs.delete(self.spark, self.checkpoint, LEASE_FILE)
        if state == "ours":
            # this process starting a query on the checkpoint again: a new run takes over
            self._write(overwrite=True)
        elif not self._write(overwrite=False):
            raise JobError(f"checkpoint {self.checkpoint}: another job took the lease at the same "
                           "moment; retry")
        time.sleep(SETTLE_S)
        self.check()
        self.keep_fresh(active)
        return self

    def check(self) -> None:
        """Raise :class:`JobError` unless the lease file still names this run (called
        at every batch)."""
        holder = self._read()
        for _ in range(5):  # a refresh in flight can leave the file empty or absent for a moment
            if holder is not None and holder.get("run_id") != UNREADABLE:
                break
            time.sleep(0.2)
            holder = self._read()
        if holder is None or holder.get("run_id") != self.me["run_id"]:
            taken = describe(holder) if holder else "nobody (the file is gone)"
            raise JobError(f"checkpoint {self.checkpoint}: lost the lease to {taken}; stopping so "
                           "that only one job writes")

    def keep_fresh(self, active: Callable[[], bool]) -> None:
        """Rewrite the lease every timeout/4 from a daemon thread until ``active()`` turns
        false or release."""
        self._active = active
        if self._thread is not None:
            return

        def loop() -> None:
            while not self._stop.wait(max(0.5, self.timeout_s / 4)):
                try:
                    try:
                        active = bool(self._active())
                    except Exception:  # the session is gone: so is the query
                        active = False
                    if not active:
                        break
                    holder = self._read()
                    if (holder is not None
                            and holder.get("run_id") not in (self.me["run_id"], UNREADABLE)):
                        break  # taken over: the next batch's check stops the query
                    self._write(overwrite=True)
                except Exception as e:
                    # the store or the JVM is away for a moment; the next round retries
                    log.warning("could not refresh the lease on %s: %s", self.checkpoint,
                                type(e).__name__)
            self._give_back()

        self._thread = threading.Thread(target=loop, name="rebalancer-lease", daemon=True)
        self._thread.start()

    def _give_back(self) -> None:
        try:
            holder = self._read()
            if holder is not None and holder.get("run_id") == self.me["run_id"]:
                hfs.delete(self.spark, self.checkpoint, LEASE_FILE)
        except Exception as e:  # the session may be stopping; a stale lease is taken over anyway
            log.debug("lease not removed: %s", e)

    def release(self) -> None:
        """Stop refreshing and delete the lease if it is still this run's."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None
        else:
            self._give_back()

"""Stopping the job on a signal: at a batch boundary, within a grace period, with one
line saying so.

``rebalancer run`` is stopped by SIGTERM (Kubernetes, systemd) or by Ctrl-C (SIGINT to the
terminal's foreground process group), and alike by SIGHUP (its terminal closed, a supervisor's
reload) and SIGQUIT (Ctrl-\\), whose defaults would end it without its stop line or giving its lease
back. :class:`Stop` replaces the handlers of all four: a handler only records the signal and sets an
event, because a handler runs on the main thread between two bytecodes, possibly in the middle of a
py4j call whose socket it would re-enter (pyspark's own SIGINT handler calls ``cancelAllJobs`` from
there: "reentrant call", then a KeyboardInterrupt through py4j). The first signal asks for a stop at
the next batch boundary (:func:`stop_at_boundary`), a second one for a stop at once, which Spark
bounds: its stream thread gets :data:`streaming.spark_session.STOP_TIMEOUT_MS` to end
(``spark.sql.streaming.stopTimeout``; Spark's default waits forever), then ``stop()`` raises and the
lease is given back all the same.

Totals of a run (batches, recommendations, rejected rows whose batch completed) are counted in
:class:`Totals`, so the job keeps a bounded number of progress lines however long it runs.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
import time
from dataclasses import dataclass

from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

POLL_S = 0.05  # how often the trigger's state is read while waiting for a batch boundary


@dataclass
class Totals:
    """Batches whose progress arrived (offsets, state and tables committed) in this process, and
    their rows."""

    batches: int = 0
    recommendations: int = 0
    rejected: int = 0
    last_batch: int | None = None
    interrupted: bool = False
    """A batch was still running when the query was stopped (the next run replays it)."""

    def add(self, line: dict) -> None:
        self.batches += 1
        self.recommendations += line["recommendations"]
        self.rejected += line["rejected"]
        self.last_batch = line["batch"]

    def merge(self, other: Totals) -> None:
        self.batches += other.batches
        self.recommendations += other.recommendations
        self.rejected += other.rejected
        if other.last_batch is not None:
            self.last_batch = other.last_batch


class Stop:
    """SIGTERM, SIGINT, SIGHUP and SIGQUIT as two events: ``requested`` (first signal), ``now`` (a
    second one)."""

    SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)

    def __init__(self) -> None:
        self.requested = threading.Event()
        self.now = threading.Event()
        self.signal: str | None = None
        self.count = 0

    def install(self) -> Stop:
        """Take over the signals (main thread only). Install after the SparkContext exists: it sets
        a SIGINT handler of its own, which this one replaces."""
        for sig in self.SIGNALS:
            signal.signal(sig, self._handle)
        return self

    def _handle(self, signum: int, _frame) -> None:
        # nothing else here: no I/O, no py4j (see the module docstring)
        self.count += 1
        if self.signal is None:
            self.signal = signal.Signals(signum).name
        if self.requested.is_set():
            self.now.set()
        self.requested.set()


def stop_at_boundary(query: StreamingQuery, grace_s: float, now: threading.Event) -> bool:
    """Stop ``query`` between two batches: wait until no trigger runs (at most ``grace_s``, or until
    ``now`` is set), then stop it. Returns False when a batch was still running at the stop (it is
    interrupted and its batch replayed by the next run; Delta skips what it already committed), or
    when the stop did not end the stream thread within Spark's stop timeout."""
    deadline = time.monotonic() + grace_s
    idle = False
    while not now.is_set() and time.monotonic() < deadline:
        try:
            if not query.isActive:
                return True
            idle = not query.status["isTriggerActive"]
        except Exception:  # the query ended under us: nothing left to wait for
            return True
        if idle:
            break
        now.wait(POLL_S)
    if not idle:
        quiet(query)
    try:
        query.stop()
    except Exception:
        # its stream thread outlived spark.sql.streaming.stopTimeout: it ends with the JVM
        return False
    return idle


def quiet(query: StreamingQuery) -> None:
    """Before interrupting a batch: the cancelled tasks, the py4j callback cut mid-call and the
    stream thread all log their interruption at ERROR with stack traces, which the stop line already
    says in one line."""
    logging.getLogger("py4j").setLevel(logging.CRITICAL)
    spark = SparkSession.getActiveSession()
    with contextlib.suppress(Exception):  # a session already stopping: nothing left to quiet
        if spark is not None:
            spark.sparkContext.setLogLevel("OFF")

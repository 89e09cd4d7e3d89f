"""Named crash points: SIGKILL the job at one I/O step of its start-up or of a batch
(chaos tests only).

``REBALANCER_FAULT=<point>[@<n>]`` arms one point of :data:`POINTS`. A point reached with a batch id
(the steps of ``foreachBatch`` and the Delta commits) fires in batch ``n``; any other point fires at
its ``n``-th hit in the process (the first when ``@n`` is left out). Firing kills the job's whole
process group (driver, JVM, Python workers) with SIGKILL, as ``kill -9`` of the group or a lost
machine would: nothing after the point runs, no ``finally`` either. ``<point>[@<n>]~<seconds>``
holds there instead (a batch that takes that long, for the tests of a stop during a batch), saying
so on stderr first. Unset (the job's normal life), :func:`hit` is one dictionary lookup.

In a Python worker of the stateful step (started by the JVM, in a process group of its own) the
driver's group is the one of the JVM that is an ancestor of the worker (found through ``/proc``,
Linux only).
"""

from __future__ import annotations

import os
import signal
import sys
import time
from dataclasses import dataclass

ENV = "REBALANCER_FAULT"

SIDE_FILES = ("rebalancer.lease", "state_layout.json", "delta_app_id", "version_floors.json")
POINTS: dict[str, str] = {
    **{f"{name}:{when}-rename": f"writing side file {name}, {when} its rename into place"
       for name in SIDE_FILES for when in ("before", "after")},
    "tables:before-create": "start-up, before the tables are created or checked",
    "tables:after-create": "start-up, after the tables are created or checked",
    "query:before-start": "start-up, everything prepared, before the streaming query starts",
    "batch:start": ("start of foreachBatch: Spark wrote the batch's offsets, nothing of its output "
                    "yet"),
    "stateful": "inside the stateful step (a Python worker), the batch's state not committed",
    "delta-rs:before-commit": "driver-side Delta append (delta-rs), before its commit",
    "delta-rs:after-commit": "driver-side Delta append (delta-rs), after its commit",
    "spark-delta:before-commit": "Spark's Delta append, before its commit",
    "spark-delta:after-commit": "Spark's Delta append, after its commit",
    "feed:before": "before the trigger feed write (both Delta commits done)",
    "feed:after": "after the trigger feed write",
    "retention:before": ("the job's row retention round, after the batch's writes, before its "
                         "deletes"),
    "retention:after": "the job's row retention round, after its deletes",
    "batch:end": "foreachBatch returned, before Spark writes the batch to its commit log",
}
"""Every fault point and where it is."""


@dataclass(frozen=True)
class Fault:
    point: str
    n: int | None
    """The batch id or hit number (None: the first hit)."""
    hold_s: float | None = None
    """Sleep this long at the point instead of killing the job."""


def parse(value: str | None) -> Fault | None:
    """The armed fault of ``REBALANCER_FAULT``'s value, or None; raises ValueError on
    an unknown point."""
    if not value:
        return None
    armed, _, hold = value.strip().partition("~")
    point, _, n = armed.partition("@")
    if point not in POINTS:
        raise ValueError(f"{ENV}: unknown fault point {point!r}; one of {', '.join(POINTS)}")
    return Fault(point, int(n) if n else None, float(hold) if hold else None)


_armed = parse(os.environ.get(ENV))
_hits: dict[str, int] = {}


def should_fire(fault: Fault | None, point: str, batch: int | None, hits: dict[str, int]) -> bool:
    """Whether ``point`` reached (in ``batch``, if it has one) fires ``fault``; counts the
    hit in ``hits``."""
    if fault is None or fault.point != point:
        return False
    if batch is not None and fault.n is not None:
        return batch == fault.n
    hits[point] = hits.get(point, 0) + 1
    return hits[point] == (fault.n or 1)


def hit(point: str, batch: int | None = None) -> None:
    """Kill the job (or hold) here when ``point`` is the armed fault (see the module's docstring);
    else nothing."""
    if _armed is None:
        return
    if point not in POINTS:
        raise ValueError(f"fault point {point!r} is not registered in "
                         "streaming.operations.faults.POINTS")
    if not should_fire(_armed, point, batch, _hits):
        return
    hold_s = _armed.hold_s
    if hold_s is None:
        os.killpg(job_group(), signal.SIGKILL)
        return
    print(f"{ENV}: holding at {point} for {hold_s:g} s", file=sys.stderr, flush=True)
    time.sleep(hold_s)


def job_group() -> int:
    """The driver's process group: this process's, unless an ancestor is the JVM
    (a Python worker)."""
    pid = os.getpid()
    while pid > 1:
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
            with open(f"/proc/{pid}/comm") as f:
                comm = f.read().strip()
        except OSError:
            break
        if comm == "java":
            return os.getpgid(pid)
        pid = int(stat.rsplit(")", 1)[1].split()[1])  # the parent (field 4; comm may hold spaces)
    return os.getpgid(0)


def in_worker(update):
    """``update`` (the stateful step's function) with the ``stateful`` point at its
    start, when armed."""
    if _armed is None or _armed.point != "stateful":
        return update

    def faulty(key, chunks, state):
        hit("stateful")
        return update(key, chunks, state)

    return faulty

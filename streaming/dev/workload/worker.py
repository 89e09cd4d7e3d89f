"""A workload thread that can be paused (to freeze offsets for a measurement) and stopped."""

from __future__ import annotations

import sys
import threading
import traceback
from collections.abc import Iterable
from typing import Any


class PausableWorker(threading.Thread):
    """``run`` of a subclass checks ``_halt`` and ``_pause``; it sets ``_paused`` once its work so
    far is settled (records acknowledged or offsets committed), which is what :meth:`pause` waits
    for."""

    def __init__(self, name: str) -> None:
        super().__init__(name=name, daemon=True)
        self._halt = threading.Event()
        self._pause = threading.Event()
        self._paused = threading.Event()
        self.failure: BaseException | None = None

    def pause(self, timeout_s: float = 30.0) -> bool:
        """Stop after the current unit of work and wait until it is settled; True once it is."""
        self._pause.set()
        return self._paused.wait(timeout_s) if self.is_alive() else True

    def resume(self) -> None:
        self._paused.clear()
        self._pause.clear()

    def stop(self) -> None:
        self._halt.set()


def describe_consumers(workers: Iterable[Any]) -> str:
    """One paragraph per consumer thread (a worker with ``client_id``, ``assigned``, ``consumer``,
    ``failure``): what it holds, its group coordinator's state and member id, and its thread's
    stack, so a group that never settles can be diagnosed from the log alone."""
    frames = sys._current_frames()
    out = []
    for w in workers:
        coordinator = getattr(getattr(w, "consumer", None), "_coordinator", None)
        state = getattr(coordinator, "state", None)
        generation = getattr(coordinator, "_generation", None)
        stack = ("".join(traceback.format_stack(frames[w.ident])) if w.ident in frames
                 else "(thread ended)\n")
        out.append(f"consumer {w.client_id} holds {len(w.assigned)} partitions "
                   f"(alive={w.is_alive()}, failure={w.failure!r}, coordinator state={state}, "
                   f"generation={generation}, {join_state(coordinator)}); stack:\n{stack}")
    return "".join(out)


def join_state(coordinator: Any) -> str:
    """What a kafka-python group coordinator's join machinery is doing: whether kafka-python's own
    ``need_rejoin()`` wants a rejoin (the class's method, so a guard's latch is not triggered from
    here) and whether one is flagged, its JoinGroup/SyncGroup task (none, pending, or done and with
    what), and whether heartbeats are on. A member rebalancing with ``need_rejoin=False``, nothing
    flagged and a done join is one whose finished join nobody applies (see
    streaming.kafka_clients.join_guard)."""
    if coordinator is None:
        return "no group coordinator"
    try:
        wants = type(coordinator).need_rejoin(coordinator)
    except Exception as e:  # a diagnostic must not raise
        wants = f"error {e!r}"
    task = getattr(coordinator, "_join_task", None)
    if task is None:
        join = "none"
    elif not task.is_done:
        join = "pending"
    else:
        join = f"done ({task.exception!r})" if task.exception is not None else "done (joined)"
    return (f"need_rejoin={wants}, rejoin_needed={getattr(coordinator, 'rejoin_needed', None)}, "
            f"join task={join}, "
            f"heartbeat enabled={getattr(coordinator, '_heartbeat_enabled', None)}")

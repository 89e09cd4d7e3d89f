"""A workload thread that can be paused (to freeze offsets for a measurement) and stopped."""

from __future__ import annotations

import threading


class PausableWorker(threading.Thread):
    """``run`` of a subclass checks ``_halt`` and ``_pause``; it sets ``_paused`` once its work so far is
    settled (records acknowledged or offsets committed), which is what :meth:`pause` waits for."""

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

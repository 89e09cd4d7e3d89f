"""A Java group member run as a child process: the one wrapper behind the demo's Java consumers and
the tests'.

Every Java member of this project (the demo's ``DemoConsumer``, the tests' ``GroupMember`` family)
speaks the same small protocol on its standard streams: it prints ``assigned t-p,t-p`` whenever its
assignment changes (an empty list when it holds nothing), anything else it logs, and it leaves its
group and exits when its standard input is closed. Settings it needs (bootstrap servers, security)
may be written to that input first, so they never appear on a command line.
"""

from __future__ import annotations

import contextlib
import subprocess
import threading
from collections.abc import Sequence
from typing import IO

TP = tuple[str, int]


def parse_assigned(line: str) -> set[TP] | None:
    """``assigned orders-0,orders-3`` -> {(orders, 0), (orders, 3)}; None for any other line."""
    if not line.startswith("assigned"):
        return None
    cells = line[len("assigned"):].strip()
    return {(tp.rsplit("-", 1)[0], int(tp.rsplit("-", 1)[1])) for tp in cells.split(",") if tp}


class JavaProcess:
    """One Java member process. ``stdin_text`` is written to its input at start (the input stays
    open); ``log`` receives every line it prints (stdout) and its stderr; without it stderr is
    discarded. :meth:`on_line` is called from the reader thread for every line (after the assignment
    is updated)."""

    def __init__(self, cmd: Sequence[str], client_id: str, *, stdin_text: str | None = None,
                 log: IO[str] | None = None) -> None:
        self.client_id = client_id
        self.assigned: set[TP] = set()
        self.lines: list[str] = []
        self._lock = threading.Lock()
        self._log = log
        self.proc = subprocess.Popen(list(cmd), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=log if log is not None else subprocess.DEVNULL,
                                     text=True)
        if stdin_text is not None:
            assert self.proc.stdin is not None
            self.proc.stdin.write(stdin_text)
            self.proc.stdin.flush()
        self._reader = threading.Thread(target=self._read, name=f"java-{client_id}", daemon=True)
        self._reader.start()

    def on_line(self, line: str) -> None:
        """Called for every line it prints; nothing by default."""

    def _read(self) -> None:
        assert self.proc.stdout is not None
        try:
            for raw in self.proc.stdout:
                line = raw.rstrip("\n")
                if self._log is not None:
                    self._log.write(line + "\n")
                    self._log.flush()
                assigned = parse_assigned(line.strip())
                with self._lock:
                    self.lines.append(line.strip())
                    if assigned is not None:
                        self.assigned = assigned
                self.on_line(line)
        finally:
            if self._log is not None:
                self._log.close()

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def assignment(self) -> set[TP]:
        with self._lock:
            return set(self.assigned)

    def output(self) -> list[str]:
        with self._lock:
            return list(self.lines)

    def stop(self, timeout_s: float = 30.0) -> None:
        """Close its input: it leaves the group and exits (killed after ``timeout_s``)."""
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            with contextlib.suppress(BrokenPipeError):
                self.proc.stdin.close()
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._reader.join(5)

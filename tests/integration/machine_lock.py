"""One process at a time on this machine for a step that writes a shared file under ``.cache`` (the
class archive, the Java assignor's build): `make test` runs its tests in two worker processes
(pytest-xdist), and both may reach the same step at once. The lock is the kernel's (``flock``), so
a killed holder frees it."""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager

from streaming.paths import CACHE_DIR


@contextmanager
def machine_lock(name: str) -> Iterator[None]:
    path = CACHE_DIR / "locks" / f"{name}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)

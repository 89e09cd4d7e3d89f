"""Recent lag observations of one topic's partitions, as numpy arrays (the job's hot path).

Three ``(partitions, H)`` int64 arrays hold, per partition and oldest first, the observation time, the
committed offset and the end offset of its last ``H`` observations; ``n`` counts how many are filled.
One poll of a topic is one vectorized :meth:`observe`; latest lag, rates and stuck flags are array
expressions, and the whole thing serializes to raw bytes.
"""

from __future__ import annotations

import numpy as np

from streaming.policy.stuck import stuck_mask


class LagHistory:
    __slots__ = ("committed", "end", "n", "ts")

    def __init__(self, partitions: int, depth: int) -> None:
        self.ts = np.zeros((partitions, depth), dtype=np.int64)
        self.committed = np.zeros((partitions, depth), dtype=np.int64)
        self.end = np.zeros((partitions, depth), dtype=np.int64)
        self.n = np.zeros(partitions, dtype=np.int64)

    @property
    def partitions(self) -> int:
        return self.ts.shape[0]

    @property
    def depth(self) -> int:
        return self.ts.shape[1]

    def resize(self, partitions: int) -> None:
        """Grow to (or, after a topic was re-created smaller, shrink to) ``partitions`` rows."""
        if partitions == self.partitions:
            return
        keep = min(partitions, self.partitions)
        for name in ("ts", "committed", "end"):
            new = np.zeros((partitions, self.depth), dtype=np.int64)
            new[:keep] = getattr(self, name)[:keep]
            setattr(self, name, new)
        n = np.zeros(partitions, dtype=np.int64)
        n[:keep] = self.n[:keep]
        self.n = n

    def observe(self, ts: int, partitions: np.ndarray, committed: np.ndarray, end: np.ndarray) -> None:
        """Record one observation at ``ts`` of the given partitions (unique, each >= 0)."""
        if len(partitions) == 0:
            return
        if partitions.max() >= self.partitions:
            self.resize(int(partitions.max()) + 1)
        last = np.where(self.n[partitions] > 0, self.ts[partitions, np.maximum(self.n[partitions] - 1, 0)], -1)
        newer = last < ts
        same = last == ts  # the same observation again (a replayed record): the last one wins
        if same.any():
            p = partitions[same]
            col = self.n[p] - 1
            self.committed[p, col] = committed[same]
            self.end[p, col] = end[same]
        if newer.any():
            p = partitions[newer]
            full = self.n[p] == self.depth
            if full.any():
                f = p[full]
                for arr in (self.ts, self.committed, self.end):
                    arr[f, :-1] = arr[f, 1:]
                self.n[f] -= 1
            col = self.n[p]
            self.ts[p, col] = ts
            self.committed[p, col] = committed[newer]
            self.end[p, col] = end[newer]
            self.n[p] += 1
        # older observations (late records) are ignored: the newest ts wins

    # -- views ---------------------------------------------------------------------------------------

    def _last(self, arr: np.ndarray) -> np.ndarray:
        return arr[np.arange(self.partitions), np.maximum(self.n - 1, 0)]

    def latest_lag(self) -> np.ndarray:
        """Lag per partition at its latest observation (0 where never observed)."""
        lag = self._last(self.end) - self._last(self.committed)
        return np.where(self.n > 0, np.maximum(lag, 0), 0)

    def rate(self, which: str) -> np.ndarray:
        """Records/s of the ``end`` (produce) or ``committed`` (consume) offset over the kept history."""
        arr = self.end if which == "end" else self.committed
        dt = (self._last(self.ts) - self.ts[:, 0]) / 1000.0
        delta = self._last(arr) - arr[:, 0]
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.where((self.n >= 2) & (dt > 0), delta / np.where(dt > 0, dt, 1), 0.0)
        return np.maximum(r, 0.0)

    def stuck(self, k: int) -> np.ndarray:
        """Partitions stuck at their last ``k`` observations (the rule is in :mod:`streaming.policy.stuck`)."""
        return stuck_mask(self.committed, self.end, self.n, k)

    # -- serialization ---------------------------------------------------------------------------------

    def to_bytes(self) -> bytes:
        return b"".join(a.tobytes() for a in (self.ts, self.committed, self.end, self.n))

    @classmethod
    def from_bytes(cls, blob: bytes, partitions: int, depth: int) -> LagHistory:
        h = cls.__new__(cls)
        size = partitions * depth
        flat = np.frombuffer(blob, dtype=np.int64)
        h.ts = flat[:size].reshape(partitions, depth).copy()
        h.committed = flat[size:2 * size].reshape(partitions, depth).copy()
        h.end = flat[2 * size:3 * size].reshape(partitions, depth).copy()
        h.n = flat[3 * size:3 * size + partitions].copy()
        return h

    def byte_size(self) -> int:
        return 8 * (3 * self.ts.size + self.n.size)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LagHistory) and all(
            np.array_equal(getattr(self, a), getattr(other, a)) for a in ("ts", "committed", "end", "n"))

    def __repr__(self) -> str:
        return f"LagHistory(partitions={self.partitions}, depth={self.depth})"

"""What the job remembers of one consumer group between micro-batches.

State lives in one binary column (zlib-compressed JSON): pyspark 4.2.0's ``applyInPandasWithState``
crashes on array or map types in the state schema, and a compact blob is cheap on RocksDB anyway.
Everything here is plain data so the policy and the tests can use it without Spark.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import asdict, dataclass, field
from typing import Any

STATE_VERSION = 1


@dataclass
class PartitionMeta:
    leader: int | None
    replicas: list[int]
    racks: list[str | None]


@dataclass
class GroupState:
    group: str
    last_ts: int = 0
    """Latest event time seen (ms)."""
    generation: int | None = None
    protocol: str | None = None
    members: list[dict[str, Any]] | None = None
    """The last ``members`` event's members; None until the first one (the baseline)."""
    partitions: dict[str, list[PartitionMeta]] = field(default_factory=dict)
    """topic -> partition metadata, from ``partitions`` events."""
    lag: dict[str, dict[str, list[list[int]]]] = field(default_factory=dict)
    """topic -> partition (as str, JSON keys) -> recent observations [ts, committed, end], oldest first."""
    version: int = 0
    """Recommendations made for this group so far."""
    last_rec_ts: int | None = None
    last_rec_id: str | None = None
    skew_streak: int = 0
    pending: list[dict[str, Any]] = field(default_factory=list)
    """Triggers seen at metadata changes that have not been acted on yet (e.g. no lag observed)."""

    # -- views ---------------------------------------------------------------------------------

    def subscribed_topics(self) -> list[str]:
        return sorted({t for m in self.members or [] for t in m["topics"]})

    def partition_count(self, topic: str) -> int:
        if topic in self.partitions:
            return len(self.partitions[topic])
        seen = self.lag.get(topic)
        return max((int(p) for p in seen), default=-1) + 1 if seen else 0

    def current_assignment(self) -> dict[str, list[tuple[str, int]]]:
        return {m["member_id"]: [(t, int(p)) for t, p in m["assigned"]] for m in self.members or []}

    def latest_lag(self, topic: str, partition: int) -> int | None:
        hist = self.lag.get(topic, {}).get(str(partition))
        if not hist:
            return None
        _, committed, end = hist[-1]
        return max(0, end - committed)

    # -- serialization -------------------------------------------------------------------------

    def to_bytes(self) -> bytes:
        payload = asdict(self)
        payload["_v"] = STATE_VERSION
        return zlib.compress(json.dumps(payload, separators=(",", ":"), sort_keys=True).encode(), 1)

    @classmethod
    def from_bytes(cls, blob: bytes) -> GroupState:
        payload = json.loads(zlib.decompress(blob))
        if payload.pop("_v", None) != STATE_VERSION:
            raise ValueError("group state written by an incompatible version; start from a new checkpoint")
        payload["partitions"] = {t: [PartitionMeta(**p) for p in parts] for t, parts in payload["partitions"].items()}
        return cls(**payload)

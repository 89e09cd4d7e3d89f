"""What the job remembers of one consumer group between micro-batches.

State lives in one binary column: pyspark 4.2.0's ``applyInPandasWithState`` crashes on array or map
types in the state schema. The blob is zlib over a JSON header (members, partitions, counters) followed
by the raw lag-history arrays. Everything here is plain data (and numpy) so the policy and the tests use
it without Spark.
"""

from __future__ import annotations

import json
import struct
import zlib
from dataclasses import dataclass, field, fields
from typing import Any

from streaming.state.lag_history import LagHistory

STATE_VERSION = 2


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
    lag: dict[str, LagHistory] = field(default_factory=dict)
    """topic -> recent lag observations of its partitions."""
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
        return seen.partitions if seen is not None else 0

    # -- serialization -------------------------------------------------------------------------

    def to_bytes(self) -> bytes:
        header: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("lag",)}
        header["partitions"] = {t: [[m.leader, m.replicas, m.racks] for m in parts]
                                for t, parts in self.partitions.items()}
        header["lag"] = [[t, h.partitions, h.depth] for t, h in self.lag.items()]
        header["_v"] = STATE_VERSION
        head = json.dumps(header, separators=(",", ":"), sort_keys=True).encode()
        body = b"".join(h.to_bytes() for h in self.lag.values())
        return zlib.compress(struct.pack("<I", len(head)) + head + body, 1)

    @classmethod
    def from_bytes(cls, blob: bytes) -> GroupState:
        raw = zlib.decompress(blob)
        (size,) = struct.unpack_from("<I", raw)
        header = json.loads(raw[4:4 + size])
        if header.pop("_v", None) != STATE_VERSION:
            raise ValueError("group state written by an incompatible version; start from a new checkpoint")
        offset = 4 + size
        lag = {}
        for topic, partitions, depth in header.pop("lag"):
            n = (3 * partitions * depth + partitions) * 8
            lag[topic] = LagHistory.from_bytes(raw[offset:offset + n], partitions, depth)
            offset += n
        header["partitions"] = {t: [PartitionMeta(*m) for m in parts] for t, parts in header["partitions"].items()}
        return cls(lag=lag, **header)

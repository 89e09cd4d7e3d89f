"""What the job remembers of one consumer group between micro-batches.

State lives in one binary column: pyspark 4.2.0's ``applyInPandasWithState`` crashes on array or map
types in the state schema. The blob is zlib over a JSON header (members, partitions, counters, parts of
split events still incomplete) followed by the raw int64 lag-history arrays. Everything here is plain
data (and numpy) so the policy and the tests use it without Spark.

The header carries the layout version (``_v``). Version 3 (this one) reads version 2 blobs (dense lag
rows, no ordering fields); any other version fails (:class:`~streaming.state.errors.UnreadableState`) with
a message saying to start from a new checkpoint.
"""

from __future__ import annotations

import json
import struct
import zlib
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from assignors.model import Member
from streaming.state.errors import UnreadableState
from streaming.state.lag_history import LagHistory

STATE_VERSION = 3
READABLE_VERSIONS = (2, 3)

# A topic known from lag rows alone gets its partition count from the highest partition number seen; past
# this a bogus number would make the assignors allocate per partition, so such a topic is left out.
MAX_INFERRED_PARTITIONS = 1 << 20

COUNTERS = ("late_metadata", "duplicate_metadata", "late_lag", "invalid_parts")
"""``late_metadata``: members/partitions events older than the ones held, ignored; ``duplicate_metadata``:
the held event again (same ts and generation), ignored; ``late_lag``: lag rows older than the newest
observation of their partition, ignored; ``invalid_parts``: parts of split events with a bad index."""


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
    members: list[Member] | None = None
    """The newest ``members`` event's members, by member id (``owned``: what each holds now); None until the
    first one (the baseline). Saved as the JSON objects the state layout has always held."""
    members_ts: int | None = None
    """``ts`` of the members event held: with ``generation``, the order key older events lose against."""
    partitions: dict[str, list[PartitionMeta]] = field(default_factory=dict)
    """topic -> partition metadata, from ``partitions`` events."""
    partitions_ts: dict[str, int] = field(default_factory=dict)
    """topic -> ``ts`` of the partitions event held."""
    lag: dict[str, LagHistory] = field(default_factory=dict)
    """topic -> recent lag observations of its partitions."""
    version: int = 0
    """Recommendations made for this group so far."""
    last_rec_ts: int | None = None
    last_rec_id: str | None = None
    skew_streak: int = 0
    skew_ts: int = 0
    """``ts`` of the newest lag observation counted in ``skew_streak``: each observation counts once."""
    skew_prev: int = 0
    """The streak before ``skew_ts`` counted, to read that observation again when more of it arrives."""
    counters: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTERS, 0))
    parts: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Split events still missing parts: event key -> {part index (str) -> part event}."""

    # -- views ---------------------------------------------------------------------------------

    def subscribed_topics(self) -> list[str]:
        return sorted({t for m in self.members or [] for t in m.topics})

    def partition_count(self, topic: str) -> int:
        """From the topic's partitions event, else implied by its lag rows (0 if implausibly large)."""
        if topic in self.partitions:
            return len(self.partitions[topic])
        seen = self.lag.get(topic)
        span = seen.span if seen is not None else 0
        return span if span <= MAX_INFERRED_PARTITIONS else 0

    def count(self, counter: str, by: int = 1) -> None:
        self.counters[counter] = self.counters.get(counter, 0) + by

    # -- serialization -------------------------------------------------------------------------

    def to_bytes(self) -> bytes:
        header: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "lag"}
        header["members"] = None if self.members is None else [member_json(m) for m in self.members]
        header["partitions"] = {t: [[m.leader, m.replicas, m.racks] for m in parts]
                                for t, parts in self.partitions.items()}
        header["lag"] = [[t, h.rows, h.depth] for t, h in self.lag.items()]
        header["_v"] = STATE_VERSION
        head = json.dumps(header, separators=(",", ":"), sort_keys=True).encode()
        body = b"".join(h.to_bytes() for h in self.lag.values())
        return zlib.compress(struct.pack("<I", len(head)) + head + body, 1)

    @classmethod
    def from_bytes(cls, blob: bytes) -> GroupState:
        raw = zlib.decompress(blob)
        (size,) = struct.unpack_from("<I", raw)
        header = json.loads(raw[4:4 + size])
        layout = header.pop("_v", None)
        if layout not in READABLE_VERSIONS:
            raise UnreadableState(f"group state layout version {layout} is not one this version reads "
                             f"({', '.join(map(str, READABLE_VERSIONS))}); start from a new checkpoint")
        offset = 4 + size
        lag = {}
        for topic, rows, depth in header.pop("lag"):
            # version 2 kept dense rows (row = partition number) and no id array
            ids = np.arange(rows, dtype=np.int64) if layout == 2 else None
            n = LagHistory.byte_length(rows, depth) - (8 * rows if layout == 2 else 0)
            lag[topic] = LagHistory.from_bytes(raw[offset:offset + n], rows, depth, ids)
            offset += n
        if layout == 2:
            header.pop("pending", None)  # never used
            # the observations already counted: a re-sent one of them must not count again
            header["skew_ts"] = max((int(h.ts.max()) for h in lag.values() if h.ts.size), default=0)
            header["skew_prev"] = max(header.get("skew_streak", 0) - 1, 0)
        if header.get("members") is not None:
            header["members"] = [member_from_json(m) for m in header["members"]]
        header["partitions"] = {t: [PartitionMeta(*m) for m in parts] for t, parts in header["partitions"].items()}
        header["counters"] = dict.fromkeys(COUNTERS, 0) | header.get("counters", {})
        return cls(lag=lag, **header)


def member_json(m: Member) -> dict[str, Any]:
    """A member as the state's header keeps it (the layout's field names; ``assigned`` = owned)."""
    return {"member_id": m.member_id, "instance_id": m.instance_id, "client_id": m.client_id, "host": m.host,
            "rack": m.rack, "topics": list(m.topics), "assigned": [[t, p] for t, p in m.owned]}


def member_from_json(m: dict[str, Any]) -> Member:
    return Member(member_id=m["member_id"], topics=tuple(m["topics"]), instance_id=m.get("instance_id"),
                  rack=m.get("rack"), owned=tuple((str(t), int(p)) for t, p in m["assigned"]),
                  client_id=m.get("client_id"), host=m.get("host"))

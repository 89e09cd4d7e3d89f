"""What the job remembers of one consumer group between micro-batches.

State lives in one binary column: pyspark 4.2.0's ``applyInPandasWithState`` crashes on array or map
types in the state schema. The blob is a JSON header (partitions, counters, parts of split events
still incomplete), the members' JSON, then the raw int64 lag-history arrays, compressed. Everything
here is plain data (and numpy) so the policy and the tests use it without Spark.

The header carries the layout version (``_v``). Version 8 (this one) is version 7 with the load the
members last reported of themselves (``reported``, :mod:`streaming.contracts.member_load`; an older
state reads with none). Version 7 is version 6 with the
observation not decided on yet (``undecided``; an older state reads with none). Version 6 is version
5 with each lag history's log start offsets (a fourth array; an older state reads with every log
start unknown, -1). Version 5 is version 4 with the members' capacity estimates in the header
(:mod:`streaming.lag.capacity`; an older state reads with none). Version 4 is LZ4 (a raw block,
after a 4-byte mark and the uncompressed length): every group's state is written and read once per
batch, and zlib took a quarter of that time, LZ4 a twentieth, for blobs ~1.5x larger (RocksDB
compresses them again on disk). The members have a segment of their own so that unchanged members
are neither decoded nor encoded again (:class:`MembersMemo`). Versions 2 to 6 (2 and 3 zlib; version
2 with dense lag rows and no ordering fields) still read; any other version fails
(:class:`~streaming.state.errors.UnreadableState`, which stops the job with the way out), as do
bytes that do not decode.
"""

from __future__ import annotations

import json
import struct
import zlib
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa

from assignors.model import Member
from streaming.lag import reported as reports
from streaming.lag.history import LagHistory
from streaming.lag.owners import Owners
from streaming.state.errors import UnreadableState

STATE_VERSION = 8
READABLE_VERSIONS = (2, 3, 4, 5, 6, 7, 8)
LZ4_MARK = b"RGS\x04"
"""The first bytes of a version 4 to 8 blob; a zlib stream (versions 2 and 3) starts with 0x78."""
_LENGTH = struct.Struct("<I")
_LZ4 = pa.Codec("lz4_raw")

# A topic known from lag rows alone gets its partition count from the highest partition number
# seen; past this a bogus number would make the assignors allocate per partition, so such a topic
# is left out.
MAX_INFERRED_PARTITIONS = 1 << 20

METADATA_MISSING = "metadata_missing"
COUNTERS = ("late_metadata", "duplicate_metadata", "late_lag", "invalid_parts", METADATA_MISSING)
"""``late_metadata``: members/partitions events older than the ones held, ignored;
``duplicate_metadata``: the held event again (same ts and generation), ignored; ``late_lag``: lag
rows older than the newest observation of their partition, ignored; ``invalid_parts``: parts of
split events with a bad index; ``metadata_missing``: polls decided without every metadata event
their lag counts (:func:`streaming.policy.recommend.process`)."""


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
    """The newest ``members`` event's members, by member id (``owned``: what each holds
    now); None until the first one (the baseline). Saved as the JSON objects the state
    layout has always held."""
    members_ts: int | None = None
    """``ts`` of the members event held: with ``generation``, the order key older
    events lose against."""
    partitions: dict[str, list[PartitionMeta]] = field(default_factory=dict)
    """topic -> partition metadata, from ``partitions`` events."""
    partitions_ts: dict[str, int] = field(default_factory=dict)
    """topic -> ``ts`` of the partitions event held."""
    lag: dict[str, LagHistory] = field(default_factory=dict)
    """topic -> recent lag observations of its partitions; never an empty history (a topic whose
    partitions all went is dropped, :mod:`streaming.state.update`): a history's lookups give row 0
    for a partition it does not hold, masked out after the read (:meth:`LagHistory.lookup`), and an
    empty one has no row 0 to read."""
    version: int = 0
    """Recommendations made for this group so far."""
    last_rec_ts: int | None = None
    last_rec_id: str | None = None
    skew_streak: int = 0
    skew_ts: int = 0
    """``ts`` of the newest lag observation counted in ``skew_streak``: each
    observation counts once."""
    skew_prev: int = 0
    """The streak before ``skew_ts`` counted, to read that observation again when more
    of it arrives."""
    undecided: list[Any] | None = None
    """The newest observation, applied but not decided on yet (its poll may have been cut between
    micro-batches, its rest still to come): [ts, whether its lag moved, its metadata changes (the
    fields of :class:`~streaming.state.changes.Changes`), the metadata events its lag said it has
    (absent in an older state: none)]; None when every one is decided
    (:mod:`streaming.policy.recommend`)."""
    risk_ts: int | None = None
    """``ts`` of the latest recommendation a ``retention_risk`` trigger made (its own cooldown)."""
    capacity: dict[str, list[Any]] = field(default_factory=dict)
    """member identity -> [records/s, seconds of backlog it rests on, ts of the last backlogged
    observation, then the same three before it, null for none] (:mod:`streaming.lag.capacity`)."""
    reported: dict[str, list[Any]] = field(default_factory=dict)
    """member identity -> [ts of the poll that first saw the report, busy fraction, records/s, the
    capacity its reports measured (null: none yet), whether its lag grew when the report came
    (absent in a layout 8 state: no), the least records lag the report saw after a poll (absent:
    not said)]: the load each member last said of itself, as
    the newest members event carries it
    (:mod:`streaming.contracts.member_load`; the capacity it gives:
    :func:`streaming.lag.reported.with_reports`)."""
    counters: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTERS, 0))
    parts: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Split events still missing parts: event key -> {part index (str) -> part event}."""
    held_lag: list[dict[str, Any]] | None = None
    """The newest poll's lag rows, held until the metadata events they count are in
    (:mod:`streaming.state.waiting`); None when none are."""
    members_memo: MembersMemo | None = field(default=None, repr=False, compare=False)
    """How ``members`` were decoded (not saved: see :class:`MembersMemo`)."""

    # -- views ---------------------------------------------------------------------------------

    def subscribed_topics(self) -> list[str]:
        memo = self.held_members()
        if memo is None:
            return sorted({t for m in self.members or [] for t in m.topics})
        if "topics" not in memo.derived:  # once per members' memo: groups of 10,000 members
            memo.derived["topics"] = sorted({t for m in memo.members for t in m.topics})
        return list(memo.derived["topics"])

    def partition_count(self, topic: str) -> int:
        """From the topic's partitions event, else implied by its lag rows (0 if implausibly
        large)."""
        if topic in self.partitions:
            return len(self.partitions[topic])
        seen = self.lag.get(topic)
        span = seen.span if seen is not None else 0
        return span if span <= MAX_INFERRED_PARTITIONS else 0

    def metadata_events_at(self, ts: int) -> int:
        """How many of the metadata events held came at ``ts``: the members event and each topic's
        partitions event."""
        return (int(self.members_ts == ts)
                + sum(1 for at in self.partitions_ts.values() if at == ts))

    def known_capacity(self) -> dict[str, list[Any]]:
        """The capacity estimates with the members' own reports in (what every reader of the
        estimates takes: :func:`streaming.lag.reported.with_reports`)."""
        return reports.with_reports(self.capacity, self.reported)

    def count(self, counter: str, by: int = 1) -> None:
        self.counters[counter] = self.counters.get(counter, 0) + by

    def owners(self) -> Owners:
        """Who owns what under the current assignment, as index arrays per topic: what every lag
        observation sums by member (the capacity estimates, the skew reading, the retention risk).
        Built once per members' memo while ``members`` are as decoded, else anew."""
        memo = self.held_members()
        if memo is None:
            return Owners.of(self.members)
        owners = memo.derived.get("owners")
        if owners is None:
            owners = memo.derived["owners"] = Owners.of(self.members)
        return owners

    # -- serialization -------------------------------------------------------------------------

    def held_members(self) -> MembersMemo | None:
        """The decoded members' memo while ``members`` still holds exactly the members
        decoded, else None."""
        memo, members = self.members_memo, self.members
        if memo is None or members is None or len(members) != len(memo.members):
            return None
        return memo if all(a is b for a, b in zip(members, memo.members, strict=True)) else None

    def to_bytes(self) -> bytes:
        header: dict[str, Any] = {name: getattr(self, name) for name in _HEADER_FIELDS}
        header["partitions"] = {t: [[m.leader, m.replicas, m.racks] for m in parts]
                                for t, parts in self.partitions.items()}
        header["lag"] = [[t, h.rows, h.depth] for t, h in self.lag.items()]
        header["_v"] = STATE_VERSION
        head = _dumps(header)
        memo = self.held_members()
        members = memo.text if memo is not None else _dumps(
            None if self.members is None else [member_json(m) for m in self.members])
        raw = b"".join([_LENGTH.pack(len(head)), head, _LENGTH.pack(len(members)), members,
                        *(h.to_bytes() for h in self.lag.values())])
        return b"".join([LZ4_MARK, _LENGTH.pack(len(raw)), _LZ4.compress(raw, asbytes=True)])

    @classmethod
    def from_bytes(cls, blob: bytes) -> GroupState:
        """The state :meth:`to_bytes` wrote (any readable layout); :class:`UnreadableState`
        otherwise."""
        try:
            return cls._decode(blob)
        except UnreadableState:
            raise
        except Exception as exc:
            # bytes that do not decode: damaged, or not a group's state at all
            raise UnreadableState(
                f"a group's state does not decode ({type(exc).__name__}: {exc})") from exc

    @classmethod
    def _decode(cls, blob: bytes) -> GroupState:
        if blob[:4] == LZ4_MARK:
            (length,) = _LENGTH.unpack_from(blob, 4)
            raw = _LZ4.decompress(memoryview(blob)[8:], decompressed_size=length, asbytes=True)
        else:  # versions 2 and 3
            raw = zlib.decompress(blob)
        (size,) = _LENGTH.unpack_from(raw)
        header = json.loads(raw[4:4 + size])
        layout = header.pop("_v", None)
        if layout not in READABLE_VERSIONS:
            raise UnreadableState(f"written by an incompatible version (group state layout "
                                  f"{layout}; this version reads "
                                  f"{', '.join(map(str, READABLE_VERSIONS))})")
        offset = 4 + size
        memo = None
        if layout >= 4:  # the members, a JSON segment of their own
            (size,) = _LENGTH.unpack_from(raw, offset)
            memo = MembersMemo.of(raw[offset + 4:offset + 4 + size])
            offset += 4 + size
        lag = {}
        for topic, rows, depth in header.pop("lag"):
            # version 2 kept dense rows (row = partition number) and no id array
            ids = np.arange(rows, dtype=np.int64) if layout == 2 else None
            starts = layout >= 6
            n = LagHistory.byte_length(rows, depth, starts) - (8 * rows if layout == 2 else 0)
            if rows:  # an empty history, written before they were dropped, is none
                lag[topic] = LagHistory.from_bytes(raw[offset:offset + n], rows, depth, ids, starts)
            offset += n
        if layout == 2:
            header.pop("pending", None)  # never used
            # the observations already counted: a re-sent one of them must not count again
            header["skew_ts"] = max((int(h.ts.max()) for h in lag.values() if h.ts.size), default=0)
            header["skew_prev"] = max(header.get("skew_streak", 0) - 1, 0)
        if memo is not None:
            header["members"] = None if memo.text == b"null" else list(memo.members)
        elif header.get("members") is not None:
            header["members"] = [member_from_json(m) for m in header["members"]]
        header["partitions"] = {t: [PartitionMeta(*m) for m in parts]
                                for t, parts in header["partitions"].items()}
        header["counters"] = dict.fromkeys(COUNTERS, 0) | header.get("counters", {})
        state = cls(lag=lag, **header)
        state.members_memo = memo
        return state


class MembersMemo:
    """A group's members as its state's bytes held them, decoded once per worker process.

    Members change far less often than lag: most batches read a group's members and write them back
    unchanged. Decoding (and the owner arrays built from them, :meth:`GroupState.owners`) is
    memoized by the members' exact JSON bytes, and an unchanged list is written back as those bytes.
    Members are frozen, so states sharing a memo share nothing they can change; ``derived`` holds
    what is computed from the members alone (read-only)."""

    __slots__ = ("derived", "members", "text")
    _memo: ClassVar[dict[bytes, MembersMemo]] = {}
    _held: ClassVar[int] = 0
    BUDGET: ClassVar[int] = 32 << 20
    """Bytes of members JSON the process keeps decoded; past it, it starts again from empty."""

    def __init__(self, text: bytes, members: tuple[Member, ...]) -> None:
        self.text, self.members = text, members
        self.derived: dict[str, Any] = {}

    @classmethod
    def of(cls, text: bytes) -> MembersMemo:
        memo = cls._memo.get(text)
        if memo is None:
            decoded = json.loads(text)
            memo = cls(text, () if decoded is None else tuple(member_from_json(m) for m in decoded))
            if len({m.member_id for m in memo.members}) != len(memo.members):
                raise ValueError("a member id appears twice in the group's members")
            if cls._held + len(text) > cls.BUDGET:
                cls._memo.clear()
                cls._held = 0
            cls._memo[text] = memo
            cls._held += len(text)
        return memo


def _dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), sort_keys=True).encode()


_HEADER_FIELDS = tuple(f.name for f in fields(GroupState)
                       if f.name not in ("lag", "members", "members_memo"))


def member_json(m: Member) -> dict[str, Any]:
    """A member as the state's header keeps it (the layout's field names; ``assigned`` = owned)."""
    return {"member_id": m.member_id, "instance_id": m.instance_id, "client_id": m.client_id,
            "host": m.host, "rack": m.rack, "topics": list(m.topics),
            "assigned": [[t, p] for t, p in m.owned]}


def member_from_json(m: dict[str, Any]) -> Member:
    return Member(member_id=m["member_id"], topics=tuple(m["topics"]),
                  instance_id=m.get("instance_id"), rack=m.get("rack"),
                  owned=tuple((str(t), int(p)) for t, p in m["assigned"]),
                  client_id=m.get("client_id"), host=m.get("host"))

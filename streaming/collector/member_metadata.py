"""Who is in a consumer group: member metadata decoding and where each member's rack comes from.

Classic DescribeGroups returns, per member, the bytes of its last JoinGroup subscription (the
``ConsumerProtocolSubscription`` of the selected protocol) and of its current assignment
(``ConsumerProtocolAssignment``). kafka-python decodes both when it can; this module decodes the raw
bytes itself when it could not, and reads the decoded objects when it did.

Subscription wire format (non-flexible, big endian), versions 0-3 as in Kafka's
``ConsumerProtocolSubscription.json``::

    int16 version
    v0+  topics            int32 n, n x string (int16 len + UTF-8)
    v0+  user_data         nullable bytes (int32 len, -1 = null)
    v1+  owned_partitions  int32 n, n x (string topic, int32 m, m x int32)
    v2+  generation_id     int32 (-1 = unknown)
    v3+  rack_id           nullable string (int16 len, -1 = null)

A version above 3 is read as 3 (later versions only append fields), and fields missing at the end of
the bytes take their defaults (they are all "ignorable" in Kafka's schema).

A member's rack, in order of preference:

1. ``rack_id`` of subscription v3 (Java clients since 3.5 send it with ``client.rack``;
   kafka-python's built-in assignors send v0 and never do);
2. the configured rack map: an exact client id, then an exact host, then a glob pattern over either
   (``--rack-map 'orders-*=a'``);
3. a regular expression over the client id (default ``-rack-(\\w+)$``, the workload's naming),
   unless disabled.

Generation hints: subscription v2+ ``generation_id`` and the sticky assignors' user data (which
carries the generation of the member's previous assignment) say which generation the member had when
it last joined; the group's current generation is at least that plus one.
"""

from __future__ import annotations

import fnmatch
import re
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from assignors.model import Member
from streaming.collector.errors import DecodeError
from streaming.collector.observed import ObservedMember

RACK_SUFFIX = "-rack-"
"""The client-id convention for a member's rack, ``<name>-rack-<rack>`` (the workload names its
consumers so); defined here once, read by the default pattern below and by the demo's display."""
DEFAULT_CLIENT_RACK_PATTERN = RACK_SUFFIX + r"([A-Za-z0-9_.]+)$"  # the suffix holds no regex syntax


def client_id_with_rack(name: str, rack: str | None) -> str:
    """``name`` with the rack suffix of the convention (``name`` alone without a rack)."""
    return f"{name}{RACK_SUFFIX}{rack}" if rack else name


@dataclass(frozen=True)
class Subscription:
    version: int
    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: tuple[tuple[str, int], ...] = ()
    generation_id: int = -1
    rack_id: str | None = None


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = bytes(data)
        self.pos = 0

    def at_end(self) -> bool:
        return self.pos >= len(self.data)

    def _take(self, fmt: str) -> Any:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise DecodeError(f"truncated at byte {self.pos} (need {size} more)")
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return value

    def int16(self) -> int:
        return self._take(">h")

    def int32(self) -> int:
        return self._take(">i")

    def string(self, nullable: bool = False) -> str | None:
        n = self.int16()
        if n < 0:
            if nullable:
                return None
            raise DecodeError("null string where one is required")
        raw = self.data[self.pos:self.pos + n]
        if len(raw) < n:
            raise DecodeError("truncated string")
        self.pos += n
        try:
            return raw.decode()
        except UnicodeDecodeError as e:
            raise DecodeError(f"string is not UTF-8: {e}") from None

    def nullable_bytes(self) -> bytes | None:
        n = self.int32()
        if n < 0:
            return None
        raw = self.data[self.pos:self.pos + n]
        if len(raw) < n:
            raise DecodeError("truncated bytes")
        self.pos += n
        return raw

    def array(self, item) -> list:
        n = self.int32()
        if n < 0:
            return []
        if n > len(self.data):
            raise DecodeError(f"array length {n} larger than the data")
        return [item() for _ in range(n)]

    def topic_partitions(self) -> list[tuple[str, int]]:
        out: list[tuple[str, int]] = []
        for topic, parts in self.array(lambda: (self.string(), self.array(self.int32))):
            out.extend((topic, p) for p in parts)
        return out


def decode_subscription(data: bytes) -> Subscription:
    """Decode ``ConsumerProtocolSubscription`` bytes (versions 0-3; later versions read as 3)."""
    r = _Reader(data)
    version = r.int16()
    if version < 0:
        raise DecodeError(f"negative subscription version {version}")
    topics = tuple(r.array(r.string))
    user_data = r.nullable_bytes()
    owned: list[tuple[str, int]] = []
    generation = -1
    rack = None
    if version >= 1 and not r.at_end():
        owned = r.topic_partitions()
    if version >= 2 and not r.at_end():
        generation = r.int32()
    if version >= 3 and not r.at_end():
        rack = r.string(nullable=True)
    return Subscription(version, topics, user_data, tuple(sorted(owned)), generation, rack)


def decode_assignment(data: bytes) -> tuple[tuple[str, int], ...]:
    """The partitions of ``ConsumerProtocolAssignment`` bytes (versions 0-3 share this prefix)."""
    if not data:
        return ()
    r = _Reader(data)
    if r.int16() < 0:
        raise DecodeError("negative assignment version")
    return tuple(sorted(r.topic_partitions()))


def sticky_user_data_generation(user_data: bytes | None) -> int | None:
    """The generation in the sticky assignors' user data, or None.

    ``StickyAssignorUserData`` v1 is the previous assignment then an int32 generation. Java writes
    it without a version header; kafka-python 3.x writes an int16 version first. Both are tried, and
    only a reading that consumes the bytes exactly counts.
    """
    if not user_data:
        return None
    for skip in (0, 2):
        r = _Reader(user_data)
        try:
            if skip and r.int16() != 1:
                continue
            r.topic_partitions()
            if r.pos + 4 != len(r.data):
                continue
            generation = r.int32()
        except DecodeError:
            continue
        return generation if generation >= 0 else None
    return None


def json_bytes(text: str) -> bytes:
    """Undo kafka-python's ``to_dict`` of a bytes field
    (``bytes.decode(errors='backslashreplace')``)."""
    out = bytearray()
    i = 0
    hexdigits = "0123456789abcdefABCDEF"
    while i < len(text):
        if (text.startswith("\\x", i) and len(text) >= i + 4
                and all(c in hexdigits for c in text[i + 2:i + 4])):
            out.append(int(text[i + 2:i + 4], 16))
            i += 4
        else:
            out += text[i].encode("utf-8", "surrogatepass")
            i += 1
    return bytes(out)


def _as_bytes(value: Any) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, str):
        return json_bytes(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    try:
        return value.encode(header=False)
    except Exception:
        return None


def _pairs(items: Any) -> list[tuple[str, int]]:
    """(topic, partition) pairs from ``[{topic, partitions}]`` dicts, data objects or (topic, [p])
    tuples."""
    out: list[tuple[str, int]] = []
    for item in items or ():
        if isinstance(item, Mapping):
            topic, parts = item.get("topic"), item.get("partitions")
        elif isinstance(item, tuple | list):
            topic, parts = item[0], item[1]
        else:
            topic, parts = getattr(item, "topic", None), getattr(item, "partitions", None)
        if isinstance(topic, str):  # an entry without a topic name says nothing we can use
            out.extend((topic, int(p)) for p in parts or ())
    return out


def subscription_from(metadata: Any) -> Subscription | None:
    """A :class:`Subscription` from what kafka-python's ``describe_groups`` gives: a dict (its
    ``to_dict`` of the decoded subscription; the fields present tell the version), raw bytes or
    their ``to_dict`` string when kafka-python could not decode them, or a decoded object. None when
    unreadable."""
    if metadata is None or metadata in (b"", ""):
        return None
    if isinstance(metadata, str | bytes | bytearray | memoryview):
        try:
            return decode_subscription(_as_bytes(metadata) or b"")
        except DecodeError:
            return None
    if isinstance(metadata, Mapping):
        get = metadata.get
        has = metadata.__contains__
        version = (3 if has("rack_id") else 2 if has("generation_id")
                   else 1 if has("owned_partitions") else 0)
    else:
        def get(name: str, default: Any = None) -> Any:
            return getattr(metadata, name, default)
        version = int(getattr(metadata, "version", 0) or 0)
    generation = get("generation_id", -1)
    return Subscription(
        version=version,
        topics=tuple(get("topics") or ()),
        user_data=_as_bytes(get("user_data")),
        owned_partitions=tuple(sorted(_pairs(get("owned_partitions")))),
        generation_id=-1 if generation is None else int(generation),
        rack_id=get("rack_id") or None,
    )


def assignment_from(assignment: Any) -> tuple[tuple[str, int], ...]:
    """The partitions of a member's assignment, in any of the shapes :func:`subscription_from`
    takes."""
    if assignment is None or assignment in (b"", ""):
        return ()
    if isinstance(assignment, str | bytes | bytearray | memoryview):
        try:
            return decode_assignment(_as_bytes(assignment) or b"")
        except DecodeError:
            return ()
    if isinstance(assignment, Mapping):
        return tuple(sorted(_pairs(assignment.get("assigned_partitions"))))
    if hasattr(assignment, "partitions"):
        return tuple(sorted((tp.topic, int(tp.partition)) for tp in assignment.partitions()))
    return ()


STICKY_PROTOCOLS = frozenset({"sticky", "cooperative-sticky"})
"""The classic protocols whose user data is ``StickyAssignorUserData``; other assignors' user data
is their own (Kafka Streams' ``stream`` carries its SubscriptionInfo) and is never read as a
generation."""


def generation_hint(sub: Subscription | None, sticky: bool = True) -> int | None:
    """The least generation the group can be in, from what the member sent when it joined;
    ``sticky``: its user data is the sticky assignors' (see :data:`STICKY_PROTOCOLS`)."""
    if sub is None:
        return None
    from_user_data = sticky_user_data_generation(sub.user_data) if sticky else None
    known = [g for g in (sub.generation_id, from_user_data) if g is not None and g >= 0]
    return max(known) + 1 if known else None


@dataclass(frozen=True)
class RackResolver:
    """client id / host -> rack, for members whose subscription carries no rack."""

    mapping: Mapping[str, str] = field(default_factory=dict)
    client_id_pattern: str | None = DEFAULT_CLIENT_RACK_PATTERN

    @classmethod
    def parse(cls, items: Iterable[str], client_id_pattern: str | None = DEFAULT_CLIENT_RACK_PATTERN
              ) -> RackResolver:
        mapping: dict[str, str] = {}
        for item in items:
            key, sep, rack = item.rpartition("=")
            if not sep or not key.strip() or not rack.strip():
                raise ValueError(f"--rack-map {item!r}: expected CLIENT_OR_HOST=RACK")
            mapping[key.strip()] = rack.strip()
        if client_id_pattern:
            re.compile(client_id_pattern)
        return cls(mapping, client_id_pattern or None)

    def rack_for(self, client_id: str | None, host: str | None,
                 subscription_rack: str | None = None) -> str | None:
        if subscription_rack:
            return subscription_rack
        for key in (client_id, host):
            if key and key in self.mapping:
                return self.mapping[key]
        for pattern, rack in self.mapping.items():
            if any(ch in pattern for ch in "*?[") and any(k and fnmatch.fnmatchcase(k, pattern)
                                                          for k in (client_id, host)):
                return rack
        if self.client_id_pattern and client_id:
            m = re.search(self.client_id_pattern, client_id)
            if m:
                return m.group(1) if m.groups() else m.group(0)
        return None


def normalise_host(host: str | None) -> str:
    """Kafka reports the client host as ``/127.0.0.1``; the slash is an artefact of Java's
    InetAddress."""
    return (host or "").lstrip("/")


def member_from(described: Mapping[str, Any], racks: RackResolver,
                protocol: str | None = None) -> ObservedMember:
    """An :class:`ObservedMember` from one member dict of kafka-python's ``describe_groups``."""
    sub = subscription_from(described.get("member_metadata"))
    client_id = described.get("client_id") or ""
    host = normalise_host(described.get("client_host"))
    member = Member(
        member_id=described["member_id"],
        topics=tuple(sorted(set(sub.topics))) if sub else (),
        instance_id=described.get("group_instance_id"),
        rack=racks.rack_for(client_id, host, sub.rack_id if sub else None),
        owned=assignment_from(described.get("member_assignment")),
        client_id=client_id,
    )
    # the group's selected protocol says whose user data it is (None: not known, read as sticky if
    # it parses)
    sticky = protocol is None or protocol in STICKY_PROTOCOLS
    return ObservedMember(member, host, generation_hint=generation_hint(sub, sticky))

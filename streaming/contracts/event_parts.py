"""Metadata events too large for one Kafka message travel as parts, and are
put together again in state.

Kafka brokers refuse a message above ``message.max.bytes`` (about 1 MB by default; a cluster may not
let us raise a topic's limit), and a ``members`` event of a 10,000-member group or a ``partitions``
event of a 50,000-partition topic is several MB of JSON. So the publisher cuts such an event into
parts of at most ``max_bytes`` each: every part is the event with a slice of its list (``members``
or ``partitions``) and two more fields, ``part`` (0-based index) and ``parts`` (how many)::

    {"type": "partitions", "ts": 1763700000000, "group": "g", "topic": "big", "part": 2, "parts": 5,
     "partitions": [{"partition": 20000, ...}, ...]}

A member whose own entry is too large (one member owning tens of thousands of partitions) is cut
too: its pieces repeat the member with a slice of ``assigned`` and are merged back by ``member_id``.

A ``lag_dense`` event too large is cut differently: into ``lag_dense`` events of the same poll, each
with a slice of the entries and complete on its own (no ``part``/``parts``): the state takes a
poll's readings of one topic from any number of records, as it takes them from one ``lag`` event per
partition.

The parts of one event share its :func:`key` (type, topic, ts, generation, parts), so a re-sent
event fills the same slots and parts of different events never mix. Events small enough travel
whole, without the two fields, as before.
"""

from __future__ import annotations

import json
from typing import Any

from streaming.contracts.events import DENSE_ARRAYS, LAG_DENSE, MEMBERS, OPTIONAL_ARRAYS, PARTITIONS

LIST_FIELD = {MEMBERS: "members", PARTITIONS: "partitions"}
MAX_PARTS = 10_000
"""More parts than this is not an event the collector wrote."""
MAX_PART_BYTES = 512 * 1024
"""The publisher's default part size: half of Kafka's 1 MB message and request defaults."""


def _size(value: Any) -> int:
    # events.encode writes compact ASCII JSON: one character, one byte
    return len(json.dumps(value, separators=(",", ":")))


def split(event: dict[str, Any], max_bytes: int) -> list[dict[str, Any]]:
    """``event`` as parts whose encoded values are at most ``max_bytes`` each ([event] when it
    fits)."""
    name = LIST_FIELD.get(event.get("type", ""))
    if (name is None and event.get("type") != LAG_DENSE) or _size(event) <= max_bytes:
        return [event]
    if name is None:
        return _dense_slices(event, max_bytes)
    base = {k: v for k, v in event.items() if k != name}
    budget = max_bytes - _size(base | {name: [], "part": MAX_PARTS, "parts": MAX_PARTS})
    pieces = [p for entry in event[name] for p in _pieces(entry, budget, name)]
    chunks: list[list[Any]] = [[]]
    used = 0
    for piece, size in pieces:
        size += 1  # and its comma
        if chunks[-1] and used + size > budget:
            chunks.append([])
            used = 0
        chunks[-1].append(piece)
        used += size
    if len(chunks) > MAX_PARTS:
        raise ValueError(f"{event['type']} event of group {event.get('group')} needs "
                         f"{len(chunks)} parts of {max_bytes} bytes, more than {MAX_PARTS}")
    return [base | {name: chunk, "part": i, "parts": len(chunks)} for i, chunk in enumerate(chunks)]


def _dense_slices(event: dict[str, Any], max_bytes: int) -> list[dict[str, Any]]:
    """A ``lag_dense`` event as ``lag_dense`` events of consecutive slices of its entries, each
    within ``max_bytes`` (entries are alike in size: slices of equal count, more of them until each
    fits)."""
    arrays = [a for a in (*DENSE_ARRAYS, *OPTIONAL_ARRAYS) if a in event]
    n = len(event["partitions"])
    slices = max(2, -(-_size(event) // max_bytes))
    while True:
        step = -(-n // slices)
        out = [event | {a: event[a][i:i + step] for a in arrays} for i in range(0, n, step)]
        if all(_size(e) <= max_bytes for e in out):
            return out
        if step == 1:
            raise ValueError(f"one entry of a lag_dense event exceeds {max_bytes} bytes")
        slices *= 2


def _pieces(entry: dict[str, Any], budget: int, name: str) -> list[tuple[dict[str, Any], int]]:
    """(piece, encoded size) of one list entry: the entry itself, or for a member too large on its
    own, copies of it each with a slice of ``assigned``."""
    size = _size(entry)
    if size < budget:
        return [(entry, size)]
    if name != "members":
        raise ValueError(f"one {name} entry of {size} bytes exceeds the part budget of {budget} "
                         "bytes")
    head = {**entry, "assigned": []}
    room = budget - _size(head) - 1
    out: list[tuple[dict[str, Any], int]] = []
    chunk: list[Any] = []
    used = 0
    for tp in entry.get("assigned") or []:
        size = _size(tp) + 1
        if chunk and used + size > room:
            out.append(({**entry, "assigned": chunk}, _size(head) + used))
            chunk, used = [], 0
        chunk.append(tp)
        used += size
    out.append(({**entry, "assigned": chunk}, _size(head) + used))
    return out


def is_part(event: dict[str, Any]) -> bool:
    return event.get("parts") is not None


def _whole(value: Any) -> int | None:
    """``value`` as an int when it is a whole number (parsed rows may carry floats), else None."""
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return int(f) if f.is_integer() else None


def normalized_part(event: dict[str, Any]) -> dict[str, Any] | None:
    """The part with int ``part``/``parts``, or None unless ``0 <= part < parts <= MAX_PARTS`` and
    it carries its list."""
    part, parts = _whole(event.get("part")), _whole(event.get("parts"))
    name = LIST_FIELD.get(event.get("type", ""))
    if name is None or not isinstance(event.get(name), list) or part is None or parts is None:
        return None
    if not 0 <= part < parts <= MAX_PARTS:
        return None
    return {**event, "part": part, "parts": parts}


def key(event: dict[str, Any]) -> str:
    """Which event a part belongs to (the same for every part of it, and for a re-sent copy)."""
    gen = event.get("generation")
    return json.dumps([event["type"], event.get("topic") or "", int(event["ts"]),
                       None if gen is None else int(gen), int(event["parts"])])


def join(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """The whole event from all its parts (any order); a member cut into pieces is one member
    again."""
    ordered = sorted(parts, key=lambda p: p["part"])
    name = LIST_FIELD[ordered[0]["type"]]
    entries = [x for p in ordered for x in p[name]]
    if name == "members":
        merged: dict[str, dict[str, Any]] = {}
        for m in entries:
            if m["member_id"] in merged:
                merged[m["member_id"]]["assigned"] = (merged[m["member_id"]]["assigned"]
                                                      + list(m.get("assigned") or []))
            else:
                merged[m["member_id"]] = {**m, "assigned": list(m.get("assigned") or [])}
        entries = list(merged.values())
    event = {k: v for k, v in ordered[0].items() if k not in ("part", "parts", name)}
    event[name] = entries
    return event

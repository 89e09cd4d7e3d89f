"""What the stateful step assumes about an event row, written once: the rows
:mod:`streaming.job.validate` accepts.

The step (:mod:`streaming.job.stateful`, :func:`streaming.policy.recommend.process`) reads the rows
of ``validate.parse`` that carry a ``type``, and relies on nothing else about them than this.
Validation guarantees it (tests/integration/test_whole_record.py checks every accepted row of
records drawn from the contract against :func:`problem`), and no row it admits makes the step raise
(tests/unit/streaming/job/test_validated_events.py draws rows from this statement alone,
:mod:`streaming.dev.fuzz.valid_rows`, and runs them through the step in both state layouts). An
assumption the step comes to need is added here first, then to validation.

A row (the columns of :func:`streaming.job.validate.parse`):

- ``type`` one of the four types; ``ts`` an integer in 1..:data:`MAX_TS_MS`; ``group`` a non-empty
  string; ``source_partition``/``source_offset`` integers (where the record came from);
- ``lag``: ``topic`` a legal topic name, ``partition`` in 0..2^31-1, ``0 <= committed_offset <=
  end_offset <= 2^63-1``; ``log_starts`` null or one offset in 0..``end_offset``;
- ``lag_dense``: ``topic`` legal; ``readings`` n >= 1 partitions (unique, in 0..2^31-1), then their
  n committed offsets, then their n end offsets (each at or above its committed one, all in
  0..2^63-1); ``log_starts`` null or n offsets, each in 0..its end offset; ``detail`` null or a JSON
  list (the record's bad entries). A record whose every entry is bad has no readings and a non-empty
  ``detail``: the step applies nothing of it (it counts as rejected,
  :func:`streaming.job.stateful.row_masks`);
- ``members``: ``detail`` a JSON object: ``generation`` (absent or -1..2^31-1), ``protocol`` (absent
  or a string), ``members`` a list of objects with a non-empty string ``member_id`` (unique unless
  the event is a part), optional strings ``instance_id``, ``client_id``, ``host``, ``rack``,
  ``topics`` (absent or legal topic names) and ``assigned`` (absent or ``[topic, partition]`` pairs,
  the partition a decimal string in 0..2^31-1);
- ``partitions``: ``topic`` legal; ``detail`` a JSON object whose ``partitions`` is a list of
  objects, their ``partition`` numbers exactly 0..n-1 (when not a part; unique in a part), each with
  ``leader`` absent or a broker id (-1..2^31-1), ``replicas`` broker ids (0..2^31-1),
  ``replica_racks`` strings or nulls, one per replica (absent when there is none);
- a part of a split event: ``part``/``parts`` integers with ``0 <= part < parts <= MAX_PARTS``;
- ``metadata_events`` null (a row from before it) or an integer in 0..2^31-1: a lag row's count of
  its poll's metadata events (:mod:`streaming.state.whole`), 0 for other rows.

Extra fields of the record never reach the row; a message key either matched the group or was
absent.
"""

from __future__ import annotations

import json
import string
from typing import Any

import numpy as np

from streaming.contracts.event_parts import MAX_PARTS
from streaming.contracts.events import LAG, LAG_DENSE, MEMBERS, METADATA_EVENTS, PARTITIONS

INT_MAX, LONG_MAX = 2**31 - 1, 2**63 - 1
MAX_TS_MS = LONG_MAX // 1000
"""The largest ``ts``: the last epoch millisecond a Spark timestamp holds
(:mod:`streaming.job.event_time`)."""
TOPIC_CHARS = frozenset(string.ascii_letters + string.digits + "._-")


def as_int(value: Any) -> int | None:
    """``value`` as an int when it is an integer (not a bool), else None."""
    return (
        int(value) if isinstance(value, int | np.integer) and not isinstance(value, bool) else None
    )


def is_int(value: Any, lo: int, hi: int) -> bool:
    """An integer (not a bool) in lo..hi."""
    v = as_int(value)
    return v is not None and lo <= v <= hi


def is_topic(name: Any) -> bool:
    return (
        isinstance(name, str)
        and 1 <= len(name) <= 249
        and name not in (".", "..")
        and set(name) <= TOPIC_CHARS
    )


def _optional_string(value: Any) -> bool:
    return value is None or isinstance(value, str)


def problem(row: dict[str, Any]) -> str | None:
    """The first assumption the row breaks, or None when the step may take it."""
    kind, group = row.get("type"), row.get("group")
    if kind not in (LAG, LAG_DENSE, MEMBERS, PARTITIONS):
        return f"type {kind!r}"
    if not is_int(row.get("ts"), 1, MAX_TS_MS):
        return f"ts {row.get('ts')!r}"
    if not isinstance(group, str) or not group:
        return f"group {group!r}"
    if not (
        is_int(row.get("source_partition"), 0, INT_MAX)
        and is_int(row.get("source_offset"), 0, LONG_MAX)
    ):
        return "source"
    if kind in (LAG, LAG_DENSE, PARTITIONS) and not is_topic(row.get("topic")):
        return f"topic {row.get('topic')!r}"
    if row.get(METADATA_EVENTS) is not None and not is_int(row[METADATA_EVENTS], 0, INT_MAX):
        return METADATA_EVENTS
    return {LAG: _lag, LAG_DENSE: _dense, MEMBERS: _members, PARTITIONS: _partitions}[kind](row)


def _lag(row: dict[str, Any]) -> str | None:
    end = as_int(row.get("end_offset"))
    if not is_int(row.get("partition"), 0, INT_MAX):
        return "partition"
    if end is None or not (0 <= end <= LONG_MAX and is_int(row.get("committed_offset"), 0, end)):
        return "offsets"
    return _starts(row.get("log_starts"), [end])


def _starts(starts: Any, ends: list[int]) -> str | None:
    if starts is None:
        return None
    starts = list(starts)
    if len(starts) != len(ends) or not all(
        is_int(s, 0, e) for s, e in zip(starts, ends, strict=True)
    ):
        return "log starts"
    return None


def _dense(row: dict[str, Any]) -> str | None:
    readings, detail = row.get("readings"), row.get("detail")
    if (
        readings is None or len(readings) == 0
    ):  # no good entry: a carrier of its bad ones, which the step applies not
        return (
            None
            if detail is not None and json.loads(detail) and isinstance(json.loads(detail), list)
            else "readings"
        )
    if len(readings) % 3:
        return "readings"
    packed = [as_int(x) for x in list(readings)]
    n = len(packed) // 3
    parts, committed, ends = packed[:n], packed[n : 2 * n], packed[2 * n :]
    if not all(is_int(p, 0, INT_MAX) for p in parts) or len(set(parts)) != n:
        return "partitions"
    if not all(
        e is not None and 0 <= e <= LONG_MAX and is_int(c, 0, e)
        for c, e in zip(committed, ends, strict=True)
    ):
        return "offsets"
    if detail is not None and not isinstance(json.loads(detail), list):
        return "detail"
    return _starts(row.get("log_starts"), [e or 0 for e in ends])  # every end checked an int above


def _detail(row: dict[str, Any], name: str) -> tuple[dict[str, Any] | None, str | None]:
    """The metadata row's detail and its problem with the parts and the list ``name``."""
    try:
        detail = json.loads(row["detail"])
    except (TypeError, ValueError, KeyError):
        return None, "detail"
    if not isinstance(detail, dict) or not isinstance(detail.get(name), list):
        return None, name
    part, parts = detail.get("part"), as_int(detail.get("parts"))
    if (part, detail.get("parts")) != (None, None) and not (
        parts is not None and 1 <= parts <= MAX_PARTS and is_int(part, 0, parts - 1)
    ):
        return None, "part"
    return detail, None


def _members(row: dict[str, Any]) -> str | None:
    detail, bad = _detail(row, "members")
    if detail is None:
        return bad
    if detail.get("generation") is not None and not is_int(detail["generation"], -1, INT_MAX):
        return "generation"
    if not _optional_string(detail.get("protocol")):
        return "protocol"
    ids = []
    for m in detail["members"]:
        if not isinstance(m, dict) or not isinstance(m.get("member_id"), str) or not m["member_id"]:
            return "member_id"
        if not all(
            _optional_string(m.get(k)) for k in ("instance_id", "client_id", "host", "rack")
        ):
            return "member strings"
        if not all(is_topic(t) for t in m.get("topics") or []):
            return "member topics"
        if not all(_assigned(a) for a in m.get("assigned") or []):
            return "assigned"
        ids.append(m["member_id"])
    whole = detail.get("parts") is None
    return "duplicate member_id" if whole and len(set(ids)) != len(ids) else None


def _assigned(entry: Any) -> bool:
    return (
        isinstance(entry, list)
        and len(entry) == 2
        and is_topic(entry[0])
        and isinstance(entry[1], str)
        and entry[1].isdigit()
        and entry[1].isascii()
        and int(entry[1]) <= INT_MAX
    )


def _partitions(row: dict[str, Any]) -> str | None:
    detail, bad = _detail(row, "partitions")
    if detail is None:
        return bad
    numbers = []
    for p in detail["partitions"]:
        if not isinstance(p, dict) or not is_int(p.get("partition"), 0, INT_MAX):
            return "partition"
        if p.get("leader") is not None and not is_int(p["leader"], -1, INT_MAX):
            return "leader"
        replicas, racks = p.get("replicas"), p.get("replica_racks")
        if not isinstance(replicas, list) or not all(is_int(r, 0, INT_MAX) for r in replicas):
            return "replicas"
        racks = [] if racks is None else racks
        if (
            not isinstance(racks, list)
            or len(racks) != len(replicas)
            or not all(map(_optional_string, racks))
        ):
            return "replica_racks"
        numbers.append(int(p["partition"]))
    if len(set(numbers)) != len(numbers):
        return "duplicate partitions"
    whole = detail.get("parts") is None
    return (
        "partitions not 0..n-1" if whole and numbers and max(numbers) != len(numbers) - 1 else None
    )

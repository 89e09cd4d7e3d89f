"""Seeded malformed, extreme and adversarial Kafka records for the job's event topics, each
labelled.

Every record says what the job must do with it: ``expected`` is the start of the reason it must be
rejected with (:mod:`streaming.job.validate`), :data:`VALID` for an extreme record that must be
accepted, or :data:`LATE` for one that must come out as rejected with reason ``late`` once the
watermark is past it. Each record gets a group of its own (``fz-<i>``, unless the kind is about the
group), so what the stateful step does with one cannot change another; or (``groups``) they share a
few groups, where nothing one record does may cost another.

Pure Python, no Spark or Kafka: the fuzz integration test and ``python -m streaming.dev.fuzz`` send
these through the real job. The same seed, ``ts`` and size limit give the same records.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from streaming.contracts import events as ev

VALID = "valid"
LATE = "late"
ANY = "any"
"""The label of a record drawn from the contract (:mod:`streaming.dev.fuzz.contract`): valid, or
rejected with a reason, whichever the rules say."""
LAG_ROLE = "lag"
META_ROLE = "metadata"
LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1


@dataclass(frozen=True)
class Record:
    kind: str
    role: str
    """``lag`` or ``metadata``: which of the job's two topics the record goes to."""
    key: bytes | None
    value: bytes | None
    expected: str
    kafka_ts: int | None = None
    """The record's Kafka timestamp (epoch ms): None, the producer's clock; -1, none (as a v0
    record has)."""


@dataclass(frozen=True)
class Ctx:
    """What one record's maker gets: a seeded random source, its group, an on-time ``ts``, the size
    limit."""

    rng: random.Random
    group: str
    ts: int
    max_value_bytes: int


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def _lag(c: Ctx, **fields: Any) -> dict[str, Any]:
    c_off = c.rng.randrange(0, 10**6)
    base = ev.lag_event(c.ts, c.group, "t0", c.rng.randrange(0, 8), c_off,
                        c_off + c.rng.randrange(0, 10**4))
    return base | fields


def _member(mid: str, parts: list[int], **extra: Any) -> dict[str, Any]:
    return ev.member_entry(mid, ["t0"], [("t0", p) for p in parts], client_id=f"client-{mid}",
                           host="/10.0.0.1", rack="a") | extra


def _members(c: Ctx, members: Any = None, **fields: Any) -> dict[str, Any]:
    members = members if members is not None else [_member("m-0", [0, 1]), _member("m-1", [2, 3])]
    return {"type": ev.MEMBERS, "ts": c.ts, "group": c.group, "generation": 3, "protocol": "range",
            "members": members} | fields


def _partition(p: int, **extra: Any) -> dict[str, Any]:
    return ev.partition_entry(p, 1, [1, 2], ["a", "b"]) | extra


def _partitions(c: Ctx, partitions: Any = None, **fields: Any) -> dict[str, Any]:
    partitions = partitions if partitions is not None else [_partition(p) for p in range(4)]
    return {"type": ev.PARTITIONS, "ts": c.ts, "group": c.group, "topic": "t0",
            "partitions": partitions} | fields


def _without(event: dict[str, Any], name: str) -> dict[str, Any]:
    return {k: v for k, v in event.items() if k != name}


def _text(event: dict[str, Any], old: str, new: str) -> bytes:
    """The event's JSON with one literal piece of text replaced (for what json.dumps cannot
    write)."""
    raw = _dumps(event).decode()
    assert old in raw, (old, raw)
    return raw.replace(old, new, 1).encode()


Maker = Callable[[Ctx], tuple[str, bytes | None, str]]
"""-> (role, value, expected); the key is the group unless the kind says otherwise."""

KINDS: dict[str, Maker] = {
    # -- not an event at all
    "not_json": lambda c: (META_ROLE, b"not json at all", "not valid JSON"),
    "truncated_json": lambda c: (LAG_ROLE, _dumps(_lag(c))[:-7], "not valid JSON"),
    "whitespace_only": lambda c: (LAG_ROLE, b"  \n\t ", "not valid JSON"),
    "json_array": lambda c: (META_ROLE, b"[1, 2, 3]", "not a JSON object"),
    "json_number": lambda c: (LAG_ROLE, b"42", "not a JSON object"),
    "json_string": lambda c: (LAG_ROLE, b'"lag"', "not a JSON object"),
    "json_null": lambda c: (META_ROLE, b"null", "not a JSON object"),
    "empty_value": lambda c: (LAG_ROLE, b"", "empty value"),
    "null_value": lambda c: (LAG_ROLE, None, "null value"),
    "huge_value": lambda c: (META_ROLE, _dumps(_lag(c, pad="x" * (c.max_value_bytes + 100))),
                             "value of "),
    "invalid_utf8": lambda c: (LAG_ROLE, _dumps(_lag(c, topic="tX")).replace(b"tX", b"t\xff"),
                               "value is not valid UTF-8"),
    "nan_literal": lambda c: (LAG_ROLE, _text(_lag(c, end_offset=12345), "12345", "NaN"),
                              "not valid JSON"),
    "infinity_literal": lambda c: (LAG_ROLE, _text(_lag(c, end_offset=12345), "12345", "Infinity"),
                                   "not valid JSON"),
    "deep_nesting": lambda c: (
        LAG_ROLE, _text(_lag(c, x=0), '"x":0', '"x":' + "[" * 3000 + "]" * 3000), "not valid JSON"),
    "duplicate_key": lambda c: (LAG_ROLE, _text(_lag(c), '"ts":', '"ts":1,"ts":'), "duplicate key"),
    "duplicate_nested_key": lambda c: (
        META_ROLE, _text(_members(c), '"rack":"a"', '"rack":"a","rack":"b"'), "duplicate key"),
    "trailing_garbage": lambda c: (LAG_ROLE, _dumps(_lag(c)) + b" garbage",
                                   "trailing data after the JSON object"),
    "trailing_object": lambda c: (LAG_ROLE, _dumps(_lag(c)) + b'{"type":"lag"}',
                                  "trailing data after"),
    "trailing_brace": lambda c: (META_ROLE, _dumps(_members(c)) + b"}", "trailing data after"),
    "trailing_string": lambda c: (META_ROLE, _dumps(_partitions(c)) + b' "}"',
                                  "trailing data after"),
    "empty_object": lambda c: (LAG_ROLE, b"{}", "missing field type"),
    # -- envelope fields
    "missing_type": lambda c: (LAG_ROLE, _dumps(_without(_lag(c), "type")), "missing field type"),
    "type_number": lambda c: (LAG_ROLE, _dumps(_lag(c, type=1)), "field type is not a string"),
    "type_null": lambda c: (LAG_ROLE, _dumps(_lag(c, type=None)), "field type is not a string"),
    "unknown_type": lambda c: (META_ROLE, _dumps(_lag(c, type="offsets")), "unknown type offsets"),
    "missing_ts": lambda c: (LAG_ROLE, _dumps(_without(_lag(c), "ts")), "missing field ts"),
    "ts_string": lambda c: (LAG_ROLE, _dumps(_lag(c, ts=str(c.ts))), "field ts is not an integer"),
    "ts_float": lambda c: (LAG_ROLE, _text(_lag(c), f'"ts":{c.ts}', f'"ts":{c.ts}.0'),
                           "field ts is not an integer"),
    "ts_1e400": lambda c: (LAG_ROLE, _text(_lag(c), f'"ts":{c.ts}', '"ts":1e400'),
                           "field ts is not an integer"),
    "ts_negative": lambda c: (LAG_ROLE, _dumps(_lag(c, ts=-5)), "ts -5 is not positive"),
    "ts_zero": lambda c: (META_ROLE, _dumps(_members(c, ts=0)), "ts 0 is not positive"),
    "ts_overflow": lambda c: (LAG_ROLE, _dumps(_lag(c, ts=2**63)), "field ts is not an integer"),
    "ts_long_max": lambda c: (LAG_ROLE, _dumps(_lag(c, ts=LONG_MAX)),
                              f"ts {LONG_MAX} is more than"),
    "ts_far_future": lambda c: (META_ROLE, _dumps(_members(c, ts=c.ts + 365 * 86_400_000)),
                                f"ts {c.ts + 365 * 86_400_000} is more than"),
    "ts_far_past": lambda c: (LAG_ROLE, _dumps(_lag(c, ts=86_400_000)), LATE),
    "missing_group": lambda c: (LAG_ROLE, _dumps(_without(_lag(c), "group")),
                                "missing field group"),
    "group_number": lambda c: (LAG_ROLE, _dumps(_lag(c, group=12345)),
                               "field group is not a string"),
    "group_object": lambda c: (META_ROLE, _dumps(_members(c, group={"name": c.group})),
                               "field group is not a string"),
    "group_empty": lambda c: (LAG_ROLE, _dumps(_lag(c, group="")), "empty group"),
    "group_too_long": lambda c: (LAG_ROLE, _dumps(_lag(c, group="g" * 32768)),
                                 "group longer than 32767"),
    "group_control_chars": lambda c: (LAG_ROLE, _dumps(_lag(c, group=c.group + "\u0007\n")),
                                      "group has control characters"),
    "key_mismatch": lambda c: (LAG_ROLE, _dumps(_lag(c, group=c.group + "-other")),
                               "message key does not match"),
    "lag_on_metadata_topic": lambda c: (META_ROLE, _dumps(_lag(c)), "a lag event on topic"),
    "members_on_lag_topic": lambda c: (LAG_ROLE, _dumps(_members(c)), "a members event on topic"),
    # -- lag fields
    "topic_number": lambda c: (LAG_ROLE, _dumps(_lag(c, topic=7)), "field topic is not a string"),
    "topic_illegal_chars": lambda c: (LAG_ROLE, _dumps(_lag(c, topic="orders/eu west")),
                                      "invalid topic name"),
    "topic_unicode": lambda c: (LAG_ROLE, _dumps(_lag(c, topic="ordérs")), "invalid topic name"),
    "topic_dot": lambda c: (LAG_ROLE, _dumps(_lag(c, topic=c.rng.choice([".", ".."]))),
                            "invalid topic name"),
    "topic_too_long": lambda c: (LAG_ROLE, _dumps(_lag(c, topic="t" * 250)), "invalid topic name"),
    "topic_empty": lambda c: (LAG_ROLE, _dumps(_lag(c, topic="")), "invalid topic name"),
    "partition_string": lambda c: (LAG_ROLE, _dumps(_lag(c, partition="3")),
                                   "field partition is not an integer"),
    "partition_float": lambda c: (
        LAG_ROLE, _text(_lag(c, partition=1000), '"partition":1000', '"partition":1000.0'),
        "field partition is not an integer"),
    "partition_negative": lambda c: (LAG_ROLE, _dumps(_lag(c, partition=-1)),
                                     "negative partition -1"),
    "partition_int_overflow": lambda c: (LAG_ROLE, _dumps(_lag(c, partition=2**31)),
                                         f"partition {2**31} above"),
    "partition_bool": lambda c: (LAG_ROLE, _dumps(_lag(c, partition=True)),
                                 "field partition is not an integer"),
    "committed_negative": lambda c: (LAG_ROLE, _dumps(_lag(c, committed_offset=-5, end_offset=3)),
                                     "negative committed_offset -5"),
    "committed_string": lambda c: (LAG_ROLE, _dumps(_lag(c, committed_offset="5")),
                                   "field committed_offset is not an integer"),
    "end_below_committed": lambda c: (LAG_ROLE, _dumps(_lag(c, committed_offset=50, end_offset=9)),
                                      "end_offset 9 below committed_offset 50"),
    "offset_overflow": lambda c: (LAG_ROLE, _dumps(_lag(c, committed_offset=5, end_offset=2**63)),
                                  "field end_offset is not an integer"),
    "offset_huge_number": lambda c: (LAG_ROLE, _dumps(_lag(c, end_offset=10**40)),
                                     "field end_offset is not an"),
    "missing_end_offset": lambda c: (LAG_ROLE, _dumps(_without(_lag(c), "end_offset")),
                                     "missing field end_offset"),
    "offsets_array": lambda c: (LAG_ROLE, _dumps(_lag(c, end_offset=[1])),
                                "field end_offset is not an integer"),
    "no_commit_string": lambda c: (LAG_ROLE, _dumps(_lag(c, no_commit="yes")),
                                   "field no_commit is not a boolean"),
    # -- members fields
    "generation_string": lambda c: (META_ROLE, _dumps(_members(c, generation="3")),
                                    "field generation is not an integer"),
    "generation_overflow": lambda c: (META_ROLE, _dumps(_members(c, generation=2**31)),
                                      "generation out of range"),
    "protocol_number": lambda c: (META_ROLE, _dumps(_members(c, protocol=5)),
                                  "field protocol is not a string"),
    "members_object": lambda c: (META_ROLE, _dumps(_members(c, members={"m-0": {}})),
                                 "field members is not a list of members"),
    "member_without_id": lambda c: (
        META_ROLE, _dumps(_members(c, [_without(_member("m", [0]), "member_id")])),
        "a member has no member_id"),
    "member_id_number": lambda c: (
        META_ROLE, _dumps(_members(c, [_member("m", [0]) | {"member_id": 17}])),
        "a member has no member_id"),
    "member_not_object": lambda c: (META_ROLE, _dumps(_members(c, ["m-0"])),
                                    "a member has no member_id"),
    "duplicate_member_id": lambda c: (
        META_ROLE, _dumps(_members(c, [_member("m", [0]), _member("m", [1])])),
        "duplicate member_id"),
    "assigned_short": lambda c: (
        META_ROLE, _dumps(_members(c, [_member("m", [0]) | {"assigned": [["t0"]]}])),
        "an assigned entry is not"),
    "assigned_partition_float_text": lambda c: (
        META_ROLE, _dumps(_members(c, [_member("m", [0]) | {"assigned": [["t0", "1000.0"]]}])),
        "an assigned entry is not"),
    "assigned_partition_float": lambda c: (
        META_ROLE, _dumps(_members(c, [_member("m", [0]) | {"assigned": [["t0", 1.5]]}])),
        "an assigned entry is not"),
    "assigned_object": lambda c: (
        META_ROLE,
        _dumps(_members(c, [_member("m", [0]) | {"assigned": [{"topic": "t0", "partition": 0}]}])),
        "an assigned entry is not"),
    "assigned_bad_topic": lambda c: (
        META_ROLE, _dumps(_members(c, [_member("m", [0]) | {"assigned": [["no such/topic", 0]]}])),
        "an assigned entry is not"),
    "member_topics_number": lambda c: (
        META_ROLE, _dumps(_members(c, [_member("m", [0]) | {"topics": 5}])),
        "a member's topics are not"),
    "member_rack_number": lambda c: (
        META_ROLE, _dumps(_members(c, [_member("m", [0]) | {"rack": 1}])),
        "a member's rack is not a string"),
    # -- partitions fields
    "replicas_with_null": lambda c: (
        META_ROLE, _dumps(_partitions(c, [_partition(0) | {"replicas": [1, None]}])),
        "replicas is not a list of broker ids"),
    "replicas_missing": lambda c: (
        META_ROLE, _dumps(_partitions(c, [_without(_partition(0), "replicas")])),
        "replicas is not a list of broker ids"),
    "racks_mismatch": lambda c: (
        META_ROLE, _dumps(_partitions(c, [_partition(0) | {"replica_racks": ["a"]}])),
        "replica_racks does not match replicas"),
    "racks_number": lambda c: (
        META_ROLE, _dumps(_partitions(c, [_partition(0) | {"replica_racks": ["a", 2]}])),
        "replica_racks is not a list of racks"),
    "duplicate_partitions": lambda c: (
        META_ROLE, _dumps(_partitions(c, [_partition(0), _partition(1), _partition(1)])),
        "duplicate partition numbers"),
    "non_contiguous_partitions": lambda c: (
        META_ROLE, _dumps(_partitions(c, [_partition(0), _partition(2)])),
        "partition numbers are not 0..n-1"),
    "partition_entry_negative": lambda c: (
        META_ROLE, _dumps(_partitions(c, [_partition(0) | {"partition": -1}])),
        "a partition number is missing or negative"),
    "partition_entry_overflow": lambda c: (
        META_ROLE, _dumps(_partitions(c, [_partition(0) | {"partition": 2**31}])),
        "a partition number is above"),
    "leader_string": lambda c: (
        META_ROLE, _dumps(_partitions(c, [_partition(0) | {"leader": "1"}])),
        "a leader is not a broker id"),
    "partitions_not_list": lambda c: (META_ROLE, _dumps(_partitions(c, "0,1,2")),
                                      "field partitions is not a list"),
    "partitions_bad_topic": lambda c: (META_ROLE, _dumps(_partitions(c, topic="..")),
                                       "invalid topic name"),
    "part_beyond_parts": lambda c: (META_ROLE, _dumps(_partitions(c, part=2, parts=2)),
                                    "part is not an integer"),
    "parts_zero": lambda c: (META_ROLE, _dumps(_partitions(c, part=0, parts=0)),
                             "parts is not an integer"),
    # -- no Kafka timestamp (-1, _KAFKA_TS): ts cannot be bounded, whatever it is (issue #47: the
    # query failed on every replay when ts overflowed; a far-future ts carried the watermark away)
    "no_kafka_timestamp": lambda c: (LAG_ROLE, _dumps(_lag(c)), "no Kafka timestamp"),
    "no_kafka_timestamp_ts_long_max": lambda c: (LAG_ROLE, _dumps(_lag(c, ts=LONG_MAX)),
                                                 "no Kafka timestamp"),
    "no_kafka_timestamp_ts_far_future": lambda c: (
        META_ROLE, _dumps(_members(c, ts=c.ts + 365 * 86_400_000)), "no Kafka timestamp"),
    "no_kafka_timestamp_ts_zero": lambda c: (LAG_ROLE, _dumps(_lag(c, ts=0)),
                                             "ts 0 is not positive"),
    # -- extreme but valid
    "valid_lag": lambda c: (LAG_ROLE, _dumps(_lag(c)), VALID),
    "partition_int_max": lambda c: (LAG_ROLE, _dumps(_lag(c, partition=INT_MAX)), VALID),
    "offsets_long_max": lambda c: (
        LAG_ROLE, _dumps(_lag(c, committed_offset=LONG_MAX - 7, end_offset=LONG_MAX)), VALID),
    "offsets_equal_zero": lambda c: (LAG_ROLE, _dumps(_lag(c, committed_offset=0, end_offset=0)),
                                     VALID),
    "extra_fields": lambda c: (
        LAG_ROLE, _dumps(_lag(c, schema=2, origin={"host": "x", "tags": [1, 2]})), VALID),
    "unicode_group": lambda c: (LAG_ROLE, _dumps(_lag(c, group=c.group + "-grüppe-✓")), VALID),
    "escaped_unicode_group": lambda c: (
        LAG_ROLE, _text(_lag(c, group=c.group + "-e"), "-e", "-\\u00e9"), VALID),
    "whitespace_around": lambda c: (
        LAG_ROLE, b" \n" + json.dumps(_lag(c), indent=2).encode() + b"\n ", VALID),
    "ts_slightly_ahead": lambda c: (LAG_ROLE, _dumps(_lag(c, ts=c.ts + 30_000)), VALID),
    "control_chars_in_member_id": lambda c: (
        META_ROLE, _dumps(_members(c, [_member("m\u0001\t\"}", [0])])), VALID),
    "huge_member_list": lambda c: (
        META_ROLE, _dumps(_members(c, [_member(f"member-{i:05d}", [i % 64])
                                       for i in range(_fit(c, 170))])), VALID),
    "huge_partition_list": lambda c: (
        META_ROLE, _dumps(_partitions(c, [_partition(p) for p in range(_fit(c, 80))])), VALID),
    "null_key": lambda c: (LAG_ROLE, _dumps(_lag(c)), VALID),
    "empty_members": lambda c: (META_ROLE, _dumps(_members(c, [])), VALID),
    "valid_partitions": lambda c: (META_ROLE, _dumps(_partitions(c)), VALID),
    "valid_split_part": lambda c: (
        META_ROLE, _dumps(_partitions(c, [_partition(p) for p in (4, 5)], part=1, parts=3)), VALID),
}

# kinds whose key is not the group
_KEYS: dict[str, Callable[[Ctx], bytes | None]] = {
    "null_key": lambda c: None,
    "group_control_chars": lambda c: (c.group + "\u0007\n").encode(),
    "unicode_group": lambda c: (c.group + "-grüppe-✓").encode(),
    "escaped_unicode_group": lambda c: (c.group + "-é").encode(),
    "group_empty": lambda c: b"",
    "group_too_long": lambda c: b"g" * 32768,
}


# kinds whose record has no Kafka timestamp
_KAFKA_TS = {k: -1 for k in KINDS if k.startswith("no_kafka_timestamp")}


def _fit(c: Ctx, entry_bytes: int) -> int:
    """How many list entries of about ``entry_bytes`` fit well inside the size limit."""
    return max(1, min(5000, c.max_value_bytes // (2 * entry_bytes)))


def make(kind: str, i: int, rng: random.Random, ts: int, max_value_bytes: int,
         groups: int = 0) -> Record:
    """Record ``i`` of this kind, in group ``fz-<i>`` (``groups`` > 0: ``fz-<i % groups>``)."""
    c = Ctx(rng, f"fz-{i % groups if groups else i:06d}", ts, max_value_bytes)
    role, value, expected = KINDS[kind](c)
    key = _KEYS[kind](c) if kind in _KEYS else c.group.encode()
    return Record(kind, role, key, value, expected, _KAFKA_TS.get(kind))


def generate(seed: int, n: int, ts: int, max_value_bytes: int, groups: int = 0) -> list[Record]:
    """``n`` records cycling through every kind (all kinds once when ``n >= len(KINDS)``), in a
    seeded shuffled order; record ``i`` has group ``fz-<i>``, or with ``groups`` > 0
    ``fz-<i % groups>``: valid, extreme and malformed records mixed in each group's batch, so that
    one record's fault would show on the others (issue #47: a blast radius of one record)."""
    rng = random.Random(seed)
    kinds = [k for _ in range(n // len(KINDS) + 1) for k in sorted(KINDS)][:n]
    rng.shuffle(kinds)
    return [make(kind, i, rng, ts, max_value_bytes, groups) for i, kind in enumerate(kinds)]


def skewed_group(group: str, t0: int, polls: int = 10,
                 step_ms: int = 10_000) -> list[dict[str, Any]]:
    """A valid group whose lag sits on one member for ``polls`` polls: the job must recommend
    (lag_skew)."""
    out = [ev.members_event(t0, group, 1, "range", [_member("C0", [0, 1]), _member("C1", [2, 3])])]
    for i in range(polls):
        ts = t0 + i * step_ms
        for p, lag in {0: 9000, 1: 8000, 2: 100, 3: 100}.items():
            committed = 1_000_000 + ts // 100  # moving: nothing is stuck
            out.append(ev.lag_event(ts, group, "t0", p, committed, committed + lag))
    return out


def deleted_topic_group(group: str, t0: int, polls: int = 10,
                        step_ms: int = 10_000) -> list[dict[str, Any]]:
    """:func:`skewed_group` whose member C0 also owns a partition of a topic read once and then
    deleted (its partitions event lists none): the job must still recommend and reject none of its
    events. (Issue #47: the empty lag history the deletion left made every later poll of the group
    raise, and its readings were lost.)"""
    out = skewed_group(group, t0, polls, step_ms)
    owned = [["t0", 0], ["t0", 1], ["t1", 0]]
    c0 = _member("C0", [0, 1]) | {"topics": ["t0", "t1"], "assigned": owned}
    out[0] = ev.members_event(t0, group, 1, "range", [c0, _member("C1", [2, 3])])
    gone = ev.partitions_event(t0 + step_ms, group, "t1", [])
    return [*out, ev.lag_event(t0, group, "t1", 0, 5, 9), gone]

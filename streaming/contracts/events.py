"""The events on Kafka: what the collector writes and the streaming job reads
(JSON, UTF-8, key = group).

Four types, as in docs/design.md:

``lag_dense`` (lag topic), one per group, topic and poll: the poll's partitions and their offsets as
arrays of equal length, entry i of each array being partition ``partitions[i]``; what the collector
writes by default::

    {"type": "lag_dense", "ts": 1763700000000, "group": "orders-app", "topic": "orders",
     "partitions": [0, 3], "committed_offsets": [800, 1200], "end_offsets": [900, 5000],
     "no_commit": [false, true]}

  ``no_commit`` is optional (absent: every entry false), and so is ``log_start_offsets`` (each
  partition's log start offset, the first offset retention has not deleted; absent: not read, as
  from collectors before it). Each entry is exactly one ``lag`` event's reading.

``lag`` (lag topic), one per partition per poll (the collector's ``--lag-form partition``; always
readable)::

    {"type": "lag", "ts": 1763700000000, "group": "orders-app", "topic": "orders", "partition": 3,
     "committed_offset": 1200, "end_offset": 5000}

  A partition the group never committed carries ``"no_commit": true`` and, as ``committed_offset``,
  the position ``auto.offset.reset`` would start from (begin offset for earliest, end offset for
  latest), so ``end_offset - committed_offset`` is always the lag. ``log_start_offset`` (optional,
  written before ``no_commit``) is the partition's log start offset, read before its end offset, so
  it is at most ``end_offset``; a committed offset below it means records retention deleted before
  the group read them (:mod:`streaming.lag.loss_risk`).
  A lag event of either form may end with ``"metadata_events": k`` (an integer in 0..2**31-1;
  absent: 0): the number of metadata events (``members``, ``partitions``) of the group the collector
  wrote with this poll's ``ts``, all acknowledged before any of the poll's lag was sent. The job
  decides on a poll only once its lag and those k events are in, so a micro-batch that reads the
  lag topic further than the metadata topic does not change the decision
  (:mod:`streaming.state.whole`).
  A share group (KIP-932) commits nothing: its events carry the broker's share-partition lag
  (KIP-1226) as ``end_offset - committed_offset`` (:func:`streaming.collector.kip932.positions`),
  and it gets no members event.

``members`` (metadata topic), on change and at every full refresh::

    {"type": "members", "ts": ..., "group": "orders-app", "generation": 7, "protocol": "range",
     "members": [{"member_id": "...", "instance_id": null, "client_id": "...", "host": "...",
                  "rack": "a", "topics": ["orders"], "assigned": [["orders", 0], ["orders", 1]]}]}

  A member may carry ``load``, the latest report of its own load the collector holds
  (:mod:`streaming.contracts.member_load`): ``{"ts": ..., "busy": 0.83, "records_per_s": 92.5,
  "record_cost_s": 0.0062, "records_lag_min": 0}``, ``ts`` the poll that first saw it, ``busy`` in
  0..1, ``records_per_s`` >= 0, ``record_cost_s`` (optional) in (0, 3600], ``records_lag_min``
  (optional) an integer >= 0. The collector sends
  a members event when a report arrives or goes stale, so a member without one has none.

``partitions`` (metadata topic), per group and subscribed topic, on change and at every full
refresh::

    {"type": "partitions", "ts": ..., "group": "orders-app", "topic": "orders",
     "partitions": [{"partition": 0, "leader": 1, "replicas": [1, 2], "replica_racks": ["a", "b"]}]}

``ts`` is epoch milliseconds of the observation. The builders below are the only way the project
writes events; :mod:`streaming.job.validate` is the one way the job reads them, and rejects anything
that is not exactly this shape: strings are JSON strings, integers JSON integers (partitions,
generations and broker ids 0..2**31-1, offsets and ``ts`` 0..2**63-1), topic names legal Kafka
names, a ``partitions`` event lists partitions 0..n-1 once each, member ids are unique, no duplicate
keys, nothing after the object; a ``lag_dense`` event's arrays are of equal length with unique
partitions (a bad entry is rejected alone: :mod:`streaming.job.dense`); ``ts`` at most
``job.max_clock_skew_s`` ahead of the record's Kafka timestamp. Unknown extra fields are ignored (a
newer collector may add some).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

LAG = "lag"
LAG_DENSE = "lag_dense"
MEMBERS = "members"
PARTITIONS = "partitions"
TYPES = (LAG, LAG_DENSE, MEMBERS, PARTITIONS)
LAG_TYPES = (LAG, LAG_DENSE)
"""The types the lag topic carries."""
DENSE_ARRAYS = ("partitions", "committed_offsets", "end_offsets")
"""A ``lag_dense`` event's arrays, which are always there and of equal length (``no_commit`` and
``log_start_offsets`` are optional)."""
LOG_START = "log_start_offset"
"""A ``lag`` event's optional log start offset (after ``end_offset``, before ``no_commit``)."""
LOG_STARTS = "log_start_offsets"
"""A ``lag_dense`` event's optional array of log start offsets, one per entry."""
OPTIONAL_ARRAYS = ("no_commit", LOG_STARTS)
"""A ``lag_dense`` event's optional arrays, of the same length as the others when present."""
METADATA_EVENTS = "metadata_events"
"""A lag event's optional count of its poll's metadata events (last of its fields, when not 0)."""
LAG_FIELDS = ("type", "ts", "group", "topic", "partition", "committed_offset", "end_offset")
"""A lag event's fields in the order :func:`lag_event` writes them (``no_commit`` after them, when
set, then :data:`METADATA_EVENTS`).
The job reads the collector's own events by this order without parsing them
(:mod:`streaming.job.canonical`)."""

# The types the job reads a validated metadata event's lists as (streaming/job/validate.py checks
# every field's JSON type and range first, so these reads never fail or round): an assigned entry is
# [topic, partition] and travels as two strings.
MEMBERS_TYPE = (
    "array<struct<member_id: string, instance_id: string, client_id: string, host: string, "
    "rack: string, topics: array<string>, assigned: array<array<string>>, "
    "load: struct<ts: bigint, busy: double, records_per_s: double, record_cost_s: double, "
    "records_lag_min: bigint>>>"
)
PARTITIONS_TYPE = ("array<struct<partition: int, leader: int, replicas: array<int>, "
                   "replica_racks: array<string>>>")


def lag_event(ts: int, group: str, topic: str, partition: int, committed_offset: int,
              end_offset: int, no_commit: bool = False, log_start_offset: int | None = None,
              metadata_events: int = 0) -> dict[str, Any]:
    event = dict(zip(LAG_FIELDS, (LAG, int(ts), group, topic, int(partition), int(committed_offset),
                                  int(end_offset)), strict=True))
    if log_start_offset is not None:
        event[LOG_START] = int(log_start_offset)
    if no_commit:
        event["no_commit"] = True
    if metadata_events:
        event[METADATA_EVENTS] = int(metadata_events)
    return event


def dense_lag_event(ts: int, group: str, topic: str, partitions: Sequence[int],
                    committed_offsets: Sequence[int], end_offsets: Sequence[int],
                    no_commit: Sequence[bool] | None = None,
                    log_start_offsets: Sequence[int | None] | None = None,
                    metadata_events: int = 0) -> dict[str, Any]:
    """One poll of one topic of a group; ``no_commit`` is written only when some entry is true,
    ``log_start_offsets`` only when every entry's is known, ``metadata_events`` when not 0."""
    if not len(partitions) == len(committed_offsets) == len(end_offsets):
        raise ValueError("a dense lag event's arrays must be of equal length")
    event = {"type": LAG_DENSE, "ts": int(ts), "group": group, "topic": topic,
             "partitions": [int(p) for p in partitions],
             "committed_offsets": [int(c) for c in committed_offsets],
             "end_offsets": [int(e) for e in end_offsets]}
    if no_commit is not None and any(no_commit):
        if len(no_commit) != len(partitions):
            raise ValueError("a dense lag event's arrays must be of equal length")
        event["no_commit"] = [bool(n) for n in no_commit]
    if (log_start_offsets is not None and len(log_start_offsets)
            and all(s is not None for s in log_start_offsets)):
        if len(log_start_offsets) != len(partitions):
            raise ValueError("a dense lag event's arrays must be of equal length")
        event[LOG_STARTS] = [int(s) for s in log_start_offsets]  # type: ignore[arg-type]
    if metadata_events:
        event[METADATA_EVENTS] = int(metadata_events)
    return event


def marked(lag: Iterable[dict[str, Any]], metadata_events: int) -> list[dict[str, Any]]:
    """A group's lag events of one poll, each naming how many metadata events the poll has (written
    before them): the job decides the poll only once those are in (:mod:`streaming.state.whole`)."""
    if not metadata_events:
        return list(lag)
    return [e | {METADATA_EVENTS: int(metadata_events)} for e in lag]


def dense(lag: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """``lag`` events as ``lag_dense`` events: one per group, topic and ts, entries in the order
    given."""
    polls: dict[tuple[int, str, str], list[dict[str, Any]]] = {}
    for e in lag:
        polls.setdefault((int(e["ts"]), e["group"], e["topic"]), []).append(e)
    return [dense_lag_event(ts, group, topic, [e["partition"] for e in es],
                            [e["committed_offset"] for e in es], [e["end_offset"] for e in es],
                            [bool(e.get("no_commit")) for e in es], [e.get(LOG_START) for e in es],
                            max(e.get(METADATA_EVENTS, 0) for e in es))
            for (ts, group, topic), es in polls.items()]


def readings(event: dict[str, Any]) -> list[dict[str, Any]]:
    """A lag event of either form as ``lag`` events (one per partition), for readers outside the
    job."""
    if event.get("type") != LAG_DENSE:
        return [event]
    flags = event.get("no_commit") or [False] * len(event["partitions"])
    starts = event.get(LOG_STARTS) or [None] * len(event["partitions"])
    count = event.get(METADATA_EVENTS, 0)
    return [lag_event(event["ts"], event["group"], event["topic"], p, c, e, bool(n), s, count)
            for p, c, e, n, s in zip(*(event[a] for a in DENSE_ARRAYS), flags, starts, strict=True)]


def member_entry(member_id: str, topics: Iterable[str], assigned: Iterable[tuple[str, int]],
                 instance_id: str | None = None, client_id: str | None = None,
                 host: str | None = None, rack: str | None = None) -> dict[str, Any]:
    return {"member_id": member_id, "instance_id": instance_id, "client_id": client_id,
            "host": host, "rack": rack, "topics": sorted(set(topics)),
            "assigned": [[t, int(p)] for t, p in sorted(assigned)]}


def members_event(ts: int, group: str, generation: int, protocol: str | None,
                  members: Sequence[dict[str, Any]], group_protocol: str | None = None
                  ) -> dict[str, Any]:
    # group_protocol (optional): "classic" (JoinGroup/SyncGroup) or "consumer" (KIP-848); for
    # "consumer" the generation is Kafka's group epoch and members may carry member_epoch and
    # target_assigned
    event = {"type": MEMBERS, "ts": int(ts), "group": group, "generation": int(generation),
             "protocol": protocol, "members": sorted(members, key=lambda m: m["member_id"])}
    if group_protocol is not None:
        event["group_protocol"] = group_protocol
    return event


def partition_entry(partition: int, leader: int | None, replicas: Sequence[int],
                    replica_racks: Sequence[str | None]) -> dict[str, Any]:
    return {"partition": int(partition), "leader": leader, "replicas": [int(r) for r in replicas],
            "replica_racks": list(replica_racks)}


def partitions_event(ts: int, group: str, topic: str, partitions: Sequence[dict[str, Any]]
                     ) -> dict[str, Any]:
    return {"type": PARTITIONS, "ts": int(ts), "group": group, "topic": topic,
            "partitions": sorted(partitions, key=lambda p: p["partition"])}


def encode(event: dict[str, Any]) -> tuple[bytes, bytes]:
    """(key, value) of the Kafka message for ``event``: key = group id, value = compact JSON."""
    return event["group"].encode(), json.dumps(event, separators=(",", ":")).encode()


def topic_for(event: dict[str, Any], lag_topic: str, metadata_topic: str) -> str:
    return lag_topic if event["type"] in LAG_TYPES else metadata_topic

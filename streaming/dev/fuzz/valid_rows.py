"""Hypothesis strategies for event rows drawn from what the stateful step assumes
(:mod:`streaming.contracts.validated`), at its bounds, and the rows :mod:`streaming.job.validate`
makes of them.

:func:`events` draws a group's valid events of every type: lag at partitions 0 and 2^31-1 and
offsets up to 2^63-1, ``lag_dense`` polls, members lists empty or owning partitions no event lists,
members without topics, partitions events of no partition (a deleted topic) or fewer than the lag
read, split parts, ``ts`` from 1 to a minute past the draw's clock; :func:`row_of` is the row
validate.parse makes of one (its ``detail`` as Spark's ``to_json`` writes it: null fields left out,
an assigned partition a string). Each drawn row passes
:func:`streaming.contracts.validated.problem`: a property over these tests the step against the
statement, not against what today's collector happens to write.

Dev tool only: hypothesis is never imported by production modules.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from hypothesis import strategies as st

from streaming.contracts import events as ev
from streaming.contracts.validated import INT_MAX, LONG_MAX
from streaming.state.readings import LOG_STARTS, READINGS, packed

TOPICS = ("t0", "t1", "a.b-c_D")


def bounded(lo: int, hi: int) -> st.SearchStrategy[int]:
    """Integers in lo..hi, the bounds and their neighbours weighted up."""
    return st.one_of(st.sampled_from(sorted({lo, lo + 1, hi - 1, hi})), st.integers(lo, hi))


def partitions() -> st.SearchStrategy[int]:
    """Mostly a handful of partitions (so polls meet), now and then at the bound."""
    return st.one_of(st.integers(0, 3), st.integers(0, 3), bounded(0, INT_MAX))


def offsets() -> st.SearchStrategy[tuple[int, int]]:
    """(committed, end) with 0 <= committed <= end <= 2^63-1."""
    return st.tuples(bounded(0, LONG_MAX), bounded(0, LONG_MAX)).map(lambda ce: (min(ce), max(ce)))


def stamps(ts: int) -> st.SearchStrategy[int]:
    """``ts`` of valid events: 1, around ``ts`` and up to a minute past it (within any clock skew);
    mostly a few values, so that events meet in one observation and follow each other."""
    few = st.sampled_from([1, ts - 10_000, ts, ts + 1, ts + 60_000])
    return st.one_of(few, few, st.integers(ts - 100_000, ts + 60_000))


def counts() -> st.SearchStrategy[int]:
    """A lag event's count of its poll's metadata events: mostly none, a few, now and then the
    bound (a poll that can only be closed by the next)."""
    return st.one_of(st.just(0), st.just(0), st.integers(1, 3), bounded(0, INT_MAX))


def lag(ts: int, group: str) -> st.SearchStrategy[dict[str, Any]]:
    def build(
        t: int, topic: str, p: int, ce: tuple[int, int], start: int | None, flag: bool, n: int
    ) -> dict[str, Any]:
        return ev.lag_event(
            t, group, topic, p, *ce, flag, None if start is None else min(start, ce[1]), n
        )

    return st.builds(
        build,
        stamps(ts),
        st.sampled_from(TOPICS),
        partitions(),
        offsets(),
        st.one_of(st.none(), bounded(0, LONG_MAX)),
        st.booleans(),
        counts(),
    )


def dense(ts: int, group: str) -> st.SearchStrategy[dict[str, Any]]:
    def build(
        t: int, topic: str, parts: set[int], ces: list[tuple[int, int]], starts: bool, n: int
    ) -> dict[str, Any]:
        ordered = sorted(parts)
        ces = ces[: len(ordered)]
        return ev.dense_lag_event(
            t,
            group,
            topic,
            ordered,
            [c for c, _ in ces],
            [e for _, e in ces],
            log_start_offsets=[c for c, _ in ces] if starts else None,
            metadata_events=n,
        )

    return st.builds(
        build,
        stamps(ts),
        st.sampled_from(TOPICS),
        st.sets(partitions(), min_size=1, max_size=4),
        st.lists(offsets(), min_size=4, max_size=4),
        st.booleans(),
        counts(),
    )


def member() -> st.SearchStrategy[dict[str, Any]]:
    text = st.one_of(st.none(), st.text(max_size=4))
    return st.builds(
        ev.member_entry,
        st.text(min_size=1, max_size=3),
        st.lists(st.sampled_from(TOPICS), max_size=2),
        st.lists(st.tuples(st.sampled_from(TOPICS), partitions()), max_size=3),
        text,
        text,
        text,
        text,
    )


def members(ts: int, group: str) -> st.SearchStrategy[dict[str, Any]]:
    def build(t: int, gen: int, protocol: str | None, ms: list[dict[str, Any]]) -> dict[str, Any]:
        return ev.members_event(
            t, group, gen, protocol, list({m["member_id"]: m for m in ms}.values())
        )

    return st.builds(
        build,
        stamps(ts),
        bounded(-1, INT_MAX),
        st.one_of(st.none(), st.just("range")),
        st.lists(member(), max_size=3),
    )


def topic_partitions(ts: int, group: str) -> st.SearchStrategy[dict[str, Any]]:
    broker = st.one_of(st.integers(0, 3), bounded(0, INT_MAX))
    entry = st.builds(
        lambda leader, reps, rack: ev.partition_entry(0, leader, reps, [rack] * len(reps)),
        st.one_of(st.none(), st.just(-1), broker),
        st.lists(broker, max_size=2),
        st.one_of(st.none(), st.sampled_from(["a", "b"])),
    )
    return st.builds(
        lambda t, topic, es: ev.partitions_event(
            t, group, topic, [e | {"partition": i} for i, e in enumerate(es)]
        ),
        stamps(ts),
        st.sampled_from(TOPICS),
        st.lists(entry, max_size=5),
    )


def split(event: dict[str, Any]) -> list[dict[str, Any]]:
    """A metadata event as two parts of one split event (its list cut in two)."""
    name = "members" if event["type"] == ev.MEMBERS else "partitions"
    half = len(event[name]) // 2
    return [
        event | {name: event[name][:half], "part": 0, "parts": 2},
        event | {name: event[name][half:], "part": 1, "parts": 2},
    ]


def events(
    ts: int, group: str = "g", max_size: int = 14
) -> st.SearchStrategy[list[dict[str, Any]]]:
    """A group's valid events in arrival order (lag of either form twice as often; some metadata
    split)."""
    meta = st.one_of(members(ts, group), topic_partitions(ts, group))
    parted = st.tuples(meta, st.integers(0, 5)).map(
        lambda mi: split(mi[0]) if mi[1] == 0 else [mi[0]]
    )
    one = st.one_of(lag(ts, group), lag(ts, group), dense(ts, group), parted.map(tuple))
    return st.lists(one, min_size=1, max_size=max_size).map(
        lambda drawn: [e for d in drawn for e in (d if isinstance(d, tuple) else (d,))]
    )


def _member_detail(m: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in m.items() if v is not None and k != "assigned"}
    if m.get("assigned") is not None:
        out["assigned"] = [[str(t), str(p)] for t, p in m["assigned"]]
    return out


def _metadata_detail(e: dict[str, Any]) -> str:
    """A metadata event's ``detail`` as validate.parse writes it (Spark's to_json: null fields left
    out)."""
    out: dict[str, Any] = {k: e[k] for k in ("generation", "protocol") if e.get(k) is not None}
    if e["type"] == ev.MEMBERS:
        out["members"] = [_member_detail(m) for m in e["members"]]
    else:
        out["partitions"] = [{k: v for k, v in p.items() if v is not None} for p in e["partitions"]]
    out |= {k: e[k] for k in ("part", "parts") if e.get(k) is not None}
    return json.dumps(out, separators=(",", ":"))


def row_of(e: dict[str, Any], source_offset: int, source_partition: int = 0) -> dict[str, Any]:
    """The row validate.parse makes of the valid event ``e``."""
    row: dict[str, Any] = {
        "group": e["group"],
        "type": e["type"],
        "ts": e["ts"],
        "topic": e.get("topic"),
        "partition": 0,
        "committed_offset": 0,
        "end_offset": 0,
        "detail": None,
        "source_partition": source_partition,
        "source_offset": source_offset,
        READINGS: None,
        LOG_STARTS: None,
        ev.METADATA_EVENTS: e.get(ev.METADATA_EVENTS, 0),
    }
    if e["type"] == ev.LAG:
        row |= {k: e[k] for k in ("partition", "committed_offset", "end_offset")}
        if e.get(ev.LOG_START) is not None:
            row[LOG_STARTS] = [e[ev.LOG_START]]
    elif e["type"] == ev.LAG_DENSE:
        row[READINGS] = packed(e)
        if e.get(ev.LOG_STARTS) is not None:
            row[LOG_STARTS] = np.asarray(e[ev.LOG_STARTS], dtype=np.int64)
    else:
        row["detail"] = _metadata_detail(e)
    return row

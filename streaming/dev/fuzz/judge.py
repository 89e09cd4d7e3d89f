"""Send labelled fuzz records to the job's topics and judge what the job did with them.

:func:`send` produces :mod:`streaming.dev.fuzz.kinds` records (and any valid events) and returns
where each record landed; :func:`verdict` compares those with the ``rejected_events`` rows, matched
by source topic, partition and offset. Used by tests/integration/test_fuzz.py and ``python -m
streaming.dev.fuzz``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from streaming.config import Config
from streaming.contracts import events as ev
from streaming.dev.fuzz.kinds import ANY, LAG_ROLE, LATE, VALID, Record
from streaming.kafka_clients import factories as kafka_clients

Source = tuple[str, int, int]
"""(topic, partition, offset) of a record."""


@dataclass(frozen=True)
class Sent:
    record: Record
    source: Source


@dataclass
class Verdict:
    """What the job did with the fuzz records, against their labels."""

    sent: int = 0
    kinds: int = 0
    rejected_by_reason: Counter = field(default_factory=Counter)
    accepted: int = 0
    """Valid records not rejected."""
    valid_lost: list[tuple[str, str]] = field(default_factory=list)
    """(kind, reason) of valid records that were rejected."""
    missing: list[str] = field(default_factory=list)
    """Kinds of records that should have been rejected and were not."""
    wrong_reason: list[tuple[str, str, str]] = field(default_factory=list)
    """(kind, expected, got)."""
    unexpected: int = 0
    """Rejected rows that match no fuzz record (other events of the run rejected)."""

    @property
    def ok(self) -> bool:
        return not (self.valid_lost or self.missing or self.wrong_reason or self.unexpected)


def send(cfg: Config, records: Sequence[Record],
         events: Iterable[dict[str, Any]] = ()) -> list[Sent]:
    """Produce the records (to the lag or metadata topic by role) and the valid events; where each
    record went."""
    prod = kafka_clients.producer(cfg, max_request_size=2 * 1024 * 1024)
    try:
        futures = []
        for r in records:
            topic = cfg.kafka.lag_topic if r.role == LAG_ROLE else cfg.kafka.metadata_topic
            futures.append((r, prod.send(topic, key=r.key, value=r.value, timestamp_ms=r.kafka_ts)))
        for e in events:
            key, value = ev.encode(e)
            prod.send(ev.topic_for(e, cfg.kafka.lag_topic, cfg.kafka.metadata_topic), key=key,
                      value=value)
        prod.flush(120)
        out = []
        for r, f in futures:
            md = f.get(120)
            out.append(Sent(r, (md.topic, md.partition, md.offset)))
        return out
    finally:
        prod.close()


def verdict(sent: Sequence[Sent], rejected: Iterable[tuple[Source, str]]) -> Verdict:
    """``rejected``: ((source topic, partition, offset), reason) of every rejected_events row."""
    reasons: dict[Source, str] = {}
    v = Verdict(sent=len(sent), kinds=len({s.record.kind for s in sent}))
    for source, reason in rejected:
        reason = reason or ""  # a row without a reason is never right: "" tells it from no row
        reasons[source] = reason
        v.rejected_by_reason[_reason_class(reason)] += 1
    for s in sent:
        got = reasons.pop(s.source, None)
        expected = s.record.expected
        if expected == VALID:
            if got is None:
                v.accepted += 1
            else:
                v.valid_lost.append((s.record.kind, got))
        elif expected == ANY:  # drawn from the contract: valid, or rejected with a reason
            if got is None:
                v.accepted += 1
            elif not got.strip():
                v.wrong_reason.append((s.record.kind, "a reason", got))
        elif got is None:
            v.missing.append(s.record.kind)
        elif not (got == LATE if expected == LATE else got.startswith(expected)):
            v.wrong_reason.append((s.record.kind, expected, got))
    v.unexpected = len(reasons)
    return v


def _reason_class(reason: str) -> str:
    """A reason without its figures, for counting ("ts 5 is not positive ..." -> "ts # is not
    positive ...")."""
    words = reason.split(":")[0].split()
    return " ".join("#" if w.lstrip("-").isdigit() else w for w in words)[:70]


def figure_problems(recs: Iterable[dict[str, Any]]) -> list[str]:
    """What is wrong with the figures of recommendation rows (as read from the table): figures in
    records must be exact integers in 0..2^63-1, doubles finite or null."""
    from streaming.contracts.recommendation import DOUBLE_COLUMNS, RECORDS_CAP, RECORDS_COLUMNS

    out = []
    for r in recs:
        for c in RECORDS_COLUMNS:
            if not (isinstance(r[c], int) and 0 <= r[c] <= RECORDS_CAP):
                out.append(f"{r['group']} v{r['version']}: {c} = {r[c]!r}")
        for c in DOUBLE_COLUMNS:
            if r[c] is not None and not math.isfinite(r[c]):
                out.append(f"{r['group']} v{r['version']}: {c} = {r[c]!r}")
    return out

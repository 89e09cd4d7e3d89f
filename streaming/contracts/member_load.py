"""What a consumer says of its own load: the reports on the member-load topic
(``kafka.member_load_topic``, JSON, UTF-8, key = group), and how they reach the job.

Lag says a member is slow only once a backlog has built up and held for most of a minute
(:mod:`streaming.lag.capacity`); the consumer itself knows at once how much of its time goes to
processing. Each consumer with a load meter (kafka-python: :class:`streaming.apply.load.LoadMeter`;
Java: ``io.github.kafkarebalancer.LoadReporter``, a ``metric.reporters`` entry reading KIP-517's
``poll-idle-ratio-avg`` and ``records-consumed-rate``) produces, every few seconds::

    {"type": "member_load", "ts": 1763700000000, "group": "orders-app", "client_id": "orders-1",
     "member_id": "orders-1-5f0c...", "busy": 0.83, "records_per_s": 92.5, "window_s": 5.0,
     "record_cost_s": 0.0062, "records_lag_min": 0}

``busy`` is the fraction of the last ``window_s`` seconds the consumer spent outside ``poll()``
(processing what poll returned: 1 - poll idle ratio), ``records_per_s`` what poll returned over the
same seconds; ``member_id`` is null where the client cannot tell it (Java's metrics do not carry
it). ``ts`` is the reporter's clock, epoch milliseconds. ``record_cost_s``, optional, is what one
record costs with each batch's own cost (the commit, the round trip) taken out, in seconds
(kafka-python's meter reads it from the window's batches; absent where it cannot tell, and from
Java's metrics). ``records_lag_min``, optional, is the least records lag the consumer saw after any
poll of the window (Kafka's ``records-lag``, high watermark minus position, summed over the
assigned partitions; 0 for a poll that returned none): above 0, records were
waiting after every poll, so the consumer read all it could, and ``records_per_s`` is what it can
do (Flink's autoscaler's rule: the rate observed while backlogged). Lag read from committed
offsets cannot say so for a small backlog: a consumer that keeps up and commits every few seconds
shows as much.

The collector (:mod:`streaming.collector.member_load`) keeps each member's latest report and
publishes it in the group's ``members`` event, stamped with the poll's ``ts`` (one clock, one order
with the lag polls), as each member's ``load``::

    {"member_id": "...", ..., "load": {"ts": 1763700000000, "busy": 0.83, "records_per_s": 92.5,
                                       "record_cost_s": 0.0062, "records_lag_min": 0}}

A report is matched to a member by ``member_id`` when it has one, else by ``client_id`` when exactly
one member has it (Java's default client ids repeat across processes: give each consumer its own
``client.id``). A member's capacity is then ``records_per_s / busy``
(:func:`streaming.lag.reported.reported_capacity`); a record's cost moves the measure of a member
once measured slow (:func:`streaming.lag.reported.measure`).
"""

from __future__ import annotations

import json
import math
from typing import Any, NamedTuple

MEMBER_LOAD = "member_load"
LOAD = "load"
"""A ``members`` event member's optional field carrying its latest report."""
MAX_ID_CHARS = 32767
"""Kafka's protocol STRING limit, for group, client and member ids."""
MAX_RECORDS_PER_S = 1e12
"""The most records/s a report may say (a broken meter's figure beyond it is no measure)."""
RECORD_COST = "record_cost_s"
LAG_MIN = "records_lag_min"
MAX_LAG = 2**63 - 1
"""The most records lag a report may say (a Kafka offset's range)."""
MAX_RECORD_COST_S = 3600.0
"""The most a record may cost by a report: beyond it, no consumer is measured by its records."""
SATURATED_BUSY = 0.95
"""The busy fraction from which a member's own report measures its capacity
(:mod:`streaming.lag.reported`), and from which a meter reports early
(:class:`streaming.apply.load.LoadMeter`). Below it the figure is a lower bound: what a consumer
spends per poll (the fetch, the commit) weighs less on the bigger batches it reads when more
arrives, so one that idles can do more than records/s over busy says
(live, consumers of 90 and 180/s reading 80/s reported 81-84 and 117-134; at 0.8, a group of alike
consumers at two thirds of their capacity looked near saturation and got moves it did not need)."""


class Report(NamedTuple):
    ts: int
    group: str
    client_id: str
    member_id: str | None
    busy: float
    records_per_s: float
    window_s: float
    record_cost_s: float | None = None
    records_lag_min: int | None = None

    def load(self, ts: int) -> dict[str, Any]:
        """This report as a member's ``load`` in a ``members`` event stamped ``ts``."""
        return {"ts": int(ts), "busy": self.busy, "records_per_s": self.records_per_s,
                **self.optional_fields()}

    def optional_fields(self) -> dict[str, Any]:
        """The optional fields this report has."""
        out: dict[str, Any] = {}
        if self.record_cost_s is not None:
            out[RECORD_COST] = float(self.record_cost_s)
        if self.records_lag_min is not None:
            out[LAG_MIN] = int(self.records_lag_min)
        return out


def report_event(report: Report) -> dict[str, Any]:
    """The topic's JSON object for ``report``."""
    return {"type": MEMBER_LOAD, "ts": int(report.ts), "group": report.group,
            "client_id": report.client_id, "member_id": report.member_id,
            "busy": float(report.busy), "records_per_s": float(report.records_per_s),
            "window_s": float(report.window_s), **report.optional_fields()}


def encode(report: Report) -> bytes:
    return json.dumps(report_event(report), separators=(",", ":")).encode()


def parse(value: bytes | None) -> Report | None:
    """The report in a record's value, or None when it is not exactly one (the collector counts and
    skips those: a bad report costs only itself)."""
    if not value:
        return None
    try:
        obj = json.loads(value)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    if not isinstance(obj, dict) or obj.get("type") != MEMBER_LOAD:
        return None
    ts, group, client, member = (obj.get(k) for k in ("ts", "group", "client_id", "member_id"))
    busy, rate, window = (_number(obj.get(k)) for k in ("busy", "records_per_s", "window_s"))
    cost = _number(obj.get(RECORD_COST))
    lag = obj.get(LAG_MIN)
    if not (type(ts) is int and 0 < ts < 2**63 and _id(group) and _id(client)
            and (member is None or _id(member)) and busy is not None and 0.0 <= busy <= 1.0
            and rate is not None and 0.0 <= rate <= MAX_RECORDS_PER_S
            and window is not None and window > 0
            and (obj.get(RECORD_COST) is None or (cost is not None and record_cost_ok(cost)))
            and (lag is None or (type(lag) is int and 0 <= lag <= MAX_LAG))):
        return None
    return Report(ts, str(group), str(client), None if member is None else str(member), busy,
                  rate, window, cost, lag)


def record_cost_ok(cost: float) -> bool:
    """Whether ``cost`` is a record's cost a report may say: above 0, at most
    :data:`MAX_RECORD_COST_S`."""
    return 0.0 < cost <= MAX_RECORD_COST_S


def _number(value: Any) -> float | None:
    if type(value) not in (int, float):
        return None
    f = float(value)
    return f if math.isfinite(f) else None


def _id(value: Any) -> bool:
    return isinstance(value, str) and 0 < len(value) <= MAX_ID_CHARS

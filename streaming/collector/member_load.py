"""The members' own load reports, read from the member-load topic and handed to the members events.

Consumers with a load meter report how busy they are (:mod:`streaming.contracts.member_load`).
:class:`LoadReports` reads the topic (no group: it assigns itself every partition and starts
:data:`FRESH_S` back in time, so a restarted collector has the reports of the last seconds at once),
keeps each reporter's latest report, and at each poll says which report goes with which member of a
group (:meth:`LoadReports.loads`): by member id when the report has one, else by client id when
exactly one member has it. A report is stamped with the ``ts`` of the poll that first saw it (the
collector's clock, the one of every event of that poll) and counts for :data:`FRESH_S` of polls
after; then it is stale and left out. :meth:`LoadReports.differ` tells the collector when a group's
members event must go out again: a report arrived or went stale, so the job holds exactly what the
newest members event carries.

A record that is no report is counted (``bad``) and skipped; a topic not there yet is looked for
again at the next poll.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from streaming.config import Config
from streaming.contracts import member_load
from streaming.contracts.member_load import Report

log = logging.getLogger(__name__)

FRESH_S = 30.0
"""How long a report counts after the poll that first saw it (six of the meters' 5-s windows): a
consumer that stopped reporting (stopped, or its meter broke) is not judged on an old figure."""
MAX_RECORDS_PER_POLL = 10_000
"""Records read from the topic at one poll at most (the rest at the next)."""

Seen = dict[tuple[str, str | None], tuple[Report, int]]
"""(client id, member id) -> the latest report and the ts of the poll that first saw it."""


class LoadReports:
    def __init__(self, make_consumer: Callable[[], Any], topic: str) -> None:
        self._make = make_consumer
        self.topic = topic
        self._consumer: Any = None
        self._seen: dict[str, Seen] = {}
        self._sent: dict[str, tuple] = {}
        self.bad = 0
        """Records of the topic that were no report."""

    @classmethod
    def of(cls, cfg: Config) -> LoadReports:
        """Reading ``cfg.kafka.member_load_topic`` with the configuration's client settings."""
        def make() -> Any:
            from kafka import KafkaConsumer

            from streaming.kafka_clients.factories import python_client_options

            opts = python_client_options(cfg, "consumer") | {
                "group_id": None, "enable_auto_commit": False,
                "client_id": "rebalancer-collector-load"}
            return KafkaConsumer(**opts)
        return cls(make, cfg.kafka.member_load_topic)

    # -- reading -----------------------------------------------------------------------------------

    def read(self, ts: int, selects: Callable[[str], bool]) -> None:
        """Take the reports that arrived since the last poll (at poll ``ts``), of the groups
        ``selects`` accepts; a failure to read is logged and leaves the reports as they were."""
        try:
            consumer = self._assigned()
            if consumer is None:
                return
            batches = consumer.poll(timeout_ms=0, max_records=MAX_RECORDS_PER_POLL)
        except Exception as e:  # a broker outage must not stop the lag polls
            log.warning("member-load topic %s unreadable this poll: %s", self.topic, e)
            return
        for records in batches.values():
            for record in records:
                self._take(member_load.parse(record.value), ts, selects)

    def _assigned(self) -> Any:
        """The consumer, assigned every partition of the topic and placed :data:`FRESH_S` back; None
        while the topic is not there."""
        if self._consumer is None:
            self._consumer = self._make()
        c = self._consumer
        if c.assignment():
            return c
        from kafka import TopicPartition

        parts = c.partitions_for_topic(self.topic)
        if not parts:
            return None
        tps = [TopicPartition(self.topic, p) for p in sorted(parts)]
        c.assign(tps)
        since = int((time.time() - FRESH_S) * 1000)
        found = c.offsets_for_times({tp: since for tp in tps})
        for tp in tps:
            at = found.get(tp)
            if at is None:
                c.seek_to_end(tp)
            else:
                c.seek(tp, at.offset)
        return c

    def _take(self, report: Report | None, ts: int, selects: Callable[[str], bool]) -> None:
        if report is None:
            self.bad += 1
            return
        if not selects(report.group):
            return
        seen = self._seen.setdefault(report.group, {})
        key = (report.client_id, report.member_id)
        held = seen.get(key)
        if held is None or held[0].ts < report.ts:
            seen[key] = (report, ts)

    # -- matching ----------------------------------------------------------------------------------

    def loads(self, ts: int, group: str, members: Sequence[Mapping[str, Any]]
              ) -> dict[str, dict[str, Any]]:
        """member id -> its ``load`` at poll ``ts``: the latest fresh report matched to it."""
        seen = self._seen.get(group)
        if not seen:
            return {}
        fresh = [(r, at) for r, at in seen.values() if ts - at <= FRESH_S * 1000]
        ids = {m["member_id"] for m in members}
        by_client: dict[str, list[str]] = {}
        for m in members:
            if m.get("client_id"):
                by_client.setdefault(m["client_id"], []).append(m["member_id"])
        out: dict[str, tuple[Report, int]] = {}
        for report, at in fresh:
            if report.member_id in ids:
                mid: str | None = report.member_id
            else:
                owners = by_client.get(report.client_id, [])
                mid = owners[0] if len(owners) == 1 else None
            if mid is not None and (mid not in out or out[mid][0].ts < report.ts):
                out[mid] = (report, at)
        return {mid: r.load(at) for mid, (r, at) in sorted(out.items())}

    def differ(self, group: str, loads: Mapping[str, Mapping[str, Any]]) -> bool:
        """Whether ``loads`` differ from the ones the group's last members event carried."""
        return self._sent.get(group, ()) != _key(loads)

    def sent(self, group: str, loads: Mapping[str, Mapping[str, Any]]) -> None:
        """The group's members event went out with ``loads``."""
        self._sent[group] = _key(loads)

    def forget_group(self, group: str) -> None:
        self._seen.pop(group, None)
        self._sent.pop(group, None)

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None


def _key(loads: Mapping[str, Mapping[str, Any]]) -> tuple:
    return tuple((mid, load["ts"]) for mid, load in sorted(loads.items()))

"""The collector's side of the members' load reports: which report goes with which member, when a
report stops counting, and when the members event must go out again."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from streaming.collector.member_load import FRESH_S, LoadReports
from streaming.contracts import member_load as ml
from streaming.contracts.member_load import Report

T0 = 1_763_700_000_000


class FakeConsumer:
    """A kafka-python consumer of one topic's two partitions; ``feed`` queues record values."""

    def __init__(self) -> None:
        self.queued: list[bytes | None] = []
        self._assigned: list[Any] = []
        self.fail = False

    def assignment(self) -> set[Any]:
        return set(self._assigned)

    def partitions_for_topic(self, topic: str) -> set[int]:
        return {0, 1}

    def assign(self, tps: list[Any]) -> None:
        self._assigned = list(tps)

    def offsets_for_times(self, asked: dict[Any, int]) -> dict[Any, Any]:
        return dict.fromkeys(asked)

    def seek_to_end(self, tp: Any) -> None:
        pass

    def poll(self, timeout_ms: int, max_records: int) -> dict[Any, list[Any]]:
        if self.fail:
            raise OSError("broker gone")
        out, self.queued = self.queued, []
        return {"tp": [SimpleNamespace(value=v) for v in out]} if out else {}


def reports() -> tuple[LoadReports, FakeConsumer]:
    consumer = FakeConsumer()
    return LoadReports(lambda: consumer, "rebalancer.member-load"), consumer


def rep(client: str, member: str | None, ts: int, busy: float = 0.5, group: str = "g") -> bytes:
    return ml.encode(Report(ts, group, client, member, busy, 40.0, 5.0))


MEMBERS = [{"member_id": "m1", "client_id": "a"}, {"member_id": "m2", "client_id": "b"},
           {"member_id": "m3", "client_id": "dup"}, {"member_id": "m4", "client_id": "dup"}]


def test_a_report_goes_to_its_member_id_else_to_its_only_client() -> None:
    loads, consumer = reports()
    consumer.queued = [rep("a", None, 1), rep("zzz", "m2", 1), rep("dup", None, 1),
                       rep("a", None, 2, busy=0.9), b"not json", None, rep("x", None, 1, group="h")]
    loads.read(T0, lambda g: g == "g")
    got = loads.loads(T0, "g", MEMBERS)
    # m1: the newer of a's two; m2 by member id; "dup" names two members: nobody's
    assert got == {"m1": {"ts": T0, "busy": 0.9, "records_per_s": 40.0},
                   "m2": {"ts": T0, "busy": 0.5, "records_per_s": 40.0}}
    assert loads.bad == 2 and loads.loads(T0, "h", MEMBERS) == {}


def test_a_report_counts_while_fresh_and_the_event_goes_out_when_that_changes() -> None:
    loads, consumer = reports()
    consumer.queued = [rep("a", None, 1)]
    loads.read(T0, lambda g: True)
    now = loads.loads(T0, "g", MEMBERS)
    assert loads.differ("g", now)
    loads.sent("g", now)
    later = T0 + int(FRESH_S * 1000)
    loads.read(later, lambda g: True)  # nothing new: the same report, still fresh
    assert not loads.differ("g", loads.loads(later, "g", MEMBERS))
    stale = loads.loads(later + 1, "g", MEMBERS)
    assert stale == {} and loads.differ("g", stale)
    consumer.queued = [rep("a", None, 1)]  # the same report again: still the old one
    loads.read(later + 2, lambda g: True)
    assert loads.loads(later + 2, "g", MEMBERS) == {}


def test_a_topic_it_cannot_read_leaves_the_reports_as_they_were() -> None:
    loads, consumer = reports()
    consumer.queued = [rep("a", None, 1)]
    loads.read(T0, lambda g: True)
    consumer.fail = True
    loads.read(T0 + 1, lambda g: True)
    assert set(loads.loads(T0 + 1, "g", MEMBERS)) == {"m1"}
    loads.forget_group("g")
    assert loads.loads(T0 + 1, "g", MEMBERS) == {}

"""The records lag a consumer's meter reports (``records_lag_min``): what kafka-python's high
watermarks say was left after each batch over every assigned partition (:class:`Backlog`), and the
least of it over a window. Above 0 only when every poll of the window left records waiting; a poll
that returned none counts 0."""

from __future__ import annotations

from typing import Any, NamedTuple

from hypothesis import given
from hypothesis import strategies as st

from streaming.apply.load import Backlog, LoadMeter, metered_poll
from streaming.contracts.member_load import Report


class Rec(NamedTuple):
    offset: int


class Revoked(Exception):
    """kafka-python's IllegalStateError for a partition no longer assigned."""


class Consumer:
    """kafka-python's ``poll``, ``assignment`` and ``highwater`` (a partition never fetched has
    None)."""

    def __init__(self, high: dict[str, int | None], polls: list[dict[str, list[Rec]]]) -> None:
        self.high, self.polls = high, polls

    def assignment(self) -> set[str]:
        return set(self.high)

    def highwater(self, tp: str) -> int | None:
        if tp not in self.high:
            raise Revoked(tp)
        return self.high[tp]

    def poll(self, **_: Any) -> dict[str, list[Rec]]:
        return self.polls.pop(0)


def test_the_worked_example() -> None:
    c, b = Consumer({"p0": 150, "p1": 41}, []), Backlog()
    assert b.after_poll(c, {"p1": [Rec(40)]}) == 0
    assert b.after_poll(c, {"p0": [Rec(98), Rec(99)]}) == 50
    # a poll of a caught-up partition still sees the other's backlog
    assert b.after_poll(c, {"p1": [Rec(40)]}) == 50


def test_partitions_without_a_position_or_a_high_watermark_say_nothing() -> None:
    c, b = Consumer({"p0": None, "p1": 10}, []), Backlog()
    assert b.after_poll(c, {"p0": [Rec(5)]}) is None  # never fetched
    assert b.after_poll(c, {"p2": [Rec(5)]}) is None  # not assigned (revoked since)
    assert b.after_poll(c, {"p1": [Rec(7)]}) == 2
    assert Backlog().after_poll(c, {}) is None  # no record returned yet: no position known
    assert Backlog().after_poll(object(), {"p0": [Rec(5)]}) is None  # no highwater


@given(st.lists(st.tuples(st.sets(st.sampled_from("abcd")),
                          st.dictionaries(st.sampled_from("abcd"), st.integers(0, 10**6)),
                          st.dictionaries(st.sampled_from("abcd"),
                                          st.one_of(st.none(), st.integers(0, 10**6)))),
                min_size=1, max_size=30))
def test_the_backlog_is_every_assigned_partitions_high_watermark_less_its_next_offset(
        steps: list[tuple[set[str], dict[str, int], dict[str, int | None]]]) -> None:
    """Drawn assignments, polls (a partition's last offset returned) and high watermarks: after
    each poll, the sum over the assigned partitions returned since they were last unassigned, with
    a known high watermark, of what is left above their next offset."""
    backlog, nxt = Backlog(), dict[str, int]()
    for assigned, returned, high in steps:
        c = Consumer({tp: high.get(tp) for tp in assigned}, [])
        polled = {tp: [Rec(o)] for tp, o in returned.items()}
        nxt = {tp: n for tp, n in {**nxt, **{tp: o + 1 for tp, o in returned.items()}}.items()
               if tp in assigned}
        said = [max(0, h - nxt[tp]) for tp in nxt if isinstance(h := high.get(tp), int)]
        assert backlog.after_poll(c, polled) == (sum(said) if said else None)


def meter() -> tuple[LoadMeter, list[Report], list[float]]:
    sent: list[Report] = []
    now = [0.0]
    return LoadMeter(sent.append, "g", "c", interval_s=5.0, clock=lambda: now[0],
                     wall_ms=lambda: 1), sent, now


polls_st = st.lists(st.tuples(st.integers(0, 500), st.one_of(st.none(), st.integers(0, 10**6)),
                              st.floats(0.0, 3.0)), min_size=1, max_size=80)


@given(polls_st)
def test_each_window_reports_the_least_lag_left_after_its_polls(
        polls: list[tuple[int, int | None, float]]) -> None:
    """Each poll returns ``n`` records leaving ``waiting`` (None: the client cannot tell) and takes
    ``s`` seconds. A window's figure is the least of its polls' (0 for one that returned
    nothing), None when none told; above 0 only if every poll of it returned records."""
    m, sent, now = meter()
    windows: list[list[int | None]] = [[]]
    for n, waiting, s in polls:
        m.poll_started()
        now[0] += s
        before = len(sent)
        m.poll_returned(n, waiting)
        # a window closes at a poll's return too: that poll is the last of the one reported
        windows[-1].append(0 if n == 0 else waiting)
        if len(sent) > before:
            windows.append([])
    assert len(sent) == len(windows) - 1
    for report, told in zip(sent, windows, strict=False):
        known = [w for w in told if w is not None]
        assert report.records_lag_min == (min(known) if known else None)


def test_metered_poll_reads_the_lag_kafka_python_holds() -> None:
    """A backlogged consumer: records waiting after each of its polls; then one caught up."""
    sent: list[Report] = []
    now = [0.0]

    def clock() -> float:
        now[0] += 1.0
        return now[0]

    m = LoadMeter(sent.append, "g", "c", interval_s=5.0, clock=clock, wall_ms=lambda: 1,
                  saturated_s=5.0)
    c = Consumer({"p0": 1000}, [{"p0": [Rec(i)]} for i in range(3)] + [{}] * 3)
    for _ in range(6):
        metered_poll(c, m)
    assert [r.records_lag_min for r in sent] == [997, 0]

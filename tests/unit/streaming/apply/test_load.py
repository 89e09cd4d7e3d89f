"""The load meter's reports add up to what the consumer did, on a fake clock: busy time, records,
windows never shorter than the interval unless saturated (then at least ``saturated_s``, holding
whole batches); a send that fails never reaches the consumer."""

from __future__ import annotations

import logging
import math
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from streaming.apply.load import (
    MAX_POINTS,
    MIN_BATCHES,
    MIN_SPREAD,
    Fit,
    LoadMeter,
    member_id_of,
    metered_poll,
    producer_send,
    record_cost,
)
from streaming.contracts.member_load import SATURATED_BUSY, Report, encode, parse


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def meter(interval_s: float = 5.0, send: Any = None, **kwargs: Any
          ) -> tuple[LoadMeter, Clock, list[Report]]:
    clock, sent = Clock(), []
    return (LoadMeter(send or sent.append, "g", "c-1", interval_s=interval_s, clock=clock,
                      wall_ms=lambda: 1_700_000_000_000, **kwargs), clock, sent)


def run(m: LoadMeter, clock: Clock, steps: list[tuple[float, float, int]]) -> None:
    """Each step: poll for ``idle`` seconds, get ``records``, process for ``busy`` seconds."""
    for idle, busy, records in steps:
        m.poll_started()
        clock.now += idle
        m.poll_returned(records)
        clock.now += busy


seconds = st.floats(0.0, 20.0, allow_nan=False, allow_infinity=False)
steps_st = st.lists(st.tuples(seconds, seconds, st.integers(0, 10_000)), max_size=60)


@settings(max_examples=300)
@given(steps=steps_st, interval_s=st.floats(0.1, 30.0), saturated_s=st.floats(0.01, 40.0))
def test_reports_add_up_to_the_busy_time_and_the_records(
        steps: list[tuple[float, float, int]], interval_s: float, saturated_s: float) -> None:
    m, clock, sent = meter(interval_s, saturated_s=saturated_s)
    run(m, clock, steps)
    # one last poll longer than the interval closes the window with nothing more done
    m.poll_started()
    clock.now += interval_s + 1.0
    m.poll_returned(0)
    busy = sum(b for _, b, _ in steps)
    records = sum(r for _, _, r in steps)
    span = sum(i + b for i, b, _ in steps) + interval_s + 1.0
    assert sent and all(
        r.window_s >= interval_s
        or (r.window_s >= saturated_s and r.busy >= SATURATED_BUSY * (1 - 1e-12)) for r in sent)
    assert all(0.0 <= r.busy <= 1.0 for r in sent)
    assert math.isclose(sum(r.busy * r.window_s for r in sent), busy, rel_tol=1e-9, abs_tol=1e-6)
    assert math.isclose(sum(r.records_per_s * r.window_s for r in sent), records,
                        rel_tol=1e-9, abs_tol=1e-6)
    assert math.isclose(sum(r.window_s for r in sent), span, rel_tol=1e-9, abs_tol=1e-6)
    assert m.sent == len(sent) and m.failed == 0


def test_four_seconds_of_work_and_one_in_poll_is_busy_0_8() -> None:
    m, clock, sent = meter(5.0)
    run(m, clock, [(1.0, 4.0, 400)] * 3)
    m.poll_started()  # closes each 5-second cycle
    assert [(r.busy, r.records_per_s, r.window_s) for r in sent] == [(0.8, 80.0, 5.0)] * 3
    r = sent[0]
    assert (r.ts, r.group, r.client_id, r.member_id) == (1_700_000_000_000, "g", "c-1", None)
    assert parse(encode(r)) == r


def test_a_long_stretch_stays_in_one_window() -> None:
    """A 12-second batch in a 5-second interval: one window of 13 s, busy 12 of them."""
    m, clock, sent = meter(5.0)
    run(m, clock, [(1.0, 12.0, 10)])
    m.poll_started()
    assert [(r.busy, r.window_s) for r in sent] == [(12 / 13, 13.0)]


def test_no_report_before_an_interval_has_passed() -> None:
    m, clock, sent = meter(5.0)
    run(m, clock, [(1.0, 1.0, 5)] * 2)
    m.poll_started()
    assert sent == []


def test_the_member_id_is_asked_at_each_report() -> None:
    ids = iter([None, "m-1"])
    m, clock, sent = meter(1.0, member_id=lambda: next(ids))
    run(m, clock, [(0.5, 0.5, 1)] * 2)
    m.poll_started()
    assert [r.member_id for r in sent] == [None, "m-1"]


def test_a_send_that_fails_never_reaches_the_consumer(caplog: pytest.LogCaptureFixture) -> None:
    def send(report: Report) -> None:
        raise OSError("broker gone")

    m, clock, _ = meter(1.0, send=send)
    with caplog.at_level(logging.DEBUG, logger="streaming.apply.load"):
        run(m, clock, [(0.5, 0.5, 1)] * 4)
        m.poll_started()
    assert (m.sent, m.failed) == (0, 4)
    levels = [r.levelno for r in caplog.records if "not sent" in r.getMessage()]
    assert levels == [logging.WARNING] + [logging.DEBUG] * 3


def test_the_interval_must_be_positive() -> None:
    with pytest.raises(ValueError):
        meter(0.0)
    with pytest.raises(ValueError):
        meter(5.0, saturated_s=0.0)


def test_a_consumer_that_slows_down_says_so_within_a_second_of_its_first_saturated_window() -> None:
    """At 120/s it reads 80/s (busy 2/3) in 5-second windows; from t = 5 s it can do 60/s of the
    same 80/s: saturated. Its next report comes at the first poll a second or more into the new
    window, where a 5-second window would have waited until t = 10 s."""
    m, clock, sent = meter(5.0, saturated_s=1.0)
    run(m, clock, [(1 / 30, 2 / 30, 8)] * 50)  # 0.1 s each: 8 records at 1/120 s
    run(m, clock, [(0.002, 8 / 60, 8)] * 10)  # 8 records at 1/60 s a cycle
    assert [round(r.window_s, 3) for r in sent] == [5.0, 1.083]  # 8 cycles of 0.135 s
    slow = sent[-1]
    assert slow.busy >= SATURATED_BUSY and math.isclose(slow.records_per_s / slow.busy, 60.0)


@settings(max_examples=300)
@given(batches=st.lists(st.tuples(seconds, st.integers(1, 500)), max_size=60),
       cost=st.floats(1e-4, 0.05), interval_s=st.floats(0.5, 30.0),
       saturated_s=st.floats(0.01, 30.0))
# found by make test: a full window closed at a poll's return kept that batch's records, and the
# early window after it held their work alone (busy 1.0, 0 records/s)
@example(batches=[(7.0, 1), (20.0, 299), (20.0, 118), (0.0, 1)], cost=0.0001, interval_s=0.5,
         saturated_s=0.01171875)
def test_an_early_window_holds_whole_batches(batches: list[tuple[float, int]], cost: float,
                                             interval_s: float, saturated_s: float) -> None:
    """Each batch of ``n`` records takes ``n * cost`` to process: a window closed early (at a
    poll's start) holds every record it counts with its processing, so it reads exactly
    ``1 / cost`` records a busy second."""
    m, clock, sent = meter(interval_s, saturated_s=saturated_s)
    run(m, clock, [(idle / 100, n * cost, n) for idle, n in batches])
    early = [r for r in sent if r.window_s < interval_s]
    assert all(math.isclose(r.records_per_s * cost, r.busy, rel_tol=1e-6) for r in early)


class Consumer:
    def __init__(self, polls: list[Any], clock: Clock) -> None:
        self.polls, self.clock, self.kwargs = polls, clock, {}

    def poll(self, **kwargs: Any) -> Any:
        self.kwargs = kwargs
        self.clock.now += 1.0
        got = self.polls.pop(0)
        if isinstance(got, Exception):
            raise got
        return got


def test_metered_poll_counts_the_records_and_the_time_in_poll_as_idle() -> None:
    m, clock, sent = meter(5.0)
    c = Consumer([{"tp0": [1, 2], "tp1": [3]}, {}, RuntimeError("poll failed")], clock)
    assert metered_poll(c, m, timeout_ms=200) == {"tp0": [1, 2], "tp1": [3]}
    assert c.kwargs == {"timeout_ms": 200}
    clock.now += 2.0
    metered_poll(c, m)
    with pytest.raises(RuntimeError):
        metered_poll(c, m)
    # 1 s in poll, 2 out of it, 1 + 1 in poll: the window closes as the failed poll returns
    assert [(r.busy, r.records_per_s, r.window_s) for r in sent] == [(0.4, 0.6, 5.0)]


def test_producer_send_keys_each_report_by_its_group() -> None:
    calls = []

    class Producer:
        def send(self, topic: str, key: bytes, value: bytes) -> None:
            calls.append((topic, key, value))

    report = Report(1, "orders-app", "c", "m", 0.5, 10.0, 5.0)
    producer_send(Producer(), "rebalancer.member-load")(report)
    [(topic, key, value)] = calls
    assert (topic, key, parse(value)) == ("rebalancer.member-load", b"orders-app", report)


class Metadata:
    def __init__(self, member_id: str) -> None:
        self.member_id = member_id


class Joined:
    def __init__(self, member_id: str) -> None:
        self.member_id = member_id

    def group_metadata(self) -> Metadata:
        return Metadata(self.member_id)


class Old:
    """A client without ``group_metadata``: the coordinator's generation (or none)."""

    def __init__(self, generation: Any) -> None:
        self._coordinator = type("Coordinator", (), {"_generation": generation})()


class Closed:
    def group_metadata(self) -> Metadata:
        raise RuntimeError("closed")


@pytest.mark.parametrize("consumer, expected", [
    (Joined("c-1-5f0c"), "c-1-5f0c"),
    (Joined(""), None),
    (Old(Metadata("c-1-77")), "c-1-77"),
    (Old(None), None),
    (Old(Metadata("")), None),
    (object(), None),
    (Closed(), None),
])
def test_member_id_of(consumer: Any, expected: str | None) -> None:
    assert member_id_of(consumer) == expected


def test_member_id_of_reads_kafka_pythons_own_types() -> None:
    """kafka-python 3.x: ``KafkaConsumer.group_metadata()``, a ``ConsumerGroupMetadata`` whose
    member id is '' until the member joins; older clients: the coordinator's ``Generation``."""
    from kafka import KafkaConsumer
    from kafka.coordinator.base import Generation
    from kafka.structs import ConsumerGroupMetadata

    assert callable(KafkaConsumer.group_metadata)
    unjoined, joined = ConsumerGroupMetadata(group_id="g"), ConsumerGroupMetadata("g", 3, "c-1-ab")
    assert member_id_of(type("C", (), {"group_metadata": lambda self: unjoined})()) is None
    assert member_id_of(type("C", (), {"group_metadata": lambda self: joined})()) == "c-1-ab"
    assert member_id_of(Old(Generation.NO_GENERATION)) is None
    assert member_id_of(Old(Generation(3, "c-1-ab", "rebalancer"))) == "c-1-ab"


@settings(max_examples=200)
@given(sizes=st.lists(st.integers(1, 500), min_size=MIN_BATCHES, max_size=80),
       per_batch=st.floats(0.0, 0.05), per_record=st.floats(1e-5, 0.05),
       idle=st.floats(0.0, 0.2))
def test_a_records_cost_is_read_with_the_batch_cost_taken_out(
        sizes: list[int], per_batch: float, per_record: float, idle: float) -> None:
    """Each batch costs ``per_batch`` plus ``per_record`` for each record: the report's cost is
    ``per_record`` when the sizes differ enough to tell the two apart, and none otherwise."""
    work = sum(per_batch + per_record * n for n in sizes) + idle * len(sizes)
    m, clock, sent = meter(interval_s=work + 1.0, saturated_s=work + 1.0)  # one window
    run(m, clock, [(idle, per_batch + per_record * n, n) for n in sizes])
    m.poll_started()
    clock.now += 2.0  # past the interval: the window closes here
    m.poll_returned(0)
    (report,) = sent
    mean = sum(sizes) / len(sizes)
    sd = math.sqrt(sum((n - mean) ** 2 for n in sizes) / len(sizes))
    if sd > MIN_SPREAD * mean * (1 + 1e-9):
        assert report.record_cost_s == pytest.approx(per_record, rel=1e-6)
    elif sd < MIN_SPREAD * mean * (1 - 1e-9):
        assert report.record_cost_s is None


def test_the_worked_figures_of_a_consumer_that_keeps_up() -> None:
    """A 120/s consumer fed a trickle, batches of 1 to 4 records after 20 ms in poll, each batch
    with a 10-ms commit: records/s over busy says 65/s, the cost of a record 120/s; a stretch after
    an empty poll is no batch."""
    m, clock, sent = meter(interval_s=2.5)
    steps = [(0.02, 0.010 + n / 120, n) for n in [1, 2, 3, 4] * 10]
    run(m, clock, [*steps[:5], (0.2, 0.3, 0), *steps[5:]])
    m.poll_started()
    clock.now += 0.5
    m.poll_returned(0)
    (report,) = sent
    assert report.record_cost_s is not None
    assert 1 / report.record_cost_s == pytest.approx(120.0)
    assert report.window_s == pytest.approx(2.533, abs=1e-3)
    assert report.records_per_s / report.busy == pytest.approx(100 / 1.533, rel=1e-3)


def test_too_few_or_too_alike_batches_say_no_cost() -> None:
    line = [(n, 0.01 * n) for n in range(1, MIN_BATCHES + 1)]
    assert record_cost(line[:-1], 10.0) is None
    assert record_cost(line, 10.0) == pytest.approx(0.01)
    assert record_cost([(10, 0.1)] * 20, 10.0) is None
    assert record_cost([(n, 1.0 - 0.01 * n) for n in range(1, 20)], 10.0) is None
    assert record_cost(line, 0.005) is None  # above the most a record may cost


def test_a_few_stalls_barely_move_the_cost() -> None:
    """Five stretches of 40 stalled half a second (a process paused): a least-squares slope would
    read them as records; the median of the slopes stays within a tenth of the cost."""
    points = [(n, 0.01 + n / 120) for n in [1, 2, 3, 4] * 10]
    stalled = [(n, t + 0.5) if i % 8 == 3 else (n, t) for i, (n, t) in enumerate(points)]
    cost = record_cost(stalled, 10.0)
    assert cost is not None and 1 / cost == pytest.approx(120.0, rel=0.1)


def test_a_window_keeps_at_most_max_points_spread_over_it() -> None:
    fit = Fit()
    for i in range(10 * MAX_POINTS):
        fit.add(i, float(i))
    assert MAX_POINTS // 2 <= len(fit.points) <= MAX_POINTS
    gaps = {b[0] - a[0] for a, b in zip(fit.points, fit.points[1:], strict=False)}
    assert len(gaps) == 1  # evenly spaced


def test_the_cost_is_read_from_this_window_and_the_one_before() -> None:
    """Twelve batches over two windows, six in each: neither window has enough alone."""
    m, clock, sent = meter(interval_s=1.0)
    batches = [(0.05, 0.01 + n / 100, n) for n in [1, 5, 2, 6, 3, 7]]
    run(m, clock, [*batches, (0.5, 0.0, 0)])
    run(m, clock, [*batches, (0.5, 0.0, 0)])
    m.poll_started()
    assert [r.record_cost_s is None for r in sent] == [True, False]
    assert 1 / sent[1].record_cost_s == pytest.approx(100.0)

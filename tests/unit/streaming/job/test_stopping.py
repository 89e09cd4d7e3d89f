"""The stop's parts without a JVM: signals as events, the wait for a batch boundary, the totals and the one
line, the bounded progress lines, and the soak's verdicts. The real job stopped by real signals:
tests/integration/test_stop.py."""

from __future__ import annotations

import os
import re
import signal
import threading
from types import SimpleNamespace

import pytest

from benchmarks import soak
from streaming.commands.run import stop_line
from streaming.job import query
from streaming.job.stopping import Stop, Totals, stop_at_boundary


@pytest.fixture
def handlers():
    before = {s: signal.getsignal(s) for s in Stop.SIGNALS}
    yield
    for s, h in before.items():
        signal.signal(s, h)


def test_a_first_signal_asks_for_a_stop_and_a_second_for_one_at_once(handlers):
    stop = Stop().install()
    os.kill(os.getpid(), signal.SIGTERM)
    assert stop.requested.wait(5) and not stop.now.is_set() and stop.signal == "SIGTERM"
    os.kill(os.getpid(), signal.SIGINT)  # no KeyboardInterrupt: the handler only sets the event
    assert stop.now.wait(5) and stop.signal == "SIGTERM" and stop.count == 2


class Query:
    """A stand-in with the three members stop_at_boundary uses; the trigger runs for ``busy`` status reads."""

    def __init__(self, busy: int) -> None:
        self.busy, self.stopped, self.isActive = busy, 0, True

    @property
    def status(self) -> dict:
        self.busy -= 1
        return {"isTriggerActive": self.busy >= 0}

    def stop(self) -> None:
        self.stopped += 1


def test_the_query_is_stopped_once_no_trigger_runs():
    q = Query(busy=3)
    assert stop_at_boundary(q, grace_s=30, now=threading.Event()) is True
    assert q.stopped == 1 and q.busy == -1  # read until idle, not longer


def test_a_batch_longer_than_the_grace_or_a_second_signal_is_interrupted():
    q = Query(busy=10**9)
    assert stop_at_boundary(q, grace_s=0.2, now=threading.Event()) is False and q.stopped == 1
    now = threading.Event()
    now.set()
    q = Query(busy=10**9)
    assert stop_at_boundary(q, grace_s=30, now=now) is False and q.stopped == 1


def test_the_stop_line_says_signal_last_batch_and_what_was_committed():
    totals = Totals()
    for b in (0, 1, 2):
        totals.add({"batch": b, "recommendations": 2, "rejected": 1})
    stop = SimpleNamespace(signal="SIGINT", now=threading.Event())
    line = stop_line(stop, totals)
    assert line == ("rebalancer run: stopped by SIGINT after batch 2 (3 batches this run, 6 recommendations and "
                    "3 rejected committed); lease released")
    from tests.integration.test_stop import STOP_LINE  # the line the integration test looks for

    assert re.match(STOP_LINE, line)
    totals.interrupted = True
    stop.now.set()
    assert stop_line(stop, totals).endswith("a batch still running was interrupted, the next run replays it")


def test_progress_lines_are_bounded_and_totals_count_every_batch():
    writer = SimpleNamespace(counts={}, spent={})
    printer = query.ProgressPrinter(writer, "q", out=lambda _line: None)
    n = query.RECENT_LINES + 500
    for b in range(n):
        writer.counts[b] = (1, 0)
        progress = SimpleNamespace(name="q", batchId=b, timestamp="t", numInputRows=1, stateOperators=[],
                                   batchDuration=5, durationMs={})
        printer.onQueryProgress(SimpleNamespace(progress=progress))
    assert len(printer.batches) == query.RECENT_LINES and printer.batches[-1]["batch"] == n - 1
    assert (printer.totals.batches, printer.totals.recommendations, printer.totals.last_batch) == (n, n, n - 1)


def test_soak_verdicts():
    flat = [(float(b), 100 + (b % 3)) for b in range(0, 1000, 100)]
    assert soak.verdict(flat)[1] == "flat"
    level = [(float(b), min(b, 300) + 10) for b in range(0, 1000, 100)]  # grows, then a plateau
    assert soak.verdict(level)[1] == "bounded"
    # cleanup cuts it back every 700 batches: the samples' slope depends on where in the tooth they fell
    tooth = [(float(b), 20.0 + b % 700) for b in range(300, 2100, 100)]
    assert soak.verdict(tooth)[1] == "bounded"
    assert soak.verdict([(b, y + b / 2) for b, y in tooth])[1] == "GROWS"  # the same teeth on a rising floor
    grows = [(float(b), 10 + b) for b in range(0, 1000, 100)]
    per_k, word = soak.verdict(grows)
    assert word == "GROWS" and per_k == pytest.approx(1000)

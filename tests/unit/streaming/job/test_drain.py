"""The end of a query run waits for the listener's last progress only where a batch ran: an
available-now start with nothing new ends at once (it waited its whole 5-s bound, on every such
restart, before). Progresses as Spark 4 reports them."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from streaming.job import query
from streaming.operations.stopping import Totals

RAN = {"batchId": 1, "numInputRows": 0,
       "durationMs": {"addBatch": 852, "commitOffsets": 50, "getBatch": 0, "latestOffset": 5,
                      "queryPlanning": 155, "triggerExecution": 1146, "walCommit": 68}}
IDLE = {"batchId": 2, "numInputRows": 0, "durationMs": {"latestOffset": 19,
                                                        "triggerExecution": 19}}


def drain(progress: dict | None, monkeypatch) -> tuple[list[float], Totals]:
    """``_drain`` on a query whose last progress is ``progress``; the listener gets batch 1 at the
    third wait. Returns the waits and the listener's totals."""
    printer = SimpleNamespace(totals=Totals())
    waits: list[float] = []

    def sleep(s: float) -> None:
        waits.append(s)
        if len(waits) == 3:
            printer.totals.last_batch = 1

    monkeypatch.setattr(query.time, "sleep", sleep)
    query._drain(SimpleNamespace(lastProgress=progress), printer, threading.Event())
    return waits, printer.totals


def test_a_run_that_ran_no_batch_ends_without_waiting(monkeypatch):
    assert not query.ran_a_batch(IDLE) and query.ran_a_batch(RAN)
    for progress in (None, IDLE):
        assert drain(progress, monkeypatch)[0] == []


def test_a_batch_that_ran_is_waited_for_until_the_listener_has_it(monkeypatch):
    waits, totals = drain(RAN, monkeypatch)
    assert len(waits) == 3 and totals.last_batch == 1


@pytest.mark.parametrize("progress", [RAN, IDLE])
def test_a_stop_at_once_waits_for_nothing(progress, monkeypatch):
    now = threading.Event()
    now.set()
    monkeypatch.setattr(query.time, "sleep", lambda s: pytest.fail("waited"))
    query._drain(SimpleNamespace(lastProgress=progress),
                 SimpleNamespace(totals=Totals()), now)

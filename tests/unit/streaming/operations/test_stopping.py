"""The stop's parts without a JVM: signals as events, the wait for a batch boundary, the totals and
the one line, and the soak's verdicts. The real job stopped by real signals:
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
from streaming.operations.stopping import Stop, Totals, stop_at_boundary


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


@pytest.mark.parametrize("first", [signal.SIGHUP, signal.SIGQUIT])
def test_a_closed_terminal_or_ctrl_backslash_stops_the_job_as_sigterm_does(handlers, first):
    """SIGHUP's and SIGQUIT's defaults end the process at once (no stop line, the lease left
    behind)."""
    stop = Stop().install()
    os.kill(os.getpid(), first)
    assert stop.requested.wait(5) and not stop.now.is_set() and stop.signal == first.name
    os.kill(os.getpid(), signal.SIGTERM)
    assert stop.now.wait(5) and stop.count == 2


def test_a_second_signal_is_bounded_by_spark_s_stop_timeout():
    """``query.stop()`` waits for the stream thread; Spark's default waits forever."""
    from streaming.config import load
    from streaming.spark_session import STOP_TIMEOUT_MS, spark_defaults

    conf = spark_defaults(load())
    assert (int(conf["spark.sql.streaming.stopTimeout"]) == STOP_TIMEOUT_MS
            and 0 < STOP_TIMEOUT_MS <= 60_000)

    class Stuck(Query):
        def stop(self) -> None:  # what py4j raises when the stream thread outlives the timeout
            self.stopped += 1
            raise RuntimeError(
                "TimeoutException: Stream Execution thread failed to stop within 30000 ms")

    now = threading.Event()
    now.set()
    q = Stuck(busy=10**9)
    assert stop_at_boundary(q, grace_s=30, now=now) is False and q.stopped == 1


class Query:
    """A stand-in with the three members stop_at_boundary uses; the trigger runs for ``busy`` status
    reads."""

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
    assert line == (
        "rebalancer run: stopped by SIGINT after batch 2 (3 batches this run, 6 recommendations "
        "and 3 rejected committed); lease released")
    from tests.integration.test_stop import STOP_LINE  # the line the integration test looks for

    assert re.match(STOP_LINE, line)
    totals.interrupted = True
    stop.now.set()
    assert stop_line(stop, totals).endswith(
        "a batch still running was interrupted, the next run replays it")



def test_soak_verdicts():
    flat = [(float(b), 100 + (b % 3)) for b in range(0, 1000, 100)]
    assert soak.verdict(flat)[1] == "flat"
    level = [(float(b), min(b, 300) + 10) for b in range(0, 1000, 100)]  # grows, then a plateau
    assert soak.verdict(level)[1] == "bounded"
    # cleanup cuts it back every 700 batches: the samples' slope depends on where in the tooth they
    # fell
    tooth = [(float(b), 20.0 + b % 700) for b in range(300, 2100, 100)]
    assert soak.verdict(tooth)[1] == "bounded"
    # the same teeth on a rising floor
    assert soak.verdict([(b, y + b / 2) for b, y in tooth])[1] == "GROWS"
    grows = [(float(b), 10 + b) for b in range(0, 1000, 100)]
    per_k, word = soak.verdict(grows)
    assert word == "GROWS" and per_k == pytest.approx(1000)


def test_soak_lines_carry_the_log_windows_commits_and_the_retention_figures_are_read_per_commit(
        tmp_path):
    from benchmarks.soak import figures

    base = {k: 1.0 for k in soak.FIGURES}
    rows = []
    for i, b in enumerate(range(300, 2100, 100)):
        commits = 40 + 10 * i  # the machine speeds up: 40 -> 210 commits per window
        f = dict(base, log_files=3.0 * commits, window_commits=float(commits))
        line = soak.fmt(b, f, 60.0)
        assert f"{commits} commits in the log window" in line
        rows += soak.parse(line)
    assert len(rows) == 18 and rows[-1][1]["window_commits"] == 210.0
    said: list[str] = []
    soak.summary(rows, 300, said.append)
    verdict_of = {line.split()[0]: line.split()[-1] for line in said[1:]}
    assert verdict_of["log_files"] == "GROWS" and verdict_of["log_files/commit"] == "flat"
    # lines saved before the figure existed are read as they were
    old = ("batch   300 at   4.5 min (load 3.61): JVM 1852 MB, driver py 215 MB, workers 333 MB; "
           "state 360 files 0.91 MB; checkpoint 450 files 0.93 MB; Delta 111 files 1.21 MB, "
           "log 122 files 291 KB, 0 orphan checksums; batch 1005 ms")
    assert ("window_commits" not in soak.parse(old)[0][1]
            and soak.parse(old)[0][1]["batch_ms"] == 1005.0)
    assert (figures.interval_s("interval 5 minutes") == 300.0
            and figures.interval_s("interval 2 hours") == 7200.0)
    log = tmp_path / "t" / "_delta_log"
    log.mkdir(parents=True)
    for n in range(3):
        (log / f"{n:020d}.json").write_text("{}")
    (log / "00000000000000000000.crc").write_text("{}")
    assert figures.window_commits(tmp_path, 60.0) == 3

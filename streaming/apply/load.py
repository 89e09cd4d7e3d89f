"""``LoadMeter``: a kafka-python consumer's own load, measured around ``poll()`` and sent as a
member-load report (:mod:`streaming.contracts.member_load`) every few seconds.

It measures four things per window: the fraction of wall time the consumer spent outside
``poll()`` (``busy``: processing what poll returned; the time blocked in poll waiting for records is
idle), the records poll returned per second, what one record costs (``record_cost_s``), and the
least records lag after any poll (``records_lag_min``, :class:`Backlog`: above 0 the
consumer never ran out of records, so what it read is what it can do).

Busy alone overstates the work of a consumer that keeps up: each batch has a cost of its own (a
synchronous commit, the next poll's round trip) that a consumer receiving a trickle pays per record
or two, and one with a backlog shares among hundreds. Live, consumers doing a third of what they
could read busy 0.65, and two thirds 0.87. So each stretch outside poll after a batch is a point
(records in the batch, seconds): the slope through them (:func:`record_cost`) is the cost of a
record with the batch's own cost taken out, and one over it is what the consumer could do. It is
sent only when the batches of the window and the one before were at least :data:`MIN_BATCHES` and
differed in size enough to tell the two apart (:data:`MIN_SPREAD`), and the slope came out
positive.

A window closes at the first poll to start or return at least ``interval_s`` after the window
began (no thread), so no stretch is ever cut: a batch processed for 12 s makes a window of at least
12 s, all 12 busy. A saturated window (busy at least
:data:`streaming.contracts.member_load.SATURATED_BUSY` of it, the figure from which the job reads a
report as the consumer's capacity) closes sooner, at the first poll to start ``saturated_s`` after
it began: a consumer that slows down says so within a second or two of its first full window, not
at the end of the interval. Only at a poll's start, so that every record the window counts was
processed in it. Any other window is never shorter than ``interval_s``.

::

    producer = KafkaProducer(bootstrap_servers=..., max_block_ms=1000)
    meter = LoadMeter(producer_send(producer, cfg.kafka.member_load_topic), "orders-app",
                      "orders-1", member_id=lambda: member_id_of(consumer))
    while running:
        records = metered_poll(consumer, meter, timeout_ms=500)
        process(records)

A report that cannot be sent is lost and never reaches the consumer's loop (logged once at warning,
then at debug). ``producer.send`` waits up to the producer's ``max_block_ms`` for the topic's
metadata (a minute by default): keep it short for a producer that only sends reports.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from streaming.contracts.member_load import SATURATED_BUSY, Report, encode
from streaming.text import printable

log = logging.getLogger(__name__)

Send = Callable[[Report], None]

MIN_BATCHES = 8
"""The fewest batches with records in a window for a record's cost to be read from it."""
MIN_SPREAD = 0.25
"""The least spread of the batch sizes (standard deviation over the mean) for the same."""
MAX_POINTS = 200
"""The most batches a window keeps to read a record's cost from."""


def epoch_ms() -> int:
    return time.time_ns() // 1_000_000


class LoadMeter:
    """See the module docstring. Called from the consumer's own thread only (not thread-safe)."""

    def __init__(self, send: Send, group: str, client_id: str,
                 member_id: Callable[[], str | None] = lambda: None, interval_s: float = 5.0,
                 clock: Callable[[], float] = time.monotonic,
                 wall_ms: Callable[[], int] = epoch_ms, saturated_s: float = 1.0) -> None:
        if not interval_s > 0:
            raise ValueError(f"interval_s must be positive: {interval_s}")
        if not saturated_s > 0:
            raise ValueError(f"saturated_s must be positive: {saturated_s}")
        self.send = send
        self.group = group
        self.client_id = client_id
        self.member_id = member_id
        self.interval_s = float(interval_s)
        self.saturated_s = min(float(saturated_s), self.interval_s)
        self.clock = clock
        self.wall_ms = wall_ms
        self._start: float | None = None
        """When the window began; None until the first call (time before it is nobody's)."""
        self._mark = 0.0
        """When the stretch in progress (in poll, or out of it) began."""
        self._in_poll = False
        self._busy = 0.0
        self._records = 0
        self._fit, self._last = Fit(), Fit()
        """This window's batches, and the last window's: a record's cost is read from both."""
        self._batch = 0
        """Records of the last batch poll returned (the stretch after it is its processing)."""
        self._least: int | None = None
        """The least records lag after a poll of this window (None: none known)."""
        self.backlog = Backlog()
        """The consumer's records lag after each poll (:func:`metered_poll` and callers alike)."""
        self.sent = 0
        self.failed = 0

    def poll_started(self) -> None:
        """Call just before ``consumer.poll``: the time since :meth:`poll_returned` was busy."""
        self._step(in_poll=True, records=0)

    def poll_returned(self, records: int, waiting: int | None = None) -> None:
        """Call just after ``consumer.poll`` with the number of records it returned and, where the
        client tells, the records still waiting on its partitions (:class:`Backlog`). A
        poll that returned none waited for nothing: its lag counts as 0."""
        lag = 0 if records <= 0 else None if waiting is None else max(0, int(waiting))
        if lag is not None:
            self._least = lag if self._least is None else min(self._least, lag)
        self._step(in_poll=False, records=records)

    def _step(self, in_poll: bool, records: int) -> None:
        now = self.clock()
        if self._start is None:
            self._start = now
        elif not self._in_poll:
            self._busy += max(0.0, now - self._mark)
            if self._batch:
                self._fit.add(self._batch, max(0.0, now - self._mark))
        self._mark, self._in_poll = now, in_poll
        self._batch = max(0, int(records))
        window_s = now - self._start
        if window_s >= self.interval_s or (
                in_poll and window_s >= self.saturated_s
                and self._busy >= SATURATED_BUSY * window_s):
            # the window ends here, at a poll's start or return: the stretch before it is all in
            # this window, the one beginning now all in the next, and with it the records of a
            # poll returning now (counted here, a window would hold records whose work is in the
            # next: an early one after it read busy with none)
            self._report(window_s)
            self._start, self._busy, self._records, self._least = now, 0.0, 0, None
            self._last, self._fit = self._fit, Fit()
        self._records += self._batch

    def _report(self, window_s: float) -> None:
        try:
            self.send(Report(int(self.wall_ms()), self.group, self.client_id,
                             self.member_id() or None, min(1.0, max(0.0, self._busy / window_s)),
                             self._records / window_s, window_s,
                             record_cost([*self._last.points, *self._fit.points], window_s),
                             self._least))
            self.sent += 1
        except Exception as e:  # a report is a nicety: the consumer's loop goes on without it
            self.failed += 1
            log.log(logging.WARNING if self.failed == 1 else logging.DEBUG,
                    "load report of %s in group %s not sent: %s", printable(self.client_id, 80),
                    printable(self.group, 80), printable(f"{type(e).__name__}: {e}", 300))


class Fit:
    """The (records, seconds) points of a window's batches, at most :data:`MAX_POINTS` of them
    (every other one dropped, and every other one taken from then on, as they come)."""

    def __init__(self) -> None:
        self.points: list[tuple[int, float]] = []
        self._stride, self._seen = 1, 0

    def add(self, records: int, seconds: float) -> None:
        self._seen += 1
        if (self._seen - 1) % self._stride:
            return
        self.points.append((records, seconds))
        if len(self.points) > MAX_POINTS:
            self.points = self.points[::2]
            self._stride *= 2


def record_cost(points: Sequence[tuple[int, float]], most: float) -> float | None:
    """Seconds per record: the median of the slopes between every two batches of different sizes
    (Theil-Sen: a stall of the process in a few stretches moves it little, where it moves a
    least-squares slope as much as it is long); None with fewer than :data:`MIN_BATCHES` batches,
    sizes too alike, or a slope that is no cost (not positive, or above ``most``)."""
    if len(points) < MIN_BATCHES:
        return None
    n = np.array([p[0] for p in points], dtype=float)
    t = np.array([p[1] for p in points], dtype=float)
    if not n.std() > MIN_SPREAD * n.mean():
        return None
    i, j = np.triu_indices(len(n), 1)
    apart = n[j] != n[i]
    cost = float(np.median((t[j] - t[i])[apart] / (n[j] - n[i])[apart]))
    return cost if 0.0 < cost <= most else None


class Backlog:
    """The records lag a kafka-python consumer has left after each poll (Kafka's ``records-lag``,
    summed over its partitions): each assigned partition's high watermark from its last fetch
    response (kafka-python's ``highwater``: no request is made) less the offset after the last
    record poll returned of it. Over every assigned partition, not only the batch's: a poll
    returns one partition's records at a time, and one caught up says nothing of another's backlog.
    A partition none of whose records has been returned yet says nothing (its position is not known
    without a request), nor does one whose high watermark is unknown; None when none says.

    Example: polls returned p0 up to offset 99 and, earlier, p1 up to 40; high watermarks 150 and
    41: 50 + 0 = 50 records were waiting."""

    def __init__(self) -> None:
        self._next: dict[Any, int] = {}
        """partition -> the offset after the last record poll returned of it"""

    def after_poll(self, consumer: Any, records: Mapping[Any, Sequence[Any]]) -> int | None:
        """The records waiting after a poll returned ``records``."""
        for tp, batch in records.items():
            last = getattr(batch[-1], "offset", None) if batch else None
            if isinstance(last, int):  # kafka-python's ConsumerRecord; anything else says nothing
                self._next[tp] = last + 1
        assigned = _assigned(consumer)
        if assigned is not None:
            self._next = {tp: n for tp, n in self._next.items() if tp in assigned}
        waiting, known = 0, False
        for tp, after in self._next.items():
            try:
                high = consumer.highwater(tp)
            except Exception:  # revoked meanwhile (IllegalStateError): nothing to say of it
                high = None
            if isinstance(high, int):
                waiting += max(0, high - after)
                known = True
        return waiting if known else None


def _assigned(consumer: Any) -> set | None:
    """The consumer's assigned partitions (kafka-python's ``assignment()``, no request), or None
    where it cannot tell."""
    try:
        return set(consumer.assignment() or ())
    except Exception:
        return None


def metered_poll(consumer: Any, meter: LoadMeter, **poll_kwargs: Any) -> Any:
    """``consumer.poll(**poll_kwargs)`` with ``meter`` told when it starts and returns, and how
    many records were left waiting (its :class:`Backlog`)."""
    meter.poll_started()
    try:
        records = consumer.poll(**poll_kwargs)
    except BaseException:
        meter.poll_returned(0)
        raise
    meter.poll_returned(sum(len(r) for r in records.values()),
                        meter.backlog.after_poll(consumer, records))
    return records


def producer_send(producer: Any, topic: str) -> Send:
    """A ``send`` for :class:`LoadMeter`: each report to ``topic`` keyed by its group through a
    kafka-python ``KafkaProducer``, batched with whatever else it sends (no flush per report)."""

    def send(report: Report) -> None:
        producer.send(topic, key=report.group.encode(), value=encode(report))

    return send


def member_id_of(consumer: Any) -> str | None:
    """A kafka-python consumer's member id in its group, or None while it has none (kafka-python's
    ``UNKNOWN_MEMBER_ID`` is ''), without a group or when the client does not say."""
    try:
        read = getattr(consumer, "group_metadata", None)  # kafka-python 3.x, under the lock
        if read is not None:
            member = read().member_id
        else:  # older clients: the coordinator's generation
            generation = getattr(getattr(consumer, "_coordinator", None), "_generation", None)
            member = getattr(generation, "member_id", None)
    except Exception:  # a private structure or a closed client: the report goes without it
        log.debug("member id unavailable", exc_info=True)
        return None
    return member if isinstance(member, str) and member else None

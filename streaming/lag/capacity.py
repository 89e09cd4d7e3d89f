"""Each member's capacity: the records/s it consumes while it has backlog,
remembered across observations.

The rule, over lag histories and an assignment (who owns what,
:class:`~streaming.lag.owners.Owners`); its memory is a dict the caller keeps: the job's group state
(:attr:`~streaming.state.group_state.GroupState.capacity`, with its lag and its owners) and the
collector's window of polls (:mod:`streaming.lag.window`) alike, so both estimate the same way.

A member that keeps up consumes what arrives, which says nothing of what it could do; one with
backlog consumes as fast as it can. At a lag observation a member is *backlogged* when, over the
window its partitions' history holds (each row's latest run, :mod:`streaming.lag.rules`), either

- its lag never fell below :data:`LEAST_S` of its own consumption (its partitions' least lags over
  the window add up to that) and more arrived than it consumed (:data:`RISE`): a consumer keeping up
  shows, right after each commit, only the records that arrived since it fetched, and commits every
  5 s by default (Java, kafka-python, librdkafka), so its least lag over a window of several commits
  is a second or two of its rate; one that runs late by design (long batches) holds its lag but
  consumes what arrives; or
- its lag never fell to 0 (least lags adding up to at least :data:`BACKLOG_RECORDS`) and its latest
  lag is more than it consumes over the window (what :func:`streaming.lag.rules.member_capacity`
  calls *behind*) and over :data:`BACKLOG_S` (a long backlog being drained: its least lag is its
  latest).

The first is what finds a slow member whose lag grows from nothing at a few records a second over
its rate (a consumer of 60/s given 80/s: 300 s to reach the second's 60 s of lag, under a minute to
the first). Stuck partitions are left out: a member wedged on one partition still consumes the
others.

A backlogged observation adds the seconds it newly covers (the window the first time, then the time
since the member's previous backlogged observation, at most the window) to the member's
*confidence*, and moves its estimate towards the window's consume rate, those seconds weighed
against at most :data:`MEMORY_S` of the past (a member redeployed slower is believed within
minutes). An observation no newer than the member's last backlogged one changes nothing, so a
re-sent or replayed poll counts once.

Members are kept by identity (:attr:`assignors.model.Member.identity`: a rejoin keeps its estimate);
one that left is forgotten. A measured member keeps its estimate after its backlog is gone, raised
to what it consumes now, which it can at least do. A member never backlogged has no measure: what
it consumes is a lower bound, and a slow member's figure says nothing of it (the peers' median, the
rule before this one, made every member as slow as the one measured, so no move seemed to help a
slow consumer: #46). It is taken

- while some member is *over* its capacity (backlogged, and more arriving than it consumes:
  :data:`RISE`; only moving some of what arrives can help it), as able as the ablest member the
  group shows: the highest of the measured estimates and of what each unmeasured member consumes
  with the policy's headroom kept (``policy.capacity_headroom``, h: consumed / (1 - h)). A member
  that keeps up is assumed to have that much to spare; if it has not, it is measured in turn;
- otherwise at what it consumes, at least the slowest measure: a backlog its owner holds while it
  keeps pace with what arrives is not moved on the assumption that a peer would drain it faster
  (measured, the peer would hand it back).

With no estimate at all, or none resting on :data:`CONFIDENT_S` of backlog yet, the capacities are
unknown (None) and the members count as alike; so too while an unmeasured member has no rate yet
(its first observation, a topic re-created).

Example (a 20 s window, headroom 0.2): C0 has 9,000 records of lag that never fell below 8,000 and
consumed 100/s, so it is backlogged (9,000 > 100 x 60) and its estimate is 100/s resting on 20 s; C1
keeps up (lag 0 at times) consuming 40/s: it is taken at 100/s, the slowest measure. Were C0's lag
growing (120/s arriving), C0 would be over its capacity and C1 taken as able as the ablest: C0's
100/s; consuming 120/s, C1 would be taken at 150/s (120 / 0.8).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from streaming.lag import owners as by_owner
from streaming.lag.history import LagHistory
from streaming.lag.owners import Owners

Histories = Mapping[str, LagHistory]
"""topic -> its lag history."""
ByTopic = Mapping[str, tuple[np.ndarray, np.ndarray]]
"""An assignment as topic -> (partitions, owner indexes), int64 arrays (:attr:`Owners.by_topic`)."""
Held = dict[str, list[Any]]
"""member identity -> [records/s, seconds of backlog it rests on, ts of the last backlogged
observation, then the same three before it, null for none]: the memory the caller keeps. An entry
a member's own report gave (:func:`streaming.lag.reported.with_reports`) has a seventh, its mark:
:data:`AT_LEAST` or :data:`OVER`."""
AT_LEAST = "at_least"
"""The mark of a lower bound: the member is not measured, but taken at no less."""
OVER = "over"
"""The mark of a measure whose member cannot keep up (its lag grows): over its capacity, as a
backlogged member's lag shows it (:attr:`Found.over`)."""

BACKLOG_RECORDS = 1.0
"""The least lag, summed over a member's partitions, that counts as work waiting at every
observation."""
BACKLOG_S = 60.0
"""The least work waiting, in seconds at the member's own rate, that counts as backlog."""
CONFIDENT_S = 20.0
"""Seconds of backlog an estimate must rest on before the members count as unlike (the estimates,
the assignors and the policy's skew reading use it; below, the members count as alike)."""
LEAST_S = 10.0
"""The least lag over the whole window, in seconds at the member's own rate, that counts as backlog
when the lag grows (:data:`RISE`): twice the clients' default commit interval
(``auto.commit.interval.ms`` 5000)."""
RISE = 0.1
"""How much more than it consumes must arrive at a member over the window for a lag held above
:data:`LEAST_S` to count as one it cannot clear (records produced / records consumed - 1)."""
MEMORY_S = 600.0
"""Seconds of past backlog an estimate weighs against a new window."""


class Found(NamedTuple):
    """One observation's :func:`window`, per owner index."""

    backlogged: np.ndarray
    rates: np.ndarray
    """What each consumes (nan: it owns partitions and none has a rate yet)."""
    seconds: float
    """The window's seconds."""
    over: np.ndarray
    """Backlogged with more arriving than it consumes (:data:`RISE`): over its capacity."""


@dataclass(frozen=True)
class Capacity:
    records_per_s: float
    confidence_s: float
    """Seconds of backlog the estimate rests on (0: not measured)."""
    measured: bool


def _rows(lag: Histories, by_topic: ByTopic, stuck_after: int
          ) -> Iterator[tuple[LagHistory, np.ndarray, np.ndarray]]:
    """Per topic with a history: it, and its rows owned (stuck ones left out) with their owners'
    indexes."""
    for topic, (parts, who) in by_topic.items():
        hist = lag.get(topic)
        if hist is not None:
            rows, found = hist.lookup(parts)
            keep = found & ~hist.stuck(stuck_after)[rows]
            yield hist, rows[keep], who[keep]


def window(lag: Histories, by_topic: ByTopic, count: int, stuck_after: int) -> Found:
    """Per owner index ``0..count-1``, whether it is backlogged (and over its capacity) and its
    consume rate; the window's seconds. Of one topic's history, kept with its views (the block a
    call reads ahead seeds it, :func:`block_window`)."""
    if len(by_topic) == 1:
        (topic, (parts, who)), = by_topic.items()
        hist = lag.get(topic)
        if hist is not None:
            held = hist.view(window_key(parts, who, count, stuck_after),
                             lambda: (parts, who, _window(lag, by_topic, count, stuck_after)))
            if held[0] is parts and held[1] is who:
                return held[2]
    return _window(lag, by_topic, count, stuck_after)


def window_key(parts: np.ndarray, who: np.ndarray, count: int, stuck_after: int) -> tuple:
    """:func:`window`'s key among a history's views (as :func:`streaming.lag.owners.key`)."""
    return "capacity_window", id(parts), id(who), count, stuck_after


def _window(lag: Histories, by_topic: ByTopic, count: int, stuck_after: int) -> Found:
    rate, lag_sum = np.zeros(count), np.zeros(count)
    known, owns = np.zeros(count, dtype=bool), np.zeros(count, dtype=bool)
    seconds = 0.0
    for topic, (parts, who) in by_topic.items():
        hist = lag.get(topic)
        if hist is None:
            continue
        summed = by_owner.sums(hist, parts, who, count, stuck_after)
        lag_sum += summed.lag
        rate += summed.rate
        known |= summed.known
        owns |= summed.owns
        seconds = max(seconds, hist.window_s())
    long_backlog, maybe = _candidates(lag_sum, rate, known, seconds)
    backlogged, over = long_backlog, np.zeros(count, dtype=bool)
    if (maybe | long_backlog).any():
        least, arriving = _least_and_inflow(lag, by_topic, count, stuck_after)
        backlogged, over = _backlogged(long_backlog, maybe, least, arriving, rate)
    return Found(backlogged, np.where(known | ~owns, rate, np.nan), seconds, over)


def inflow(lag: Histories, by_topic: ByTopic, count: int, stuck_after: int) -> np.ndarray:
    """Per owner index ``0..count-1``, the records/s arriving on what it owns over the window
    (stuck partitions left out)."""
    return _least_and_inflow(lag, by_topic, count, stuck_after)[1]


def behind(lag: Histories, by_topic: ByTopic, count: int, stuck_after: int) -> np.ndarray:
    """Per owner index, whether more arrives on what it owns than it consumes over the window, by
    :data:`RISE` (stuck partitions left out): its lag grows, it does not keep up. Both rates are of
    the same partitions over the same window, so a member given more at a rebalance is not behind
    for what its old partitions carried."""
    consumed = window(lag, by_topic, count, stuck_after).rates
    with np.errstate(invalid="ignore"):  # nan: no consume rate yet, not behind
        return (consumed > 0) & (inflow(lag, by_topic, count, stuck_after)
                                 >= consumed * (1.0 + RISE))


def _least_and_inflow(lag: Histories, by_topic: ByTopic, count: int, stuck_after: int
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Per owner index, the least lag over the window and :func:`inflow`, in one pass over what it
    owns."""
    least, arriving = np.zeros(count), np.zeros(count)
    for hist, rows, who in _rows(lag, by_topic, stuck_after):
        least += np.bincount(who, weights=hist.least_lag()[rows], minlength=count)
        arriving += np.bincount(who, weights=hist.rate("end")[rows], minlength=count)
    return least, arriving


def _backlogged(long_backlog: np.ndarray, maybe: np.ndarray, least: np.ndarray, inflow: np.ndarray,
                rate: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Elementwise (per owner, or per poll and owner): backlogged, where the least lags decide, and
    backlogged with more arriving than it consumes (over its capacity)."""
    # a lag that stays up because the consumer runs late (a long commit interval, slow batches)
    # keeps pace with what arrives; one that stays up because the consumer cannot keep up grows
    rising = inflow >= rate * (1.0 + RISE)
    backlogged = ((long_backlog & (least >= BACKLOG_RECORDS))
                  | (maybe & rising & (least >= rate * LEAST_S)))
    return backlogged, backlogged & rising


def _candidates(lag_sum: np.ndarray, rate: np.ndarray, known: np.ndarray,
                seconds: float | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Elementwise (per owner, or per poll and owner): a long backlog, and a lag that may be one the
    least lag over the window decides (it only can where it is high: a member keeping up has latest
    lag below it)."""
    measurable = known & (rate > 0) & (seconds > 0)
    long_backlog = measurable & (lag_sum > rate * np.maximum(seconds, BACKLOG_S))
    return long_backlog, measurable & (lag_sum >= np.maximum(rate * LEAST_S, BACKLOG_RECORDS))


class BlockWindow(NamedTuple):
    """:func:`window` after each poll of a block read ahead, (polls, owners) arrays."""

    lag_sum: np.ndarray
    """Each owner's latest lag summed, as :func:`window` (and the skew reading) add it to zeros."""
    backlogged: np.ndarray
    rates: np.ndarray
    seconds: np.ndarray
    over: np.ndarray

    def at(self, i: int) -> Found:
        """Poll ``i``'s :func:`window`."""
        return Found(self.backlogged[i], self.rates[i], float(self.seconds[i]), self.over[i])


def block_window(sums: by_owner.OwnerSums, seconds: np.ndarray,
                 least_and_inflow: Callable[[], tuple[np.ndarray, np.ndarray]]) -> BlockWindow:
    """:func:`window` of one topic's history after each poll of a block read ahead
    (:mod:`streaming.lag.ahead`), from its owner sums after each
    (:func:`streaming.lag.owners.block_sums`, (polls, owners)), its window seconds after each and,
    read only when some poll needs them, the owners' least lags and produce rates summed ((polls,
    owners), as :func:`window` sums them)."""
    lag_sum, rate = 0.0 + sums.lag, 0.0 + sums.rate  # as window adds them to zeros
    long_backlog, maybe = _candidates(lag_sum, rate, sums.known, seconds[:, None])
    backlogged, over = long_backlog, np.zeros_like(long_backlog)
    # as window, elementwise: polls with neither stay all False either way
    if (maybe | long_backlog).any():
        least, inflow = (0.0 + a for a in least_and_inflow())
        backlogged, over = _backlogged(long_backlog, maybe, least, inflow, rate)
    rates = np.where(sums.known | ~sums.owns, rate, np.nan)
    for a in (lag_sum, backlogged, rates, over):  # rows of them are kept as views
        a.flags.writeable = False
    return BlockWindow(lag_sum, backlogged, rates, seconds, over)


def observe(held: Held, lag: Histories, owners: Owners, ts: int, stuck_after: int) -> None:
    """Update the estimates ``held`` with the lag observation at ``ts`` under the assignment
    ``owners`` (members by identity). More of the observation last counted is read again from the
    estimate before it."""
    if not owners.count or not lag:
        _forget_gone(held, owners.identities)
        return
    found = window(lag, owners.by_topic, owners.count, stuck_after)
    observed(held, owners.identities, owners.count, ts, found)


def _forget_gone(held: Held, keys: Sequence[str]) -> None:
    for gone in held.keys() - set(keys):
        del held[gone]


def observed(held: Held, keys: Sequence[str], count: int, ts: int, found: Found) -> None:
    """:func:`observe` given the observation's :func:`window` (``found``; a block read ahead has it
    already)."""
    _forget_gone(held, keys)
    backlogged, rate, seconds, _ = found
    for i, key in enumerate(keys[:count]):
        was = held.get(key)
        if was is not None and was[2] > ts:
            continue  # counted a newer observation already
        if backlogged[i]:
            held[key] = _counted(was, ts, float(rate[i]), seconds)
        elif was is not None and was[2] == ts:
            # the whole observation says it was not backlogged after all
            if was[3] is None:
                del held[key]
            else:
                held[key] = was[3:] + was[3:]


def _counted(held: list[Any] | None, ts: int, rate: float, window_s: float) -> list[Any]:
    """``[rate, seconds, ts]`` after a backlogged observation at ``ts``, then the three before it
    (null for none): an observation read again is counted from those."""
    base = None if held is None else held[:3] if held[2] < ts else held[3:]
    if base is None or base[0] is None:
        return [rate, window_s, ts, None, None, None]
    estimate, seconds, last = base
    new = min(window_s, (ts - last) / 1000.0)
    past = min(seconds, MEMORY_S)
    return [(estimate * past + rate * new) / (past + new), seconds + new, ts, *base]


def estimates(held: Held, lag: Histories, owners: Callable[[], Owners], stuck_after: int,
              headroom: float) -> dict[str, Capacity] | None:
    """member id -> its capacity, for the members that subscribe to something; None when none was
    measured. Never below what the member consumes now (stuck partitions left out). ``owners``: who
    owns what now, asked for only when some estimate is confident (every observation asks, and most
    find none); ``headroom``: ``policy.capacity_headroom``."""
    if not _confident(held):
        return None
    now = owners()
    return estimated(held, now, lambda: window(lag, now.by_topic, now.count, stuck_after),
                     headroom)


def records_per_s(held: Held, lag: Histories, owners: Callable[[], Owners], stuck_after: int,
                  headroom: float) -> dict[str, float] | None:
    """member id -> capacity (records/s), as the assignors take it; None when unknown
    (:func:`estimates`)."""
    found = estimates(held, lag, owners, stuck_after, headroom)
    return None if found is None else {mid: c.records_per_s for mid, c in found.items()}


def records_per_s_given(held: Held, owners: Owners, now: Found, headroom: float
                        ) -> dict[str, float] | None:
    """:func:`records_per_s` of the estimates ``held`` under ``owners``, given the observation's
    :func:`window` (read ahead)."""
    if not _confident(held):
        return None
    found = estimated(held, owners, lambda: now, headroom)
    return None if found is None else {mid: c.records_per_s for mid, c in found.items()}


def _confident(held: Held) -> bool:
    """Whether some estimate rests on :data:`CONFIDENT_S` of backlog (until one does, the
    capacities are unknown)."""
    return any(h[1] >= CONFIDENT_S for h in held.values())


def estimated(held: Held, owners: Owners, window_now: Callable[[], Found], headroom: float
              ) -> dict[str, Capacity] | None:
    """:func:`estimates` given how to read the observation's :func:`window` (read only when some
    estimate is confident)."""
    # an estimate on less than CONFIDENT_S of backlog is kept (it grows) but not acted on: a
    # consumer that starts slowly (a JVM warming up) looks slow for a few seconds
    entries = [held.get(k) for k in owners.identities]
    own = [h if h is not None and h[1] >= CONFIDENT_S else None for h in entries]
    measured = [h[0] for h in own if h is not None]
    if not measured:
        return None
    # a member's own report below saturation: no measure, but no less than it says
    marks = [h[6] if h is not None and len(h) > 6 else None for h in entries]
    floor = [h[0] if h is not None and m == AT_LEAST else 0.0
             for h, m in zip(entries, marks, strict=True)]
    found = window_now()
    if any(h is None and np.isnan(r) for h, r in zip(own, found.rates.tolist(), strict=True)):
        # an unmeasured member with no rate yet: not known enough to tell the members apart
        return None
    now = np.nan_to_num(found.rates).tolist()
    keeping_up = [r for h, r in zip(own, now, strict=True) if h is None]
    ablest = (unmeasured_estimate(measured, keeping_up, headroom)
              if found.over.any() or OVER in marks else None)
    return {mid: Capacity(max(h[0], now[i]), h[1], True) if h is not None
            else Capacity(max(floor[i], ablest if ablest is not None
                              else max(now[i], min(measured))), 0.0, False)
            for i, (mid, h) in enumerate(zip(owners.ids, own, strict=True))}


def unmeasured_estimate(measured: Sequence[float], consumed: Sequence[float],
                        headroom: float) -> float:
    """What a member never backlogged is taken to do while another is over its capacity: as much as
    the ablest member the group shows, the highest of the ``measured`` estimates and of what each
    member that keeps up ``consumed`` (records/s) with ``headroom`` (a fraction, below 1) of its
    capacity to spare."""
    return max(max(measured), max(consumed, default=0.0) / (1.0 - headroom))

"""Who owns what under an assignment, as index arrays, and a history's rows summed by owner: what
each member's partitions add up to.

:class:`Owners` is an assignment as every lag observation reads it: per topic, its partitions the
members own and each one's owner as an index (the members that subscribe to something, in order).
The job builds it once per members of a group's state
(:meth:`streaming.state.group_state.GroupState.owners`), the collector once per poll
(:mod:`streaming.lag.window`).

The capacity estimate (:mod:`streaming.lag.capacity`) and the skew reading
(:mod:`streaming.policy.lag_seconds`) both sum, per member, the latest lag of its partitions that
are not stuck; the capacity also their consume rates. :func:`sums` computes them once per history
state (kept with its views) for an assignment given as index arrays (:attr:`Owners.by_topic`), and
:func:`block_sums` for each poll of a block read ahead (:mod:`streaming.lag.ahead`), with the same
additions in the same order, so the same float sums.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from assignors.model import Member
from streaming.lag.history import LagHistory


class Owners:
    """Who owns what under an assignment, as index arrays per topic, and the members that subscribe
    to something in owner-index order: their ids and identities. The arrays are read-only (one
    Owners may be shared, as by group states through their members' memo)."""

    __slots__ = ("by_topic", "count", "identities", "ids")

    def __init__(self, count: int, by_topic: dict[str, tuple[np.ndarray, np.ndarray]],
                 ids: tuple[str, ...], identities: tuple[str, ...]) -> None:
        self.count = count
        self.by_topic = by_topic
        """topic -> (its partitions the members own, each one's owner as an index), int64 arrays."""
        self.ids = ids
        self.identities = identities

    @classmethod
    def of(cls, members: Sequence[Member] | None) -> Owners:
        """Of ``members``' current assignment (``owned``), members without topics left out."""
        subscribed = [m for m in members or [] if m.topics]
        owned: dict[str, tuple[list[int], list[int]]] = {}
        for i, m in enumerate(subscribed):
            for t, p in m.owned:
                parts, who = owned.setdefault(t, ([], []))
                parts.append(int(p))
                who.append(i)
        by_topic = {t: (_read_only(p), _read_only(w)) for t, (p, w) in owned.items()}
        return cls(len(subscribed), by_topic, tuple(m.member_id for m in subscribed),
                   tuple(m.identity for m in subscribed))


def _read_only(values: list[int]) -> np.ndarray:
    out = np.asarray(values, dtype=np.int64)
    out.flags.writeable = False
    return out


class OwnerSums(NamedTuple):
    """Per owner index, over its rows not stuck: latest lag (float64), consume rate of those that
    have one, whether any has one, whether it has any such row."""

    lag: np.ndarray
    rate: np.ndarray
    known: np.ndarray
    owns: np.ndarray


def key(parts: np.ndarray, who: np.ndarray, count: int, stuck_after: int) -> tuple:
    """The sums' key among a history's views (the arrays themselves are kept with them: ids are only
    unique among live objects)."""
    return "owners", id(parts), id(who), count, stuck_after


def sums(hist: LagHistory, parts: np.ndarray, who: np.ndarray, count: int, stuck_after: int
         ) -> OwnerSums:
    """The history's rows of ``parts`` (owned by ``who``, indexes below ``count``) summed by
    owner."""
    held = hist.view(key(parts, who, count, stuck_after),
                     lambda: (parts, who, _sums(hist, parts, who, count, stuck_after)))
    if held[0] is parts and held[1] is who:
        return held[2]
    return _sums(hist, parts, who, count, stuck_after)  # another array under a reused id: not kept


def _sums(hist: LagHistory, parts: np.ndarray, who: np.ndarray, count: int, stuck_after: int
          ) -> OwnerSums:
    rows, found = hist.lookup(parts)
    keep = found & ~hist.stuck(stuck_after)[rows]
    rows, who = rows[keep], who[keep]
    r = hist.consume_rate()[rows]
    ok = ~np.isnan(r)
    return _frozen(OwnerSums(
        np.bincount(who, weights=hist.latest_lag()[rows].astype(np.float64), minlength=count),
        np.bincount(who[ok], weights=r[ok], minlength=count),
        np.bincount(who[ok], minlength=count) > 0, np.bincount(who, minlength=count) > 0))


def block_sums(hist: LagHistory, parts: np.ndarray, who: np.ndarray, count: int, lag: np.ndarray,
               rate: np.ndarray, stuck: np.ndarray) -> OwnerSums:
    """:func:`sums` after each poll of a block, from the history's per-row views after each
    (``lag``, ``rate``, ``stuck``: (rows, K)); its rows must not change over the block. Each figure
    (K, count): row i is poll i's :func:`sums` (:func:`at`). One bincount per figure for all polls:
    poll i's owner m is key ``i * count + m``, each key's rows in the order :func:`sums` adds
    them."""
    keyed = _Keyed(hist, parts, who, count, stuck)
    r = rate[keyed.rows]
    ok = keyed.keep & ~np.isnan(r)
    return _frozen(OwnerSums(keyed.summed(keyed.keep, lag[keyed.rows].astype(np.float64)),
                             keyed.summed(ok, r), keyed.summed(ok) > 0,
                             keyed.summed(keyed.keep) > 0))


def block_kept_sums(hist: LagHistory, parts: np.ndarray, who: np.ndarray, count: int,
                    stuck: np.ndarray, figure: np.ndarray) -> np.ndarray:
    """(K, count): after each poll of a block, ``figure`` ((rows, K) float64) summed by owner over
    its rows not stuck, as :func:`streaming.lag.capacity.window` sums a history's per-row figure
    (its rows in the same order)."""
    keyed = _Keyed(hist, parts, who, count, stuck)
    return keyed.summed(keyed.keep, figure[keyed.rows])


class _Keyed:
    """A block's rows owned (in :func:`sums`' order) and their bincount keys, (rows owned, K) as the
    figures are: row by row, so each key (a poll's owner) adds its rows in their order, as
    :func:`sums` does."""

    def __init__(self, hist: LagHistory, parts: np.ndarray, who: np.ndarray, count: int,
                 stuck: np.ndarray) -> None:
        rows, found = hist.lookup(parts)
        self.rows, who = rows[found], who[found]
        self.polls, self.count = stuck.shape[1], count
        self.keys = who[:, None] + count * np.arange(self.polls)[None, :]
        self.keep = ~stuck[self.rows]

    def summed(self, mask: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
        return np.bincount(self.keys[mask], weights=None if weights is None else weights[mask],
                           minlength=self.polls * self.count).reshape(self.polls, self.count)


def at(block: OwnerSums, i: int) -> OwnerSums:
    """Poll ``i``'s :func:`sums` of :func:`block_sums` (read-only rows of its arrays)."""
    return OwnerSums(block.lag[i], block.rate[i], block.known[i], block.owns[i])


def _frozen(s: OwnerSums) -> OwnerSums:
    for a in s:
        a.flags.writeable = False
    return s

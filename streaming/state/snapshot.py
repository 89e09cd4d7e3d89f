"""A group's state as the assignors' :class:`~assignors.model.GroupSnapshot`."""

from __future__ import annotations

import dataclasses

import numpy as np

from assignors.model import GroupSnapshot
from streaming.lag import capacity, hot
from streaming.state.group_state import GroupState


def stuck_partitions(state: GroupState, k: int) -> list[tuple[str, int]]:
    return sorted((topic, int(p)) for topic, hist in state.lag.items()
                  for p in hist.ids[hist.stuck(k)].tolist())


def hot_partitions(state: GroupState) -> list[hot.HotPartition] | None:
    """The hot partitions (:mod:`streaming.lag.hot`) of the group's topics, by the produce rates
    over each partition's latest run; None while no rate is known (one observation)."""
    rates: dict[str, np.ndarray] = {}
    for t in state.subscribed_topics():
        n, hist = state.partition_count(t), state.lag.get(t)
        if hist is None or not n:
            continue
        r = np.full(n, np.nan)
        keep = hist.ids < n
        r[hist.ids[keep]] = hist.produce_rate()[keep]
        rates[t] = r
    if all(np.isnan(r).all() for r in rates.values()):
        return None
    return hot.hot_partitions(rates)


def to_snapshot(state: GroupState, stuck_after: int, headroom: float) -> GroupSnapshot | None:
    """The snapshot the assignors take, or None while the group has no members or no known topic;
    ``headroom``: ``policy.capacity_headroom``, for the capacities
    (:mod:`streaming.lag.capacity`)."""
    if not state.members:
        return None
    topics = {t: state.partition_count(t) for t in state.subscribed_topics()}
    topics = {t: n for t, n in topics.items() if n > 0}
    if not topics:
        return None
    lag: dict[str, list[int]] = {}
    produce: dict[str, list[float]] = {}
    consume: dict[str, list[float]] = {}
    for t, n in topics.items():
        hist = state.lag.get(t)
        if hist is None:
            lag[t], produce[t], consume[t] = [0] * n, [0.0] * n, [0.0] * n
            continue
        # tolist() of an int64 array gives Python ints: lag stays exact past 2**53
        lag[t] = hist.dense(hist.latest_lag(), n, np.int64).tolist()
        produce[t] = hist.dense(hist.rate("end"), n, np.float64).tolist()
        consume[t] = hist.dense(hist.rate("committed"), n, np.float64).tolist()
    racks = None
    if any(r is not None
           for t in topics for meta in state.partitions.get(t, []) for r in meta.racks):
        racks = {
            t: [tuple(meta.racks) for meta in state.partitions[t]] if t in state.partitions
            else [()] * n
            for t, n in topics.items()
        }
    # what each holds, within the partitions that exist now; the group's generation for every member
    members = tuple(
        dataclasses.replace(m, owned=tuple((t, p) for t, p in m.owned
                                           if t in topics and p < topics[t]),
                            generation=state.generation)
        for m in state.members
        if m.topics
    )
    if not members:
        return None
    found = capacity.estimates(state.known_capacity(), state.lag, state.owners, stuck_after,
                               headroom)
    return GroupSnapshot(
        topics=topics, members=members, replica_racks=racks, lag=lag, produce_rate=produce,
        consume_rate=consume,
        stuck=frozenset(stuck_partitions(state, stuck_after)),
        capacity=None if found is None else {mid: c.records_per_s for mid, c in found.items()},
        capacity_at_least=frozenset() if found is None else frozenset(
            mid for mid, c in found.items() if not c.measured),
    )

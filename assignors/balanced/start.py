"""Starting candidates: the assignments the search then improves.

* :func:`greedy`: LPT over the loaded partitions, then fewest-partitions-first over the zero-load
  ones, optionally keeping every partition with its current owner (``sticky``) and preferring cheap
  members (``prefer``); see :mod:`.lpt`.
* :func:`shed`: members above a target give up few, light partitions, which are placed again.
* :func:`peer_seeds`: the results of the other registered assignors, on small groups.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from assignors.model import TopicPartition

from .lpt import place
from .problem import Problem
from .state import State

# (assignor, its options, whether it sees the members' racks): sticky as kafka-python clients run it
# (no client.rack sent) and rack-aware.
PEER_SEEDS: tuple[tuple[str, dict[str, Any], bool], ...] = (
    ("range", {}, True),
    ("roundrobin", {}, True),
    ("lag", {}, True),
    ("sticky", {}, False),
    ("sticky", {"prefer_rack_aware_logic": True}, True),
)


def count_caps(problem: Problem) -> list[int] | None:
    """With a count bound and one class of subscriptions, the most partitions a member may get."""
    k = problem.opts.max_count_skew
    if k is None or problem.n_classes != 1:
        return None
    ceil = -(-problem.n_parts // problem.n_members)
    return [ceil + k - k // 2] * problem.n_members


def greedy(problem: Problem, name: str, *, sticky: bool, cap: float, prefer: bool) -> State:
    """A complete assignment built greedily.

    ``sticky``: every owned partition stays with its owner (the current assignment, completed).
    ``prefer``: among the least-loaded subscriber, the owner and the least-loaded same-rack
    subscribers, the cheapest (cross-rack/move cost) whose load stays within ``cap`` takes the
    partition; the least-loaded subscriber when none fits. Stuck partitions always stay.
    """
    st = State(name, problem.n_members, problem.n_parts, problem.scale_list)
    part_load, owner = problem.part_load, problem.owner
    keep = (problem.pinned | (owner >= 0)) if sticky else problem.pinned
    kept = np.flatnonzero(keep)
    if len(kept):
        members = owner[kept]
        st.member_of[kept] = members
        st.load[:] = np.bincount(members, weights=part_load[kept],
                                 minlength=problem.n_members) * problem.scale
        st.count[:] = np.bincount(members, minlength=problem.n_members)
        for p, m in zip(kept.tolist(), members.tolist(), strict=True):
            st.held[m].add(p)
        st.forget_movable()
    order = np.flatnonzero(~keep)
    order = order[np.argsort(-part_load[order], kind="stable")]
    positive = order[part_load[order] > 0]
    zero = order[part_load[order] <= 0]
    if prefer and len(zero):
        # Zero-load partitions can go in any order: first those whose owner is a free (same-rack)
        # home, so they keep it, then those that must leave a cross-rack owner, then the unowned.
        at_owner = np.where(owner[zero] >= 0, problem.costs_at_owner()[zero], np.inf)
        rank = np.where(at_owner <= 0, 0, np.where(np.isfinite(at_owner), 1, 2))
        zero = zero[np.argsort(rank, kind="stable")]
    full = count_caps(problem)
    place(problem, st, positive.tolist(), cap, prefer, by_count=False, full=full)
    place(problem, st, zero.tolist(), cap, prefer, by_count=True, full=full)
    return st


def shed(problem: Problem, st: State, target: float) -> None:
    """Bring every member down to ``target`` with few moves, then place what was taken off.

    A member above target gives up the lightest single partition that covers its excess, else its
    heaviest one, and repeats (few partitions moved, the light ones when one suffices). The
    partitions taken off go, heaviest first, to the cheapest member (owner, same rack) that stays
    within target, else to the least loaded (local search then takes over).
    """
    if not np.isfinite(target):
        return
    over = np.flatnonzero(st.load > target * (1 + 1e-12))
    if len(over) == 0:
        return
    part_load = problem.part_load_list
    taken: list[int] = []
    for m in over.tolist():
        parts = st.movable(m, problem.pinned)
        if len(parts) == 0:
            continue
        for p in _cover_excess(problem, parts, float(st.load[m]) - target, target,
                               problem.scale_list[m]):
            st.take_off(p, part_load[p])
            taken.append(p)
    taken.sort(key=lambda p: (-part_load[p], p))
    full = count_caps(problem)
    place(problem, st, [p for p in taken if part_load[p] > 0], target, True, by_count=False,
          full=full)
    place(problem, st, [p for p in taken if part_load[p] <= 0], target, True, by_count=True,
          full=full)


def _cover_excess(problem: Problem, parts: np.ndarray, excess: float, target: float,
                  scale: float) -> list[int]:
    """Partitions to give up to shed ``excess`` (of a member at ``scale``): the lightest that covers
    what is left, else the heaviest, until covered. Returned in (load, index) order."""
    loads = problem.part_load[parts] * scale
    order = np.lexsort((parts, loads))
    parts, loads = parts[order], loads[order]
    kept = np.ones(len(parts), dtype=bool)
    while excess > target * 1e-12 and kept.any():
        covering = np.flatnonzero(kept & (loads >= excess))
        i = int(covering[0]) if len(covering) else int(np.flatnonzero(kept)[-1])
        kept[i] = False
        excess -= float(loads[i])
    return parts[~kept].tolist()


def peer_seeds(problem: Problem) -> Iterator[State]:
    """The other registered assignors' results (a failing or missing one is only a missing seed)."""
    from assignors import registry  # registry imports this package: look it up at call time

    available = set(registry.names())
    members = tuple(problem.members)
    with_racks = dataclasses.replace(problem.snapshot, members=members)
    rackless = dataclasses.replace(
        with_racks, members=tuple(dataclasses.replace(m, rack=None) for m in members))
    for name, kw, racks in PEER_SEEDS:
        if name not in available:
            continue
        try:
            result = registry.get(name)(with_racks if racks else rackless, **kw)
        except Exception:  # a peer that fails is only a missing seed
            continue
        st = from_assignment(problem, f"{name}{'-rack' if kw else ''}", result)
        if st is not None:
            yield st


def from_assignment(problem: Problem, name: str,
                    result: Mapping[str, list[TopicPartition]]) -> State | None:
    """``result`` as a state, or ``None`` unless it gives every partition once to a subscriber.
    A stuck partition goes back to its owner, whatever ``result`` did with it."""
    st = State(name, problem.n_members, problem.n_parts, problem.scale_list)
    member_index = {m.member_id: i for i, m in enumerate(problem.members)}
    for member_id, tps in result.items():
        i = member_index.get(member_id)
        if i is None:
            return None
        for t, p in tps:
            j = problem.topic_index.get(t)
            if j is None or not (0 <= p < problem.topic_sizes[j]) or not problem.subscribed[i, j]:
                return None
            q = int(problem.topic_start[j]) + p
            if st.member_of[q] >= 0:
                return None
            st.put(q, i, problem.part_load_list[q])
    if (st.member_of < 0).any():
        return None
    for p in np.flatnonzero(problem.pinned & (st.member_of != problem.owner)).tolist():
        st.move(p, int(problem.owner[p]), problem.part_load_list[p])
    return st

"""The leader's fallback on the job's load model: when the latest recommendation no longer fits the
group (a member left or joined, partitions were added), the leader balances the figures the job
decided on (the recommendation's ``load_model``, :mod:`streaming.contracts.load_model`) rather than
a lag snapshot of its own. The Java ``LoadModel.assign`` (client assignor and KIP-848 server
assignor) computes the same, checked on the shared vectors in ``tests/data/fallback``.

The algorithm (a greedy, LPT on members of unequal speed):

1. *Loads.* A partition in the model weighs ``lag + rate * horizon_s`` (a null rate adds nothing;
   doubles, summed in that order); one the model lacks (a topic grown or newly subscribed) weighs
   the median of the model's partition loads (the mean of the two middle ones for an even count; 0
   without any).
2. *Capacities.* Each model member is matched to a current one as
   :func:`streaming.apply.plan.map_members` does (``group.instance.id`` when it has one, else the
   exact member id, else the client id when exactly one current member has it); a current member
   matched by none takes the median of the matched ones' capacities. Without capacities in the
   model, or none matched, every member counts 1 (alike).
3. *Greedy.* Partitions go heaviest first (ties: topic name in UTF-8 byte order, then partition
   number), each to the member subscribed to its topic that would finish it first, least
   ``(load + w) / capacity`` (ties: fewer partitions so far, then member id in UTF-8 byte order). A
   partition of load 0 goes to the subscribed member with the fewest partitions (ties: least
   ``load / capacity``, then member id), so unloaded partitions spread by count.

Equal (bit for bit) in both languages: every figure is an IEEE double computed in the same order,
and every tie goes by a stated order. Cost: partitions x members steps, vectorised over the members.

Example: ``t`` with loads 900, 300, 300, 0 (p0..p3), members ``a`` (capacity 300/s) and ``b``
(150/s). t-0 (900): a would finish at 3.0 s, b at 6.0 s: a. t-1 (300; before t-2 on the tie): a at
(900 + 300) / 300 = 4.0, b at 2.0: b. t-2: a at 4.0, b at 4.0, one partition each: by member id, a.
t-3 (load 0): the fewest partitions, b. So a: t-0, t-2; b: t-1, t-3.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np

from assignors.model import Assignment, Member, TopicPartition
from streaming.contracts.load_model import LoadModel

NAME = "load-model"
"""The fallback's name in logs and in the members' user data."""


def _median(values: Sequence[float]) -> float:
    s = sorted(values)
    if not s:
        return 0.0
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


def partition_load(model: LoadModel, topic: str, p: int) -> float | None:
    """``lag + rate * horizon_s`` of a partition in the model; None when the model does not have
    it."""
    lags = model.lag.get(topic)
    if lags is None or p >= len(lags):
        return None
    rate = model.rate[topic][p]
    return float(lags[p]) + (rate * model.horizon_s if rate is not None else 0.0)


def loads(model: LoadModel, partitions: Sequence[TopicPartition]) -> list[float]:
    """The load of each partition (step 1)."""
    known = [partition_load(model, t, p) for t, n in model.lag.items() for p in range(len(n))]
    default = _median([w for w in known if w is not None])
    out = []
    for t, p in partitions:
        w = partition_load(model, t, p)
        out.append(default if w is None else w)
    return out


def capacities(model: LoadModel, members: Sequence[Member]) -> dict[str, float]:
    """member id -> capacity (step 2)."""
    if not model.members:
        return {m.member_id: 1.0 for m in members}
    by_instance = {m.instance_id: m for m in members if m.instance_id}
    by_member_id = {m.member_id: m for m in members}
    clients = Counter(m.client_id for m in members if m.client_id)
    by_client = {m.client_id: m for m in members if m.client_id}
    found: dict[str, float] = {}
    for entry in model.members:
        if entry.instance_id:
            hit = by_instance.get(entry.instance_id)
        elif entry.member_id in by_member_id:
            hit = by_member_id[entry.member_id]
        elif entry.client_id and clients[entry.client_id] == 1:
            hit = by_client[entry.client_id]
        else:
            hit = None
        if hit is not None and hit.member_id not in found:
            found[hit.member_id] = entry.records_per_s
    if not found:
        return {m.member_id: 1.0 for m in members}
    default = _median(list(found.values()))
    return {m.member_id: found.get(m.member_id, default) for m in members}


def _utf8(s: str) -> bytes:
    return s.encode("utf-8", "surrogatepass")


def assign(model: LoadModel, members: Sequence[Member], topics: Mapping[str, int]) -> Assignment:
    """Every current subscribed partition to one member subscribed to its topic (step 3); every
    member listed."""
    order = sorted(members, key=lambda m: _utf8(m.member_id))
    out: Assignment = {m.member_id: [] for m in order}
    subscribed = sorted({t for m in order for t in m.topics if topics.get(t, 0) > 0}, key=_utf8)
    parts = [(t, p) for t in subscribed for p in range(topics[t])]
    weights = loads(model, parts)
    ranked = sorted(range(len(parts)), key=lambda i: (-weights[i], _utf8(parts[i][0]), parts[i][1]))
    cap = capacities(model, order)
    c = np.array([cap[m.member_id] for m in order], dtype=np.float64)
    load = np.zeros(len(order), dtype=np.float64)
    count = np.zeros(len(order), dtype=np.int64)
    eligible = {t: np.array([i for i, m in enumerate(order) if t in m.topics], dtype=np.int64)
                for t in subscribed}
    for i in ranked:
        (t, p), w = parts[i], weights[i]
        idx = eligible[t]
        time = (load[idx] + w) / c[idx]
        # np.lexsort: the last key is the primary one; the index (member id order) breaks what ties
        # remain
        best = idx[np.lexsort((idx, count[idx], time) if w > 0 else (idx, time, count[idx]))[0]]
        load[best] += w
        count[best] += 1
        out[order[best].member_id].append((t, p))
    return {k: sorted(v) for k, v in out.items()}

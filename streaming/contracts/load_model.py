"""The job's load model: what a recommendation was decided on, published with it so that a group
leader whose recommendation no longer fits (a member left or joined) can balance the job's figures
rather than its own lag snapshot (:mod:`streaming.apply.fallback`; Java: ``LoadModel.java``).

It is the ``load_model`` field of a trigger-feed message
(:mod:`streaming.contracts.recommendation`), and so of the ``feed_value`` column of its Delta row.
Additive: a reader that does not know it ignores it, and a message without it (written before it
existed, or for a group too large) leaves the leader's fallback as it was::

    "load_model": {"version": 1, "horizon_s": 60.0,
                   "topics": [{"topic": "orders", "lag": [1200, 0, 35],
                               "rate": [116.25, 58.1, null]}],
                   "members": [{"member_id": "c-0-6f1e...", "instance_id": null, "client_id": "c-0",
                                "records_per_s": 150.0}]}

- ``horizon_s``: the seconds of production the decision added to the lag: a partition's load is
  ``lag + rate * horizon_s`` (a null rate adds nothing), as :mod:`assignors.balanced` computes it.
- ``topics``: per subscribed topic (by name), one exact integer lag (0..2^63-1, saturated) and one
  produce rate (records/s: a finite double in 0..:data:`MAX_RATE`, rounded to 3 decimals, or null
  when unknown) per partition.
- ``members``: per member, the capacity the decision used (records/s, in (0, :data:`MAX_RATE`];
  :mod:`streaming.lag.capacity`); null while capacities are unknown (the members alike).

Bounded: a group of more than :data:`MAX_PARTITIONS` partitions gets no model (about 30 bytes a
partition, so at most ~3 MB before compression, within the feed's 16 MB limit beside the assignment
itself). Versioned: :data:`VERSION`; a reader takes a model of another version, or one that breaks
any rule above, as absent.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

VERSION = 1
MAX_PARTITIONS = 100_000
MAX_RATE = 1e12
"""records/s, for rates and capacities: a larger rate is written as null, larger capacities as no
capacities (only broken clocks give such figures)."""
MAX_HORIZON_S = 1e6
"""A model with a longer horizon is not published: with :data:`MAX_RATE`, every load stays a finite
double."""
MAX_LAG = 2**63 - 1


@dataclass(frozen=True)
class MemberCapacity:
    member_id: str | None
    instance_id: str | None
    client_id: str | None
    records_per_s: float


@dataclass(frozen=True)
class LoadModel:
    """A parsed ``load_model``: topic -> lags and rates per partition, and the members' capacities
    (None: unknown)."""

    horizon_s: float
    lag: Mapping[str, Sequence[int]]
    rate: Mapping[str, Sequence[float | None]]
    members: tuple[MemberCapacity, ...] | None


def rate_value(rate: float | None) -> float | None:
    """A produce rate as the model writes it: rounded to 3 decimals, or None when unknown or out of
    range."""
    if rate is None or not math.isfinite(rate) or rate < 0 or rate > MAX_RATE:
        return None
    return round(float(rate), 3)


def build(horizon_s: float, lag: Mapping[str, Sequence[int]],
          rate: Mapping[str, Sequence[float | None]], members: Sequence[MemberCapacity] | None
          ) -> dict[str, Any] | None:
    """The ``load_model`` value, or None when the group is too large or the horizon out of range.
    ``lag`` and ``rate`` have one value per partition of each topic; lags are clamped to
    0..2^63-1."""
    if sum(len(v) for v in lag.values()) > MAX_PARTITIONS or not 0 <= horizon_s <= MAX_HORIZON_S:
        return None
    if members is not None and not all(0 < m.records_per_s <= MAX_RATE for m in members):
        members = None
    topics = [{"topic": t, "lag": [min(max(int(x), 0), MAX_LAG) for x in lag[t]],
               "rate": [rate_value(r) for r in rate.get(t, [None] * len(lag[t]))]}
              for t in sorted(lag)]
    return {"version": VERSION, "horizon_s": float(horizon_s), "topics": topics,
            "members": None if members is None else [
                {"member_id": m.member_id, "instance_id": m.instance_id, "client_id": m.client_id,
                 "records_per_s": float(m.records_per_s)} for m in members]}


def _int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _number(x: Any, low: float, high: float) -> bool:
    if _int(x):
        return bool(low <= x <= high)  # an int too large for a double is out of range, not an error
    return isinstance(x, float) and math.isfinite(x) and low <= x <= high



def _name(x: Any) -> bool:
    return x is None or (isinstance(x, str) and 0 < len(x) <= 4096)


def _topic(t: Any) -> tuple[str, list[int], list[float | None]] | None:
    if not isinstance(t, dict) or not isinstance(t.get("topic"), str) or not t["topic"]:
        return None
    lag, rate = t.get("lag"), t.get("rate")
    if not isinstance(lag, list) or not isinstance(rate, list) or len(lag) != len(rate):
        return None
    if not all(_int(x) and 0 <= x <= MAX_LAG for x in lag):
        return None
    if not all(r is None or _number(r, 0, MAX_RATE) for r in rate):
        return None
    return t["topic"], lag, [None if r is None else float(r) for r in rate]


def _member(m: Any) -> MemberCapacity | None:
    if not isinstance(m, dict) or not all(_name(m.get(k))
                                          for k in ("member_id", "instance_id", "client_id")):
        return None
    c: Any = m.get("records_per_s")
    if not _number(c, 0, MAX_RATE) or c <= 0:
        return None
    return MemberCapacity(m.get("member_id"), m.get("instance_id"), m.get("client_id"), float(c))


def read(value: Any) -> LoadModel | None:
    """The ``load_model`` of a feed message, or None when absent, of another version or breaking any
    rule (a reader then falls back as it did before models existed)."""
    if not isinstance(value, dict) or not _int(value.get("version")) or value["version"] != VERSION:
        return None
    horizon: Any = value.get("horizon_s")
    topics, members = value.get("topics"), value.get("members")
    if not _number(horizon, 0, MAX_HORIZON_S) or not isinstance(topics, list):
        return None
    lag: dict[str, list[int]] = {}
    rate: dict[str, list[float | None]] = {}
    for t in topics:
        parsed = _topic(t)
        if parsed is None or parsed[0] in lag:
            return None
        lag[parsed[0]], rate[parsed[0]] = parsed[1], parsed[2]
    if sum(map(len, lag.values())) > MAX_PARTITIONS:
        return None
    caps: tuple[MemberCapacity, ...] | None = None
    if members is not None:
        if not isinstance(members, list):
            return None
        found = [_member(m) for m in members]
        caps = tuple(c for c in found if c is not None)
        if len(caps) != len(found):
            return None
    return LoadModel(float(horizon), lag, rate, caps)

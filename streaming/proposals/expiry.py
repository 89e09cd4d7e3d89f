"""When a proposal (a recommendation made in ``approve`` mode, not approved yet) expires.

A proposal is reviewed against the group it was made for. It expires, so that ``rebalancer approve``
refuses it and ``rebalancer verify`` says ``expired`` (each with the reason), when any of these
holds:

- the group's membership changed since: a member joined or left. Members are named as the job names
  them for its ``membership_change`` trigger (:attr:`assignors.model.Member.identity`: static id,
  else client id and host, else member id), so a consumer that rejoined under the same identity is
  no change;
- its partitions changed since: a subscribed topic has another partition count, or the members
  subscribe to another set of topics;
- it is older than ``policy.proposal_expiry_s`` (an hour by default), counted from the observation
  it was made on (its ``event_ts``), as Strimzi has Cruise Control's stale proposals refreshed.

Where the facts come from. The job writes, with each proposal, the member identities and the
partition count of each subscribed topic it was made on, and when it expires: the ``proposal`` field
of the feed message (:func:`basis`). ``approve`` and ``verify`` compare them with the group as they
read it live, with the collector's code (:func:`reason`). Not the job's state: it lives in the job's
checkpoint, where no command reads it, and trails the group by a poll and a batch (or more, when the
job is down), while an approval acts on the group as it runs when the operator approves. Not a mark
the job would write to the feed either: the job does not read approvals, so its mark could overwrite
one in the compacted topic. The deadline is written at proposal time, from event time, so a replayed
batch publishes the same message and every reviewer, whatever its own configuration, reads the same
deadline. A proposal without the field (published before it existed) never expires by these rules.

Example: a proposal made at 10:00:00 on members ``client:c0@10.0.0.1`` and ``client:c1@10.0.0.2``
over topic ``orders`` of 4 partitions, with the default expiry. At 10:20, ``c2`` on 10.0.0.3 has
joined: expired, "member client:c2@10.0.0.3 joined since the proposal". At 11:00:01 with the same
members and partitions: expired, "made 3601 s ago, past its expiry at 11:00:00 UTC
(policy.proposal_expiry_s)".
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from assignors.model import Member
from streaming.contracts.recommendation import PROPOSAL_FIELD


@dataclass(frozen=True)
class Basis:
    """What a proposal was made on (the ``proposal`` field, read)."""

    expires_at: int
    """epoch ms"""
    members: frozenset[str]
    """member identities (:attr:`assignors.model.Member.identity`)"""
    partitions: Mapping[str, int]
    """subscribed topic -> partition count"""


def basis(members: Sequence[Member], topics: Mapping[str, int], event_ts: int, expiry_s: float
          ) -> dict[str, Any]:
    """The ``proposal`` field of a proposal made at ``event_ts`` (epoch ms) on ``members`` (those
    subscribing to something) and ``topics`` (subscribed topic -> partition count)."""
    return {"expires_at": int(event_ts) + round(expiry_s * 1000),
            "members": sorted({m.identity for m in members if m.topics}),
            "partitions": {t: int(n) for t, n in sorted(topics.items()) if n > 0}}


def read(value: Any) -> Basis | None:
    """The ``proposal`` field of a feed message as a :class:`Basis`; None when absent or
    malformed."""
    if not isinstance(value, Mapping):
        return None
    at, members, parts = value.get("expires_at"), value.get("members"), value.get("partitions")
    if not isinstance(at, int) or isinstance(at, bool) or not isinstance(members, list) or \
            not isinstance(parts, Mapping):
        return None
    if not all(isinstance(m, str) for m in members) or not all(
            isinstance(t, str) and _int(n) and n > 0 for t, n in parts.items()):
        return None
    return Basis(at, frozenset(members), dict(parts))


def reason(rec: Mapping[str, Any], members: Sequence[Member], partitions: Mapping[str, int],
           now_ms: float) -> str | None:
    """Why the proposal ``rec`` (a feed message) has expired for the group as read now (``members``,
    ``partitions``: subscribed topic -> partition count), or None while it has not (or carries no
    basis)."""
    found = read(rec.get(PROPOSAL_FIELD))
    if found is None:
        return None
    why = _membership(found, members) + _partitions(found, partitions)
    if now_ms >= found.expires_at:
        made = rec.get("event_ts")
        age = (f"made {(now_ms - made) / 1000:.0f} s ago, " if isinstance(made, int) and _int(made)
               else "")
        why.append(f"{age}past its expiry at {_utc(found.expires_at)} (policy.proposal_expiry_s)")
    return "; ".join(why) or None


def _membership(found: Basis, members: Sequence[Member]) -> list[str]:
    now = {m.identity for m in members if m.topics}
    out = []
    for verb, names in (("joined", sorted(now - found.members)),
                        ("left", sorted(found.members - now))):
        if names:
            shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
            out.append(f"member{'s' if len(names) > 1 else ''} {shown} {verb} since the proposal")
    return out


def _partitions(found: Basis, partitions: Mapping[str, int]) -> list[str]:
    now = {t: n for t, n in partitions.items() if n > 0}
    out = []
    for t in sorted(set(now) | set(found.partitions)):
        was, is_ = found.partitions.get(t), now.get(t)
        if was is None:
            out.append(f"topic {t} ({is_} partitions) is subscribed since the proposal")
        elif is_ is None:
            out.append(f"topic {t} is no longer subscribed (or no longer exists)")
        elif was != is_:
            out.append(f"{t} has {is_} partitions now, {was} in the proposal")
    return out


def _int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _utc(ms: int) -> str:
    try:
        return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (OverflowError, OSError, ValueError):
        return f"{ms} ms"


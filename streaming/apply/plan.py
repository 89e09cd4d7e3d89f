"""What the group leader assigns at a rebalance: the latest recommendation when it still fits, else
a locally computed fallback. Pure: plain values in, plain values out, no Kafka.

A recommendation names members as the collector saw them (member id, ``group.instance.id``, client
id, rack). Member ids change whenever a consumer restarts, so :func:`map_members` finds each
recommended member among the current ones by, in order:

1. ``group.instance.id`` (static membership), when the recommendation has one;
2. the exact member id (a member that rejoined without restarting keeps it);
3. the client id, when exactly one current member has it. The leader does not get client ids in the
   JoinGroup response, but the broker makes every dynamic member id ``<client id>-<UUID>``
   (:func:`~streaming.apply.identities.client_id_from_member_id`), and this project's assignor also
   sends it in its user data.

It then fits (:func:`check_fits`) only when every recommended member is present, every current
member is in it, and it covers exactly the current subscribed partitions: every partition once,
each to a member subscribed to its topic. Anything else — a member gone or new, a partition
added or removed, a subscription changed — and the recommendation is not applied: the fallback
assignor runs instead and :class:`Decision` says why.

Example: the recommendation v3 gives ``c-0`` t-0, t-1 and ``c-1`` t-2, t-3. The group now has
``c-0-6f1e...`` and ``c-1-0a9b...`` subscribed to ``t`` (4 partitions): mapped by client id, it fits
and is applied. Had ``t`` grown to 6 partitions, t-4 and t-5 would be missing from it: the fallback
(on the recommendation's load model; without one ``sticky``, or ``balanced`` on lag) assigns all six
and says why.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from assignors import registry
from assignors.errors import AssignorError
from assignors.model import Assignment, GroupSnapshot, Member, TopicPartition
from streaming.apply import fallback as load_fallback
from streaming.apply.errors import DoesNotFit, InvalidRecommendation
from streaming.apply.identities import USER_DATA_KEY, USER_DATA_VERSION
from streaming.contracts import load_model
from streaming.contracts.recommendation import ACTIONABLE, STATUSES, recommendation_id
from streaming.contracts.recommendation import AUTO as AUTO_STATUS
from streaming.text import printable

AUTO = "auto"
"""Fallback ``auto``: the recommendation's load model (:mod:`.fallback`), else ``balanced`` on lag,
else ``sticky``."""


@dataclass(frozen=True)
class Decision:
    """The assignment the leader hands out, where it came from and why."""

    assignment: dict[str, list[TopicPartition]]
    source: str
    """``recommendation`` or ``fallback``."""
    assignor: str
    """``recommendation`` or the fallback assignor's name."""
    reason: str
    version: int | None = None
    """Version of the recommendation applied (None for a fallback)."""
    recommendation_id: str | None = None
    considered: int = 0
    """Highest recommendation version the leader looked at (applied or not); members skip asking for
    a rebalance for it again."""
    figures: dict[str, Any] = field(default_factory=dict)

    @property
    def applied(self) -> bool:
        return self.source == "recommendation"

    def user_data(self) -> bytes:
        """What every member receives in its ``ConsumerProtocolAssignment.user_data``."""
        return json.dumps({USER_DATA_KEY: USER_DATA_VERSION, "source": self.source,
                           "assignor": self.assignor, "version": self.version,
                           "recommendation_id": self.recommendation_id,
                           "considered": self.considered}, separators=(",", ":")).encode()


# -- recommendations -------------------------------------------------------------------------------


MAX_FEED_VALUE_BYTES = 64 * 1024 * 1024
"""A feed value larger than this is refused unread (the job's own values are far smaller)."""
MAX_NAME_CHARS = 4096
MAX_VERSION = 2**63 - 1
MAX_PARTITION = 2**31 - 1
_IDENTITIES = ("member_id", "instance_id", "client_id", "rack")


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _name(x: Any) -> bool:
    return isinstance(x, str) and 0 < len(x) <= MAX_NAME_CHARS


def parse_recommendation(value: bytes | str | Mapping[str, Any]) -> dict[str, Any]:
    """A trigger-feed value (see :mod:`streaming.contracts.recommendation`) checked for everything
    applying reads.

    Raises :class:`~streaming.apply.errors.InvalidRecommendation` (a ``ValueError``) for any value
    that is not a well-formed recommendation, whatever it holds (deep nesting, wrong types, absurd
    numbers, an id that is not the one the job derives), so a reader can skip it and go on."""
    rec = _loaded(value)
    _check_fields(rec)
    _check_assignment(rec["assignment"])
    return rec


def _loaded(value: bytes | str | Mapping[str, Any]) -> dict[str, Any]:
    """The value as a dict: JSON text parsed within its bounds, or a mapping copied."""
    if isinstance(value, bytes | bytearray | str):
        if len(value) > MAX_FEED_VALUE_BYTES:
            raise InvalidRecommendation(
                f"recommendation of {len(value)} bytes exceeds {MAX_FEED_VALUE_BYTES}")
        try:
            rec = json.loads(value)
        except RecursionError:
            raise InvalidRecommendation("recommendation nested too deeply") from None
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise InvalidRecommendation(f"recommendation is not JSON: {e}") from None
    elif isinstance(value, Mapping):
        rec = dict(value)
    else:
        raise InvalidRecommendation(
            f"a recommendation is a JSON object, got {type(value).__name__}")
    if not isinstance(rec, dict):
        raise InvalidRecommendation("a recommendation is a JSON object")
    return rec


def _check_fields(rec: dict[str, Any]) -> None:
    """Group, version, id and status as the job writes them."""
    for name in ("group", "version", "assignment"):
        if name not in rec:
            raise InvalidRecommendation(f"recommendation without {name!r}")
    if not _name(rec["group"]):
        raise InvalidRecommendation("recommendation group must be a non-empty string")
    version = rec["version"]
    if not _is_int(version) or not 1 <= version <= MAX_VERSION:
        raise InvalidRecommendation(
            f"recommendation version must be an integer in 1..2^63-1, got {printable(version, 40)}")
    if ("recommendation_id" in rec
            and rec["recommendation_id"] != recommendation_id(rec["group"], version)):
        raise InvalidRecommendation(f"recommendation_id {printable(rec['recommendation_id'], 40)} "
                                    f"is not the id of version {version} of this group")
    if "status" in rec and rec["status"] not in STATUSES:
        raise InvalidRecommendation(f"recommendation status must be one of {', '.join(STATUSES)}, "
                                    f"got {printable(rec['status'], 40)}")


def _check_assignment(assignment: Any) -> None:
    """A list of entries, each with optional identities and [topic, partition] pairs."""
    if not isinstance(assignment, list):
        raise InvalidRecommendation("recommendation assignment must be a list")
    for entry in assignment:
        if not isinstance(entry, dict) or not isinstance(entry.get("partitions"), list):
            raise InvalidRecommendation(
                f"recommendation assignment entry {printable(entry, 80)} has no partitions list")
        for key in _IDENTITIES:
            if entry.get(key) is not None and not _name(entry[key]):
                raise InvalidRecommendation(
                    f"recommendation entry {key} must be a non-empty string or null")
        for tp in entry["partitions"]:
            if not (isinstance(tp, list | tuple) and len(tp) == 2 and _name(tp[0])
                    and _is_int(tp[1]) and 0 <= tp[1] <= MAX_PARTITION):
                raise InvalidRecommendation(
                    f"partition {printable(tp, 80)} is not [topic, partition]")


def status_of(rec: Mapping[str, Any]) -> str:
    """The record's status; ``auto`` for a value without one (written before modes existed)."""
    return str(rec.get("status") or AUTO_STATUS)


def actionable(rec: Mapping[str, Any] | None) -> bool:
    """True when the apply helpers may act on ``rec``: status ``auto`` or ``approved``."""
    return rec is not None and status_of(rec) in ACTIONABLE


def _entry_label(entry: Mapping[str, Any]) -> str:
    return entry.get("instance_id") or entry.get("client_id") or entry.get("member_id") or "?"


def map_members(entries: Sequence[Mapping[str, Any]], members: Sequence[Member]) -> list[str]:
    """The current member id of each recommended entry (same order); :class:`DoesNotFit` when a
    recommended member is gone, two entries land on one member, or a current member is missing."""
    by_instance = {m.instance_id: m for m in members if m.instance_id}
    by_member_id = {m.member_id: m for m in members}
    clients = Counter(m.client_id for m in members if m.client_id)
    by_client = {m.client_id: m for m in members if m.client_id}
    out: list[str] = []
    used: dict[str, str] = {}
    gone: list[str] = []
    for entry in entries:
        label = _entry_label(entry)
        found: Member | None
        if entry.get("instance_id"):
            found = by_instance.get(entry["instance_id"])
        elif entry.get("member_id") in by_member_id:
            found = by_member_id[entry["member_id"]]
        elif entry.get("client_id"):
            if clients[entry["client_id"]] > 1:
                raise DoesNotFit(f"{clients[entry['client_id']]} current members have client id "
                                 f"{entry['client_id']!r}: cannot tell which one the "
                                 "recommendation means")
            found = by_client.get(entry["client_id"])
        else:
            raise DoesNotFit(f"recommended member {label} has no group.instance.id or client id "
                             "to match")
        if found is None:
            gone.append(label)  # name every missing member, not only the first
            continue
        if found.member_id in used:
            raise DoesNotFit(f"recommended members {used[found.member_id]} and {label} are the "
                             "same member now")
        used[found.member_id] = label
        out.append(found.member_id)
    if gone:
        raise DoesNotFit("; ".join(f"recommended member {g} is no longer in the group"
                                   for g in gone))
    missing = sorted(m.label for m in members if m.member_id not in used)
    if missing:
        raise DoesNotFit(f"member(s) {', '.join(missing)} joined after the recommendation")
    return out


def check_fits(assignment: Mapping[str, Sequence[TopicPartition]], members: Sequence[Member],
               topics: Mapping[str, int]) -> None:
    """:class:`DoesNotFit` unless every currently subscribed partition is assigned exactly once,
    only to a current member subscribed to its topic, and nothing else is assigned."""
    subs = {m.member_id: set(m.topics) for m in members}
    labels = {m.member_id: m.label for m in members}
    wanted = {(t, p) for m in members for t in m.topics for p in range(topics.get(t, 0))}
    seen: set[TopicPartition] = set()
    for member_id, tps in assignment.items():
        if member_id not in subs:
            raise DoesNotFit(f"member {member_id} is not in the group")
        for t, p in tps:
            if (t, p) in seen:
                raise DoesNotFit(f"{t}-{p} is assigned twice")
            seen.add((t, p))
            if t not in subs[member_id]:
                raise DoesNotFit(f"{t}-{p} goes to {labels[member_id]}, which does not subscribe "
                                 f"to {t}")
            if (t, p) not in wanted:
                why = "topic no longer exists" if topics.get(t, 0) == 0 else \
                    f"{t} has {topics[t]} partitions now"
                raise DoesNotFit(f"{t}-{p} is not a current partition ({why})")
    missing = sorted(wanted - seen)
    if missing:
        shown = ", ".join(f"{t}-{p}" for t, p in missing[:5]) + (" ..." if len(missing) > 5 else "")
        raise DoesNotFit(f"{len(missing)} current partition(s) not in the recommendation "
                         f"(added or newly subscribed since): {shown}")


def recommended_assignment(rec: Mapping[str, Any], members: Sequence[Member],
                           topics: Mapping[str, int]) -> dict[str, list[TopicPartition]]:
    """The recommendation as current member id -> partitions; :class:`DoesNotFit` when it does not
    fit."""
    entries = rec["assignment"]
    ids = map_members(entries, members)
    assignment: dict[str, list[TopicPartition]] = {m.member_id: [] for m in members}
    for member_id, entry in zip(ids, entries, strict=True):
        assignment[member_id] = sorted((str(t), int(p)) for t, p in entry["partitions"])
    check_fits(assignment, members, topics)
    return assignment


# -- the fallback ----------------------------------------------------------------------------------


def snapshot_of(members: Sequence[Member], topics: Mapping[str, int],
                replica_racks: Mapping[str, Sequence[Sequence[str | None]]] | None = None,
                lag: Mapping[str, Sequence[int]] | None = None) -> GroupSnapshot:
    ordered = {t: topics.get(t, 0) for t in sorted({t for m in members for t in m.topics})}
    racks = None
    if replica_racks is not None:
        racks = {t: r for t, r in replica_racks.items() if t in ordered and len(r) == ordered[t]}
    lags = {t: v for t, v in (lag or {}).items() if t in ordered and len(v) == ordered[t]}
    return GroupSnapshot(
        topics=ordered,
        members=tuple(Member(member_id=m.member_id, topics=tuple(sorted(m.topics)),
                             instance_id=m.instance_id, rack=m.rack,
                             owned=tuple(tp for tp in m.owned if tp[1] < ordered.get(tp[0], 0)),
                             generation=m.generation, client_id=m.client_id)
                      for m in members if m.topics),
        replica_racks=racks or None, lag=lags)


def fallback_name(fallback: str, lag: Mapping[str, Sequence[int]] | None) -> str:
    if fallback != AUTO:
        return fallback
    return "balanced" if lag else "sticky"


def fallback_assignment(members: Sequence[Member], topics: Mapping[str, int], fallback: str = AUTO,
                        replica_racks: Mapping[str, Sequence[Sequence[str | None]]] | None = None,
                        lag: Mapping[str, Sequence[int]] | None = None,
                        model: load_model.LoadModel | None = None) -> tuple[str, Assignment]:
    """(name, assignment) of the fallback (``auto`` with ``model``: the load model's); ``range`` if
    it fails."""
    if model is not None and fallback == AUTO:
        return load_fallback.NAME, load_fallback.assign(model, members, topics)
    snapshot = snapshot_of(members, topics, replica_racks, lag)
    name = fallback_name(fallback, lag)
    try:
        result = registry.assign(name, snapshot)
    except AssignorError:
        if name == "range":
            raise
        name, result = "range", registry.assign("range", snapshot)
    out: dict[str, list[TopicPartition]] = {m.member_id: [] for m in members}
    out.update({k: sorted(v) for k, v in result.items()})
    return name, out


def decide(group: str, rec: Mapping[str, Any] | None, members: Sequence[Member],
           topics: Mapping[str, int], fallback: str = AUTO,
           replica_racks: Mapping[str, Sequence[Sequence[str | None]]] | None = None,
           lag: Mapping[str, Sequence[int]] | None = None) -> Decision:
    """Apply ``rec`` (the latest recommendation of ``group``) when it fits, else the fallback (with
    ``auto``, on the load model of ``rec`` when this group's ``rec`` may be acted on and carries
    one)."""
    if rec is None:
        reason = "no recommendation for the group yet"
    elif rec.get("group") not in (None, group):
        reason = f"recommendation is for group {rec.get('group')!r}, not {group!r}"
    elif not actionable(rec):
        # not "considered": its approval (same version) must still make members ask for a rebalance
        reason = f"recommendation v{rec['version']} is {status_of(rec)}, not approved"
        name, assignment = fallback_assignment(members, topics, fallback, replica_racks, lag)
        return Decision(assignment, "fallback", name, reason)
    else:
        try:
            assignment = recommended_assignment(rec, members, topics)
        except DoesNotFit as e:
            reason = f"recommendation v{rec['version']} does not fit: {e}"
        else:
            return Decision(assignment, "recommendation", "recommendation",
                            f"recommendation v{rec['version']} fits the group",
                            version=int(rec["version"]),
                            recommendation_id=rec.get("recommendation_id"),
                            considered=int(rec["version"]),
                            figures={k: rec.get(k) for k in ("triggers", "before", "after")
                                     if k in rec})
    model = (load_model.read(rec.get("load_model"))
             if rec is not None and rec.get("group") in (None, group) else None)
    name, assignment = fallback_assignment(members, topics, fallback, replica_racks, lag, model)
    return Decision(assignment, "fallback", name, reason,
                    considered=int(rec["version"]) if rec is not None else 0)


# -- members: should this member ask for a rebalance? ----------------------------------------------


def own_entry(rec: Mapping[str, Any], member_id: str | None, client_id: str | None,
              instance_id: str | None) -> Mapping[str, Any] | None:
    """This member's entry in the recommendation (by instance id, member id, then client id)."""
    entries = rec.get("assignment") or []
    if instance_id:
        return next((e for e in entries if e.get("instance_id") == instance_id), None)
    hit = next((e for e in entries if member_id and e.get("member_id") == member_id), None)
    if hit is not None:
        return hit
    same = [e for e in entries
            if client_id and e.get("client_id") == client_id and not e.get("instance_id")]
    return same[0] if len(same) == 1 else None


def rejoin_reason(rec: Mapping[str, Any] | None, considered: int | None,
                  owned: set[TopicPartition] | None, member_id: str | None, client_id: str | None,
                  instance_id: str | None = None) -> str | None:
    """Why this member should ask for a rebalance for ``rec``, or None when it should not.

    Only a recommendation newer than the one the leader last considered, whose part for this member
    differs from what the member owns now, and only one the helpers may act on (``auto`` or
    ``approved``, never a proposal or a rejection). (Every member runs this check, so a
    recommendation that changes anything makes at least one member ask.) A recommendation without a
    part for this member is left to the leader to judge at the next rebalance."""
    if rec is None or considered is None or owned is None or not actionable(rec):
        return None
    version = int(rec.get("version") or 0)
    if version <= considered:
        return None
    mine = own_entry(rec, member_id, client_id, instance_id)
    if mine is None:
        return None
    wanted = {(str(t), int(p)) for t, p in mine.get("partitions") or []}
    if wanted == set(owned):
        return None
    return (f"recommendation v{version} gives this member {len(wanted)} partition(s), "
            f"{len(wanted - set(owned))} new, {len(set(owned) - wanted)} given up")

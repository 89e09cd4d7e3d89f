"""Is a group's latest recommendation what the group runs now? (``rebalancer verify``, pure.)

Like ``kafka-reassign-partitions --verify``: the group as read live, compared with the latest row of
the recommendations table. The recommended members are found among the current ones as the apply
helpers find them (:func:`streaming.apply.plan.recommended_assignment`: instance id, member id, then
client id). The verdicts, each with its exit status:

- ``applied`` (0): every partition is owned by the member the recommendation names;
- ``pending`` (3): it still fits the group but is not in place yet: the group is rebalancing, or
  (KIP-848) its epoch has not moved past the recommendation's, or the recommendation is younger than
  ``pending_for_s``;
- ``diverged`` (4): it fits, the group settled on something else (the differences are listed);
- ``superseded`` (5): it no longer fits the group (a member left or joined, a partition was added):
  a new recommendation is due, and the apply helpers would not use this one;
- ``none`` (6): no recommendation for the group, or a group the collector does not read (a Connect
  worker group, a share group, ...: :mod:`streaming.contracts.serving`), said with its reason
  (:func:`not_read`);
- not applied and not to be: ``awaiting approval`` (7, made in ``approve`` mode, not approved yet),
  ``rejected`` (8), ``observed`` (9, made in ``observe`` mode: never published for application),
  ``expired`` (10, a proposal not yet decided on whose group's members or partitions changed since,
  or older than its expiry: :mod:`streaming.proposals.expiry`). The status of an ``approve``
  recommendation is read from the trigger feed, where approvals live; an approved one is pending or
  diverged as above, counted from its approval.

Example: members c0 (t-0, t-1) and c1 (t-2, t-3) in a Stable classic group, a recommendation 15
minutes old that gives t-1 to c1: ``diverged``, with the difference ``t-1 on c0, recommended c1``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from assignors.model import Member
from streaming.apply import plan
from streaming.config import APPROVE, AUTO, OBSERVE
from streaming.contracts.recommendation import APPROVED, PROPOSED
from streaming.contracts.recommendation import REJECTED as REJECTED_STATUS
from streaming.proposals import expiry

SETTLED = ("Stable", "Empty")


class Verdict(enum.Enum):
    APPLIED = ("applied", 0)
    PENDING = ("pending", 3)
    DIVERGED = ("diverged", 4)
    SUPERSEDED = ("superseded", 5)
    NO_RECOMMENDATION = ("none", 6)
    AWAITING_APPROVAL = ("awaiting approval", 7)
    REJECTED = ("rejected", 8)
    OBSERVED = ("observed", 9)
    EXPIRED = ("expired", 10)

    @property
    def label(self) -> str:
        return self.value[0]

    @property
    def exit_status(self) -> int:
        return self.value[1]


@dataclass(frozen=True)
class LiveGroup:
    """What verification needs of the group as read now."""

    name: str
    state: str
    members: Sequence[Member]
    """With ``owned``: what each member holds now (and ``host``, which names a member across
    rejoins)."""
    partitions: Mapping[str, int]
    """Partition count of each topic the members subscribe to."""
    epoch: int | None = None
    """The group epoch (KIP-848 groups), else None."""

    @classmethod
    def of_snapshot(cls, snap: Any, group: str) -> LiveGroup:
        """``group`` as the collector read it (a
        :class:`streaming.collector.cluster_snapshot.ClusterSnapshot`, taken as it is: the consumer
        side does not import the collector)."""
        info = snap.groups[group]
        members = [Member(m.member_id, m.topics, m.instance_id, m.rack, owned=tuple(m.assigned),
                          client_id=m.client_id, host=m.host) for m in info.members]
        topics = {t: len(snap.topics[t]) for m in members for t in m.topics if t in snap.topics}
        return cls(group, info.state, members, topics, info.epoch)


@dataclass(frozen=True)
class Verification:
    group: str
    state: str | None
    """the group's state as read (None for a group not read)."""
    verdict: Verdict
    reason: str
    differences: tuple[dict[str, Any], ...] = ()
    """(partition, now, recommended) of each partition not where the recommendation puts it."""
    recommendation: Mapping[str, Any] = field(default_factory=dict)
    """version, recommendation_id, event_time, triggers (and mode) of the recommendation
    compared."""

    def as_dict(self) -> dict[str, Any]:
        return {"group": self.group, "state": self.state, "status": self.verdict.label,
                "reason": self.reason, "differences": list(self.differences), "version": None,
                **self.recommendation}


def verify(group: LiveGroup, rec: Mapping[str, Any] | None, pending_for_s: float, now_s: float,
           feed_rec: Mapping[str, Any] | None = None) -> Verification:
    """Compare ``group`` with its latest recommendation row ``rec`` (None: there is none);
    ``feed_rec``: for a recommendation of mode ``approve``, the group's latest trigger-feed record
    (its status says whether it was approved)."""
    done = Verification(group.name, group.state, Verdict.NO_RECOMMENDATION,
                        "no recommendation for this group in the recommendations table")
    if rec is None:
        return done
    done = dataclasses.replace(done, recommendation={
        "version": rec["version"], "recommendation_id": rec["recommendation_id"],
        "event_time": rec["event_time"], "triggers": list(rec["triggers"] or ())})
    stale = expired(group, rec, feed_rec, now_s)
    if stale is not None:
        return dataclasses.replace(done, verdict=Verdict.EXPIRED,
                                   reason=f"the proposal expired: {stale}")
    try:
        wanted = plan.recommended_assignment(_feed_form(rec), list(group.members),
                                             dict(group.partitions))
    except plan.DoesNotFit as e:
        return dataclasses.replace(done, verdict=Verdict.SUPERSEDED,
                                   reason=f"the recommendation no longer fits the group: {e}")
    diffs = differences(group.members, wanted)
    total = sum(len(v) for v in wanted.values())
    if not diffs:
        return dataclasses.replace(done, verdict=Verdict.APPLIED,
                                   reason=f"all {total} partitions are where the recommendation "
                                          "puts them")
    mode = rec.get("mode") or AUTO
    done = dataclasses.replace(done, differences=tuple(diffs),
                               recommendation={**done.recommendation, "mode": mode})
    verdict, reason = not_in_place(group, rec, mode, feed_rec, pending_for_s, now_s)
    return dataclasses.replace(done, verdict=verdict,
                               reason=f"{len(diffs)} of {total} partitions are not where the "
                                      f"recommendation puts them; {reason}")


def not_read(group: str, reason: str | None) -> Verification:
    """A group the collector does not read (``reason``: why): nothing is recommended for it."""
    return Verification(group, None, Verdict.NO_RECOMMENDATION,
                        f"the collector does not read this group: {reason}")


def expired(group: LiveGroup, rec: Mapping[str, Any], feed_rec: Mapping[str, Any] | None,
            now_s: float) -> str | None:
    """Why the row ``rec``, a proposal not decided on yet (its feed record ``feed_rec`` of the same
    version still ``proposed``), has expired for ``group`` as read now; None when it has not or is
    no such proposal."""
    if ((rec.get("mode") or AUTO) != APPROVE or feed_rec is None
            or feed_rec.get("version") != rec["version"]):
        return None
    if plan.status_of(feed_rec) != PROPOSED:
        return None
    return expiry.reason(feed_rec, group.members, group.partitions, now_s * 1000.0)


def differences(members: Sequence[Member], wanted: Mapping[str, Sequence[tuple[str, int]]]
                ) -> list[dict[str, Any]]:
    """Each partition whose owner now is not the recommended member, in partition order."""
    labels = {m.member_id: m.label for m in members}
    owner_now = {tp: m.member_id for m in members for tp in m.owned}
    out = []
    for member_id, tps in sorted(wanted.items()):
        for tp in tps:
            now = owner_now.get(tp)
            if now != member_id:
                out.append({"partition": f"{tp[0]}-{tp[1]}",
                            "now": labels.get(now) if now else None,
                            "recommended": labels[member_id]})
    return sorted(out, key=lambda d: d["partition"])


def not_in_place(group: LiveGroup, rec: Mapping[str, Any], mode: str,
                 feed_rec: Mapping[str, Any] | None, pending_for_s: float, now_s: float
                 ) -> tuple[Verdict, str]:
    """Why a recommendation that fits the group is not in place: its mode, the approval, or time."""
    age = now_s - _event_seconds(rec)
    if mode == OBSERVE:
        return Verdict.OBSERVED, "made in observe mode, never published for application"
    if mode == APPROVE:
        same = feed_rec is not None and feed_rec.get("version") == rec["version"]
        status = feed_rec.get("status") if same and feed_rec is not None else None
        if status == REJECTED_STATUS:
            return Verdict.REJECTED, "rejected (rebalancer reject)"
        if status != APPROVED:
            return Verdict.AWAITING_APPROVAL, (f"awaiting approval (rebalancer approve "
                                               f"{group.name} --version {rec['version']})")
        if feed_rec is not None and isinstance(feed_rec.get("decided_at"), int):
            # it could not be applied before its approval
            age = now_s - feed_rec["decided_at"] / 1000.0
    return settling(group, rec.get("generation"), age, pending_for_s)


def settling(group: LiveGroup, generation: int | None, age: float, pending_for_s: float
             ) -> tuple[Verdict, str]:
    """Pending or diverged: by the group's state, its epoch (KIP-848), or the recommendation's
    age."""
    if group.state not in SETTLED:
        return Verdict.PENDING, f"the group is rebalancing ({group.state})"
    if group.epoch is not None and generation is not None:
        if group.epoch <= generation:
            return Verdict.PENDING, f"group epoch {group.epoch} not past the recommendation's"
        return Verdict.DIVERGED, (f"group epoch {group.epoch} moved past the recommendation's "
                                  f"{generation} without it")
    if age < pending_for_s:
        return Verdict.PENDING, f"made {age:.0f}s ago (--pending-for {pending_for_s:g})"
    return Verdict.DIVERGED, f"made {age:.0f}s ago and the group settled on another assignment"


def _feed_form(rec: Mapping[str, Any]) -> dict[str, Any]:
    """A recommendations row's assignment as the apply helpers take it (partitions as pairs)."""
    return {**rec, "assignment": [{**e, "partitions": [[p["topic"], int(p["partition"])]
                                                        for p in e["partitions"]]}
                                  for e in rec["assignment"]]}


def _event_seconds(rec: Mapping[str, Any]) -> float:
    t = rec["event_time"]
    if isinstance(t, dt.datetime):
        return (t if t.tzinfo else t.astimezone()).timestamp()
    return float(t) / 1000.0

"""How long each group's latest published recommendation has waited: for a
decision, or to be in place.

The collector reads the trigger feed (:class:`streaming.apply.feed.RecommendationFeed`, a reader
that joins no group and commits nothing) and, each poll, compares each group's latest record with
the group as it reads it, as ``rebalancer verify`` does (:mod:`streaming.apply.verification`), into
two gauges, NaN where they do not apply:

- ``kafka_rebalancer_group_recommendation_awaiting_approval_seconds``: a proposal (``policy.mode =
  approve``) nobody approved or rejected yet, and not expired, since it was made;
- ``kafka_rebalancer_group_recommendation_unapplied_seconds``: a recommendation the consumers may
  apply (``auto``, or ``approved``) that still fits the group: 0 while it is in place, else the
  seconds since it was published (an approved one: since its approval).

Nothing for groups in ``observe`` mode (nothing is published) nor for a rejected, expired or
superseded one (it no longer fits the group: the job recommends again). :func:`waiting` is pure; the
collector's ``/metrics`` exports it (:class:`SnapshotWaiting`) as
:class:`streaming.exporter.waiting_gauges.WaitingGauges` (wired by ``rebalancer collect``)."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any

from streaming.apply import plan
from streaming.apply.verification import LiveGroup, differences
from streaming.config import KafkaSettings
from streaming.contracts.recommendation import APPROVED, PROPOSED
from streaming.proposals import expiry

NAN = math.nan


def waiting(group: LiveGroup, rec: Mapping[str, Any] | None, now_s: float) -> tuple[float, float]:
    """(seconds awaiting approval, seconds not applied) of ``group``'s latest feed record."""
    if rec is None:
        return NAN, NAN
    status = plan.status_of(rec)
    made = float(rec.get("event_ts") or 0) / 1000.0
    if status == PROPOSED:
        if expiry.reason(rec, list(group.members), group.partitions, now_s * 1000.0) is not None:
            return NAN, NAN
        return max(0.0, now_s - made), NAN
    if not plan.actionable(rec):
        return NAN, NAN
    try:
        wanted = plan.recommended_assignment(rec, list(group.members), dict(group.partitions))
    except plan.DoesNotFit:
        return NAN, NAN
    if not differences(group.members, wanted):
        return NAN, 0.0
    since = (
        rec.get("decided_at")
        if status == APPROVED and isinstance(rec.get("decided_at"), int)
        else None
    )
    return NAN, max(0.0, now_s - (since / 1000.0 if since is not None else made))


class FeedWaiting:
    """:func:`waiting` of the groups a collector reads, against the trigger feed it follows in the
    background."""

    def __init__(self, kafka: KafkaSettings) -> None:
        from streaming.apply.feed import RecommendationFeed

        self.feed = RecommendationFeed(kafka).start()

    def __call__(
        self, groups: Mapping[str, LiveGroup], now_s: float
    ) -> dict[str, tuple[float, float]]:
        """group -> its two figures, for the groups with a record on the feed."""
        latest = {g: self.feed.latest(g) for g in groups}
        return {g: waiting(groups[g], rec, now_s) for g, rec in latest.items() if rec is not None}

    def close(self) -> None:
        self.feed.stop()


class SnapshotWaiting:
    """:class:`FeedWaiting` of the groups in a collector's snapshot, as ``verify`` reads them: what
    the collector's ``/metrics`` exports (``rebalancer collect`` hands it to the exporter)."""

    def __init__(self, kafka: KafkaSettings) -> None:
        self.of = FeedWaiting(kafka)

    def __call__(self, snap: Any, groups: list[str]) -> dict[str, tuple[float, float]]:
        return self.of({g: LiveGroup.of_snapshot(snap, g) for g in groups}, time.time())

    def close(self) -> None:
        self.of.close()

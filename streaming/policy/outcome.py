"""What a decision makes: the assignor's :class:`Proposal` with both assignments' metrics, and the
:class:`~streaming.contracts.recommendation.Recommendation` recorded from it, with the figures it
publishes (before/after, the capacities and the load model the decision was made on).
:mod:`streaming.policy.recommend` decides when; this module says what the recommendation holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from assignors import metrics, rack_placement
from assignors.model import Assignment, GroupSnapshot
from streaming.config import APPROVE, OBSERVE, PolicySettings
from streaming.contracts import load_model, serving
from streaming.contracts.recommendation import (
    RETENTION_RISK,
    Recommendation,
    bound_below,
    finite,
    records,
)
from streaming.lag import capacity
from streaming.lag.rules import finite_or_none
from streaming.policy import lag_seconds, member_figures
from streaming.proposals import expiry
from streaming.state.group_state import GroupState
from streaming.state.snapshot import hot_partitions


@dataclass(frozen=True)
class Proposal:
    """The configured assignor's proposal for the group as it is now, with before/after metrics."""

    snapshot: GroupSnapshot
    current: Assignment
    proposed: Assignment
    before: metrics.Metrics
    after: metrics.Metrics


def record(state: GroupState, ts: int, triggers: dict[str, dict], proposal: Proposal,
           seconds: lag_seconds.LagSeconds, policy: PolicySettings) -> Recommendation:
    """The recommendation, counted in the state (its version, time and id; the skew streak starts
    over). A group whose members cannot apply one (:mod:`streaming.contracts.serving`: Kafka
    Streams) gets it in mode observe, never published, with the reason in ``serving``."""
    state.version += 1
    state.last_rec_ts = ts if state.last_rec_ts is None else max(state.last_rec_ts, ts)
    state.skew_streak = 0
    if RETENTION_RISK in triggers:
        state.risk_ts = ts
    by_id = {m.member_id: m for m in state.members or []}
    after = proposal.after
    # the job sees the members event's assignor only (not the group's type): enough for
    # what cannot apply
    found = serving.verdict(None, None, state.protocol)
    mode = policy.mode_for(state.group) if found.published else OBSERVE
    rec = Recommendation(
        group=state.group, version=state.version, event_ts=ts, generation=state.generation,
        triggers=triggers, assignor=policy.assignor,
        assignment=[
            {"member_id": mid, "instance_id": by_id[mid].instance_id if mid in by_id else None,
             "client_id": by_id[mid].client_id if mid in by_id else None,
             "rack": by_id[mid].rack if mid in by_id else None, "partitions": sorted(parts)}
            for mid, parts in sorted(proposal.proposed.items())
        ],
        before=_figures(proposal.before), after=_figures(after),
        lower_bound=bound_below(after.lower_bound),
        partitions_moved=after.partitions_moved, lag_moved=records(after.load_moved),
        stuck_partitions=sorted(proposal.snapshot.stuck), mode=mode,
        lag_seconds={"before_catch_up_s": finite_or_none(seconds.before),
                     "after_catch_up_s": finite_or_none(seconds.after),
                     "lag_age_s": finite_or_none(seconds.age)},
        member_capacity=member_capacity(state, policy.stuck_observations,
                                        policy.capacity_headroom),
        load_model=load_model_of(proposal.snapshot, policy),
        # the job does not read broker configs: follower fetching unknown (``describe`` reads it)
        rack_placement=rack_placement.of_snapshot(proposal.snapshot, None).verdict,
        serving=found.says(),
        member_figures=member_figures.of(proposal.snapshot, proposal.current, proposal.proposed,
                                         proposal.before, after, seconds.members),
        proposal=expiry.basis(proposal.snapshot.members, proposal.snapshot.topics, ts,
                              policy.proposal_expiry_s)
        if mode == APPROVE else None,
        hot_partitions=(None if (hot := hot_partitions(state)) is None
                        else [h.as_dict() for h in hot]),
    )
    state.last_rec_id = rec.id
    return rec


def member_capacity(state: GroupState, stuck_after: int, headroom: float) -> list[dict] | None:
    """The capacities the recommendation was made with, per member (None: unknown,
    the members alike)."""
    found = capacity.estimates(state.known_capacity(), state.lag, state.owners, stuck_after,
                               headroom)
    if found is None:
        return None
    client = {m.member_id: m.client_id for m in state.members or []}
    return [{"member_id": mid, "client_id": client.get(mid),
             "records_per_s": round(c.records_per_s, 3),
             "confidence_s": round(c.confidence_s, 3), "measured": c.measured}
            for mid, c in sorted(found.items())]


def load_model_of(snapshot: GroupSnapshot, policy: PolicySettings) -> dict[str, Any] | None:
    """The load model the recommendation publishes (format and bounds:
    :mod:`streaming.contracts.load_model`): the lags, produce rates and member capacities its
    decision was made on, read from the ``snapshot`` the assignor was given; None when the group is
    too large for one. The horizon is the one the assignor's loads used (its ``horizon_s`` option,
    defaulting to ``policy.rate_horizon_s``); for an assignor without one,
    ``policy.rate_horizon_s``, the figures' horizon.

    Example: a snapshot of ``orders`` (3 partitions, lags 1200, 0, 35, produce rates 116.25, 58.1
    and none yet) with capacities c-0 150/s and c-1 90/s under ``rate_horizon_s = 60`` publishes
    ``{"version": 1, "horizon_s": 60.0, "topics": [{"topic": "orders", "lag": [1200, 0, 35],
    "rate": [116.25, 58.1, 0.0]}], "members": [{"member_id": "c-0-...", ..., "records_per_s":
    150.0}, {"member_id": "c-1-...", ..., "records_per_s": 90.0}]}`` (the state reads a partition
    without a rate yet as 0.0)."""
    horizon_s = float(policy.assignor_kwargs().get("horizon_s", policy.rate_horizon_s))
    lag = {t: list(snapshot.lag.get(t, [0] * n)) for t, n in snapshot.topics.items()}
    rate = {t: list(snapshot.produce_rate.get(t, [None] * n)) for t, n in snapshot.topics.items()}
    members = None
    if snapshot.capacity is not None:
        members = [load_model.MemberCapacity(m.member_id, m.instance_id, m.client_id,
                                             float(snapshot.capacity[m.member_id]))
                   for m in sorted(snapshot.members, key=lambda m: m.member_id)]
    return load_model.build(horizon_s, lag, rate, members)


def _figures(m: metrics.Metrics) -> dict[str, float | None]:
    """The before/after figures: lag in exact, saturated records; imbalance a finite
    double or None."""
    imbalance = finite(m.imbalance)
    return {"max_member_lag": records(m.max_load),
            "imbalance": None if imbalance is None else round(imbalance, 6),
            "cross_rack_partitions": m.cross_rack_partitions}

"""A rebalance recommendation: what the job writes to Delta and to the trigger feed.

Trigger feed message (topic ``kafka.trigger_topic``, compacted, key = group id, value = JSON)::

    {"schema": 1, "recommendation_id": "3f5c...", "group": "orders-app", "version": 4,
     "event_ts": 1763700000000, "generation": 12, "triggers": ["lag_skew"], "assignor": "balanced",
     "assignment": [{"member_id": "...", "instance_id": null, "client_id": "c-1", "rack": "a",
                     "partitions": [["orders", 0], ["orders", 3]]}],
     "before": {"max_member_lag": 9000, "imbalance": 1.8, "cross_rack_partitions": 2},
     "after": {"max_member_lag": 5200, "imbalance": 1.04, "cross_rack_partitions": 0},
     "lower_bound": 5000, "partitions_moved": 2, "lag_moved": 3900, "stuck_partitions": [],
     "status": "auto", "load_model": {...}}

A ``lag_skew`` recommendation that names slow members also carries them, as its trigger's details
do (:mod:`streaming.policy.slow_members`; additive)::

    "slow_members": [{"member_id": "...", "client_id": "c-2", "records_per_s": 60.0,
                      "peers_records_per_s": 150.0}]

A proposal (status ``proposed``) also carries ``proposal``: when it expires and the membership and
partitions it was made on (:mod:`streaming.proposals.expiry`). Additive, like ``load_model``::

    "proposal": {"expires_at": 1763703600000, "members": ["client:c-1@10.0.0.1", ...],
                 "partitions": {"orders": 4}}

Figures in records (``max_member_lag``, ``lag_moved``) are exact integers (JSON integers, ``bigint``
in Delta): a member's lag is a sum of partition lags of up to 2^63-1 each, so a sum above 2^63-1 is
written as 2^63-1 (:data:`RECORDS_CAP`, saturated, never wrapped): a lag that large is a broken or
hostile producer's, and every figure below it stays exact. ``bigint`` rather than ``decimal``: every
reader of the table (Spark, delta-rs, pandas, the exporter) reads it as a plain integer. With
``policy.rate_horizon_s`` the figures are loads (lag plus rate times the horizon), rounded to whole
records. Ratios and times (``imbalance``, ``lower_bound``, the ``*_s`` figures) are finite doubles
or null; ``lower_bound`` is rounded down where a double cannot hold it exactly, so it stays a lower
bound. ``load_model`` (lags, rates and capacities the decision used, for the leaders' fallback) is
additive and versioned on its own: :mod:`streaming.contracts.load_model`.

``status`` follows the group's ``policy.mode``: ``auto`` (apply it), ``proposed`` (mode ``approve``:
wait for a decision). ``rebalancer approve`` / ``reject`` re-publish the same recommendation under
the same key with ``approved`` / ``rejected`` (and ``decided_at``, epoch ms), so the compacted topic
keeps the decision, the latest record of the key. Apply helpers act only on ``auto`` and
``approved``; a value without ``status`` (written before modes existed) counts as ``auto``. Mode
``observe`` publishes nothing (its rows in Delta have ``mode = observe``).

The feed is at-least-once (Spark's Kafka sink): a replayed batch can send a message twice, with the
same ``recommendation_id``; consumers keep the highest ``version`` per group.
"""

from __future__ import annotations

import json
import math
import uuid
from dataclasses import dataclass
from typing import Any

MEMBERSHIP_CHANGE, PARTITION_COUNT_CHANGE, RACK_CHANGE = (
    "membership_change", "partition_count_change", "rack_change")
LAG_SKEW, RETENTION_RISK, UTILISATION = "lag_skew", "retention_risk", "utilisation"
GIVE_BACK = "give_back"
TRIGGERS = (MEMBERSHIP_CHANGE, PARTITION_COUNT_CHANGE, RACK_CHANGE, LAG_SKEW, RETENTION_RISK,
            UTILISATION, GIVE_BACK)
"""What a recommendation's ``triggers`` may name, the one home of these names (docs/deciding.md says
when each fires): the metadata changes (:mod:`streaming.state.changes`), lag skew
(:mod:`streaming.policy.lag_skew`), data-loss risk (:mod:`streaming.policy.retention_risk`), a
member over its target utilisation by its own load report (:mod:`streaming.policy.utilisation`) and
load going back to one that recovered (:mod:`streaming.policy.give_back`)."""

FEED_SCHEMA_VERSION = 1
AUTO, PROPOSED, APPROVED, REJECTED, OBSERVED = (
    "auto", "proposed", "approved", "rejected", "observed")
STATUSES = (AUTO, PROPOSED, APPROVED, REJECTED, OBSERVED)
ACTIONABLE = (AUTO, APPROVED)
"""The statuses the apply helpers act on."""
STATUS_OF_MODE = {"auto": AUTO, "approve": PROPOSED, "observe": OBSERVED}

# Columns of the pandas rows the stateful step emits (and of the Delta table, where the JSON columns
# become typed nested columns).
OUTPUT_SCHEMA = (
    "group STRING, version LONG, recommendation_id STRING, event_ts LONG, generation INT, "
    "triggers STRING, trigger_details STRING, assignor STRING, assignment STRING, "
    "before_max_lag BIGINT, after_max_lag BIGINT, before_imbalance DOUBLE, after_imbalance DOUBLE, "
    "lower_bound DOUBLE, before_cross_rack INT, after_cross_rack INT, partitions_moved INT, "
    "lag_moved BIGINT, stuck_partitions STRING, feed_value STRING, mode STRING, "
    "before_catch_up_s DOUBLE, after_catch_up_s DOUBLE, lag_age_s DOUBLE, member_capacity STRING, "
    "rack_placement STRING, serving STRING, member_figures STRING, hot_partitions STRING"
)
OUTPUT_COLUMNS = [c.strip().split(" ")[0] for c in OUTPUT_SCHEMA.split(",")]
LAG_SECONDS_COLUMNS = ("before_catch_up_s", "after_catch_up_s", "lag_age_s")
RECORDS_COLUMNS = ("before_max_lag", "after_max_lag", "lag_moved")
"""Columns in records: exact integers, ``bigint`` (a table made when they were DOUBLE keeps its
type: see :mod:`streaming.operations.delta_tables`)."""
DOUBLE_COLUMNS = ("before_imbalance", "after_imbalance", "lower_bound", *LAG_SECONDS_COLUMNS)
"""Columns that are doubles: finite or null, never NaN or infinite."""
RECORDS_CAP = 2**63 - 1
"""The largest figure in records: a larger sum is written as this (Delta ``bigint``, Kafka's offset
range)."""


def records(value: float) -> int:
    """A figure in records as an exact integer in 0..:data:`RECORDS_CAP` (saturated; a load that is
    not an integer, from a rate term, is rounded; one that is not finite reads as the cap, or 0 when
    NaN)."""
    if isinstance(value, int):
        return min(max(value, 0), RECORDS_CAP)
    value = float(value)
    if math.isnan(value):
        return 0
    return RECORDS_CAP if value >= RECORDS_CAP else max(round(value), 0)


def finite(value: float | None) -> float | None:
    """A ratio or time as a finite double, or None."""
    if value is None:
        return None
    try:
        out = float(value)
    except OverflowError:  # an int beyond any double
        return None
    return out if math.isfinite(out) else None


def bound_below(value: float) -> float | None:
    """A lower bound as a double at or below ``value`` (an int above 2^53 may round up), or None."""
    out = finite(value)
    if out is not None and isinstance(value, int) and out > value:
        out = math.nextafter(out, -math.inf)
    return out

ASSIGNMENT_TYPE = (
    "ARRAY<STRUCT<member_id: STRING, instance_id: STRING, client_id: STRING, rack: STRING, "
    "partitions: ARRAY<STRUCT<topic: STRING, partition: INT>>>>"
)
STUCK_TYPE = "ARRAY<STRUCT<topic: STRING, partition: INT>>"
MEMBER_FIGURES_TYPE = (
    "ARRAY<STRUCT<member_id: STRING, owned: ARRAY<STRUCT<topic: STRING, partition: INT>>, "
    "load_before: BIGINT, load_after: BIGINT, rate_before: DOUBLE, rate_after: DOUBLE, "
    "capacity: DOUBLE, catch_up_before_s: DOUBLE, catch_up_after_s: DOUBLE, "
    "cross_rack_before: INT, cross_rack_after: INT>>"
)
"""Per member: what it owned and its figures before and after
(:mod:`streaming.policy.member_figures`)."""
PROPOSAL_FIELD = "proposal"
"""The feed message's field with a proposal's expiry facts (:mod:`streaming.proposals.expiry`)."""
SLOW_MEMBERS = "slow_members"
"""The ``lag_skew`` trigger's and the feed message's field naming the members over their capacity
(:mod:`streaming.policy.slow_members`)."""
HOT_TYPE = ("ARRAY<STRUCT<topic: STRING, partition: INT, records_per_s: DOUBLE, "
            "topic_median_per_s: DOUBLE, share: DOUBLE>>")
"""The ``hot_partitions`` column in Delta (:class:`streaming.lag.hot.HotPartition` rows)."""
CAPACITY_TYPE = ("ARRAY<STRUCT<member_id: STRING, client_id: STRING, records_per_s: DOUBLE, "
                 "confidence_s: DOUBLE, measured: BOOLEAN>>")


def recommendation_id(group: str, version: int) -> str:
    """Deterministic, so a replayed batch produces the same id."""
    return uuid.uuid5(uuid.NAMESPACE_URL, f"kafka-rebalancer/{group}/{version}").hex


@dataclass(frozen=True)
class Recommendation:
    group: str
    version: int
    event_ts: int
    generation: int | None
    triggers: dict[str, Any]
    assignor: str
    assignment: list[dict[str, Any]]
    before: dict[str, float | None]
    """``max_member_lag`` (:func:`records`), ``imbalance`` (finite or None),
    ``cross_rack_partitions``."""
    after: dict[str, float | None]
    lower_bound: float | None
    partitions_moved: int
    lag_moved: int
    stuck_partitions: list[tuple[str, int]]
    mode: str = "auto"
    """``policy.mode`` of the group when it was made (observe, approve, auto)."""
    lag_seconds: dict[str, float | None] | None = None
    """``before_catch_up_s``, ``after_catch_up_s``: the max member time to catch up under the
    current and the recommended assignment; ``lag_age_s``: the age of the group's oldest unconsumed
    record (:mod:`streaming.policy.lag_seconds`). None where not finite (unbounded or not known
    yet). Delta only: the feed message is unchanged."""
    member_capacity: list[dict[str, Any]] | None = None
    """Per member, the capacity the recommendation was made with (:mod:`streaming.lag.capacity`):
    ``member_id``, ``client_id``, ``records_per_s``, ``confidence_s``, ``measured``; None while
    unknown (the members taken as alike). Delta only."""
    load_model: dict[str, Any] | None = None
    """What the decision was made on (:mod:`streaming.contracts.load_model`), for the leaders'
    fallback; the feed message carries it (additive: absent when None), the Delta row in
    ``feed_value``."""
    rack_placement: str | None = None
    """Whether rack-aware placement saves anything in the group (:mod:`assignors.rack_placement`'
    verdict). Delta only."""
    serving: str | None = None
    """Whether the group's members can apply it, and why not
    (:meth:`streaming.contracts.serving.Serving.says`: ``served``, ``unapplied: ...``,
    ``observe_only: ...``; an observe-only one has ``mode = observe``). Delta only."""
    member_figures: list[dict[str, Any]] | None = None
    """Per member: what it owned and its figures before and after
    (:mod:`streaming.policy.member_figures`). Delta only."""
    proposal: dict[str, Any] | None = None
    """Mode ``approve`` only: the proposal's expiry facts
    (:func:`streaming.proposals.expiry.basis`). Feed only."""
    hot_partitions: list[dict[str, Any]] | None = None
    """The group's hot partitions when it was made (:mod:`streaming.lag.hot`: ``topic``,
    ``partition``, ``records_per_s``, ``topic_median_per_s``, ``share``; no assignment splits one);
    None: rates not known yet. Delta only."""

    @property
    def id(self) -> str:
        return recommendation_id(self.group, self.version)

    def feed_message(self) -> dict[str, Any]:
        return {
            "schema": FEED_SCHEMA_VERSION, "recommendation_id": self.id, "group": self.group,
            "version": self.version, "event_ts": self.event_ts, "generation": self.generation,
            "triggers": sorted(self.triggers), "assignor": self.assignor,
            "assignment": self.assignment, "before": self.before, "after": self.after,
            "lower_bound": self.lower_bound,
            "partitions_moved": self.partitions_moved, "lag_moved": self.lag_moved,
            "stuck_partitions": [list(tp) for tp in self.stuck_partitions],
            "status": STATUS_OF_MODE[self.mode],
        } | ({} if self.load_model is None else {"load_model": self.load_model}) | (
            {} if self.proposal is None else {PROPOSAL_FIELD: self.proposal}) | (
            {SLOW_MEMBERS: slow} if (slow := self.triggers.get(LAG_SKEW, {}).get(SLOW_MEMBERS))
            else {})

    def to_row(self) -> dict[str, Any]:
        return {
            "group": self.group, "version": self.version, "recommendation_id": self.id,
            "event_ts": self.event_ts, "generation": self.generation,
            "triggers": ",".join(sorted(self.triggers)),
            "trigger_details": json.dumps(self.triggers, sort_keys=True),
            "assignor": self.assignor,
            "assignment": json.dumps([
                {**m, "partitions": [{"topic": t, "partition": p} for t, p in m["partitions"]]}
                for m in self.assignment
            ]),
            "before_max_lag": self.before["max_member_lag"],
            "after_max_lag": self.after["max_member_lag"],
            "before_imbalance": self.before["imbalance"],
            "after_imbalance": self.after["imbalance"],
            "lower_bound": self.lower_bound,
            "before_cross_rack": self.before["cross_rack_partitions"],
            "after_cross_rack": self.after["cross_rack_partitions"],
            "partitions_moved": self.partitions_moved, "lag_moved": self.lag_moved,
            "stuck_partitions": json.dumps([{"topic": t, "partition": p}
                                            for t, p in self.stuck_partitions]),
            "feed_value": json.dumps(self.feed_message(), separators=(",", ":"), sort_keys=True),
            "mode": self.mode,
            **{c: (self.lag_seconds or {}).get(c) for c in LAG_SECONDS_COLUMNS},
            "member_capacity": (None if self.member_capacity is None
                                else json.dumps(self.member_capacity)),
            "rack_placement": self.rack_placement,
            "serving": self.serving,
            "member_figures": (None if self.member_figures is None
                               else json.dumps(self.member_figures)),
            "hot_partitions": (None if self.hot_partitions is None
                               else json.dumps(self.hot_partitions)),
        }

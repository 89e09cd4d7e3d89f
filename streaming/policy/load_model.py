"""The load model a recommendation publishes: the lags, produce rates and member capacities its decision was
made on, read from the snapshot the assignor was given (format and bounds: :mod:`streaming.contracts.load_model`).

The horizon is the one the assignor's loads used (its ``horizon_s`` option, defaulting to
``policy.rate_horizon_s``); for an assignor without one, ``policy.rate_horizon_s``, the figures' horizon.

Example: a snapshot of ``orders`` (3 partitions, lags 1200, 0, 35, produce rates 116.25, 58.1 and none yet)
with capacities c-0 150/s and c-1 90/s under ``rate_horizon_s = 60`` publishes ``{"version": 1, "horizon_s":
60.0, "topics": [{"topic": "orders", "lag": [1200, 0, 35], "rate": [116.25, 58.1, 0.0]}], "members":
[{"member_id": "c-0-...", ..., "records_per_s": 150.0}, {"member_id": "c-1-...", ..., "records_per_s": 90.0}]}``
(the state reads a partition without a rate yet as 0.0).
"""

from __future__ import annotations

from typing import Any

from assignors.model import GroupSnapshot
from streaming.config import PolicySettings
from streaming.contracts import load_model


def horizon_s(policy: PolicySettings) -> float:
    """The seconds of production the recommendation's assignor added to each partition's lag."""
    return float(policy.assignor_kwargs().get("horizon_s", policy.rate_horizon_s))


def of(snapshot: GroupSnapshot, policy: PolicySettings) -> dict[str, Any] | None:
    """The ``load_model`` of a recommendation made on ``snapshot``; None when the group is too large for one."""
    lag = {t: list(snapshot.lag.get(t, [0] * n)) for t, n in snapshot.topics.items()}
    rate = {t: list(snapshot.produce_rate.get(t, [None] * n)) for t, n in snapshot.topics.items()}
    members = None
    if snapshot.capacity is not None:
        members = [load_model.MemberCapacity(m.member_id, m.instance_id, m.client_id,
                                             float(snapshot.capacity[m.member_id]))
                   for m in sorted(snapshot.members, key=lambda m: m.member_id)]
    return load_model.build(horizon_s(policy), lag, rate, members)

"""A block of polls read ahead, decided in one pass: what :func:`streaming.policy.recommend.process`
does at each of its polls, without applying them one by one.

A call of a group's lag polls alone (no metadata) has its history's views read ahead
(:mod:`streaming.lag.ahead`): per poll, the owners' sums and the capacity window. At such a poll,
with the skew read in records and the group's one topic, the policy's part is:

- the capacity estimates (:func:`streaming.lag.capacity.observed`, on the window read ahead);
- the skew reading (:func:`streaming.policy.lag_skew.records_reading`, on the owners' lag sums and
  the estimates just updated) and the streak it moves on;
- the ``retention_risk`` trigger, which can only fire when some log start is known;
- the ``utilisation`` and ``give_back`` triggers, which can only fire when some member reports its
  load.

:func:`decided` does exactly that for each poll in turn and stops before the first poll that could
trigger a recommendation (a streak reaching ``skew_observations`` out of the cooldown; the retention
trigger out of its cooldown while log starts are known; the utilisation and give-back triggers out
of their cooldowns while a member reports its load) or that is not a newer skew observation:
that poll goes through the per-observation loop, applied first, and the block goes on after it. So
the decisions, the recommendations and the states are the same whatever the batching.
"""

from __future__ import annotations

from assignors import metrics
from streaming.config import PolicySettings
from streaming.lag import capacity, reported
from streaming.policy import give_back, lag_skew, retention_risk, utilisation
from streaming.state.group_state import GroupState
from streaming.state.ingest import Block


def decided(state: GroupState, block: Block, policy: PolicySettings) -> int:
    """How many of the block's first polls decide nothing (none when the skew is read in seconds, or
    the owners own partitions of another topic); their capacity estimates and skew streak are in the
    state (the caller applies their lag)."""
    owners = block.owners
    if policy.skew_on != lag_skew.RECORDS or block.windows is None:
        return 0
    lags = block.windows.lag_sum[block.first:]
    # the readings' figures
    rows, enough = lags.tolist(), lag_skew.totals_at_least(lags, policy.min_total_lag)
    for i, t in enumerate(block.stamps):
        if t <= state.skew_ts or utilisation.may_trigger(state, t, policy) or (
                give_back.may_trigger(state, t, policy)) or (
                block.starts_read and retention_risk.may_trigger(state, t, policy)):
            return i
        found = block.windows.at(block.first + i)
        held = dict(state.capacity)  # kept only if the poll decides nothing
        capacity.observed(held, owners.identities, owners.count, t, found)
        known = capacity.records_per_s_given(reported.with_reports(held, state.reported), owners,
                                             found, policy.capacity_headroom)
        # the reading in plain records from the block's sums; at the fastest member's rate, the
        # reading itself
        imbalance = metrics.imbalance(rows[i]) if known is None else lag_skew.records_reading(
            lags[i], known, owners.ids).imbalance
        streak = lag_skew.streak_after(lag_skew.streak_from(state, t), imbalance, enough[i],
                                       policy.skew_threshold)
        if lag_skew.fires(imbalance, streak, t, state.last_rec_ts, policy.skew_observations,
                          policy.cooldown_s):
            return i
        state.capacity.clear()
        state.capacity.update(held)
        lag_skew.count(state, t, streak)
    return len(block.stamps)

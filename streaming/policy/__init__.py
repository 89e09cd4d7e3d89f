"""When a group gets a recommendation: the decisions, over the state :mod:`streaming.state` keeps.

- ``recommend``: :func:`~streaming.policy.recommend.process` (the job's entry: a group's batch of
  events in, recommendations out) and :func:`~streaming.policy.recommend.recommend` (one
  observation: which triggers stand, the assignor's proposal, before/after figures);
- ``lag_skew``: the current assignment stays skewed for N observations and a better one exists,
  member lag read in records or (``policy.skew_on = "seconds"``) as times to catch up;
- ``lag_seconds``: each member's time to catch up, a recommendation's before/after figures and its
  lag's age.

The metadata triggers (membership, partition count, rack set) are detected where the
state changes (:mod:`streaming.state.changes`), and stuck partitions where their lag
is kept (:func:`streaming.lag.rules.stuck_mask`).
"""

"""The consumer side: apply the rebalancer's recommendations at a group's rebalances.

- :mod:`streaming.apply.plan` (pure): map a recommendation onto the current members, check it fits,
  else a fallback assignment; should a member ask for a rebalance;
- :mod:`streaming.apply.identities` (pure): the client id in a member id, and the user data the
  assignor sends;
- :mod:`streaming.apply.feed`: the latest recommendation per group from the trigger feed (background
  reader that joins no group);
- :mod:`streaming.apply.assignor`: :class:`~streaming.apply.assignor.RecommendationAssignor`, a
  kafka-python assignor;
- :mod:`streaming.apply.rejoin`: :class:`~streaming.apply.rejoin.RejoinOnRecommendation`, ask for a
  rebalance when a new recommendation changes this member's partitions.

Only :mod:`~streaming.apply.plan` is imported here; the others need kafka-python.
"""

from streaming.apply.plan import Decision, DoesNotFit, decide

__all__ = ["Decision", "DoesNotFit", "decide"]

"""Errors of the consumer side (rooted in :class:`assignors.errors.RebalancerError`).

Neither reaches the consumer: the leader falls back to a local assignment when a recommendation does
not fit, and the feed reader skips a value that is not a recommendation."""

from __future__ import annotations

from assignors.errors import RebalancerError


class ApplyError(RebalancerError):
    """Base of the errors of :mod:`streaming.apply`."""


class DoesNotFit(ApplyError, ValueError):
    """The recommendation cannot be applied to the group as it is now; the message says why."""


class InvalidRecommendation(ApplyError, ValueError):
    """A trigger-feed value that is not a well-formed recommendation; the message says what is
    wrong."""

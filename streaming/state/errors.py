"""Errors of the group state (rooted in :class:`assignors.errors.RebalancerError`)."""

from __future__ import annotations

from assignors.errors import RebalancerError


class StateError(RebalancerError):
    """Base of the errors of :mod:`streaming.state`."""


class UnreadableState(StateError, ValueError):
    """A state blob of a layout version this version does not read; the message says to start from a new
    checkpoint."""

"""Errors of the collector (rooted in :class:`assignors.errors.RebalancerError`).

A Kafka error while polling is not one of these: the collector logs it, backs off and polls
again."""

from __future__ import annotations

from assignors.errors import RebalancerError


class CollectorError(RebalancerError):
    """Base of the errors of :mod:`streaming.collector`."""


class DecodeError(CollectorError, ValueError):
    """Bytes that are not a consumer protocol subscription or assignment."""


class ShardSpecError(CollectorError, ValueError):
    """A shard specification that is not ``i/N`` with ``0 <= i < N`` (or a number of shards below
    1)."""

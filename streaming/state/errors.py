"""Errors of the group state (rooted in :class:`assignors.errors.RebalancerError`)."""

from __future__ import annotations

from assignors.errors import RebalancerError

UNREADABLE = "the job's group state cannot be read"
"""The start of every :class:`UnreadableState` message: a marker the job's supervisor
treats as fatal."""

WAY_OUT = ("run the version that wrote this checkpoint, or start the job on a new checkpoint "
           "(rebalancer run --checkpoint NEW_PATH: the tables keep their history and "
           "recommendation versions continue after theirs; each group's state starts again from "
           "its next readings)")


class StateError(RebalancerError):
    """Base of the errors of :mod:`streaming.state`."""


class UnreadableState(StateError, ValueError):
    """Group state this version cannot read: another version's layout, another keying of the
    checkpoint, damaged bytes. No record can be applied to it and no record is at fault, so it is
    never a rejection: it leaves the stateful step, the query fails, and the supervisor ends the job
    with this one error (:data:`UNREADABLE` is among its fatal markers); the message says what was
    read and the way out."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"{UNREADABLE}: {detail}; {WAY_OUT}")
        self.detail = detail

"""The one error the sticky algorithm raises of its own."""

from __future__ import annotations

from assignors.errors import AssignorError


class StickyAssignmentError(AssignorError):
    """The sticky algorithm reached a state Kafka reports with ``IllegalStateException`` (or, with
    ``kafka_bugs``, a ``NullPointerException``)."""

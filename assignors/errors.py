"""Errors of the assignment core, and the root of every error the project raises on purpose.

:class:`RebalancerError` is that root. It lives here because ``assignors`` is the bottom layer (it
imports nothing of ``streaming``), so every package can derive from it. Each package keeps its own
errors beside its code, all subclasses of it:

- ``assignors/errors.py`` (this module): :class:`AssignorError` and the snapshot, assignment, option
  and name errors; ``assignors/sticky/errors.py``: the sticky algorithm's own;
- ``streaming/errors.py``: set-up, Kafka, configuration and the job's fatal errors (the CLI prints
  any :class:`RebalancerError` as one line and exits with its ``exit_status``);
- ``streaming/state/errors.py``, ``streaming/collector/errors.py``, ``streaming/apply/errors.py``.
"""

from __future__ import annotations


class RebalancerError(Exception):
    """Root of every error this project raises on purpose. The message names the cause and, where
    there is one, the log file to read."""

    exit_status = 1

    def __init__(self, message: str, log_file: str | None = None) -> None:
        if log_file:
            message = f"{message} (see {log_file})"
        super().__init__(message)
        self.log_file = log_file


class AssignorError(RebalancerError):
    """Base of every error the assignors raise."""


class InvalidSnapshot(AssignorError, ValueError):
    """A group snapshot breaks a rule. ``where`` names the field (``topics.orders``,
    ``members[C0].topics``)."""

    def __init__(self, where: str, what: str) -> None:
        super().__init__(f"{where}: {what}")
        self.where = where
        self.what = what


class InvalidAssignment(AssignorError, ValueError):
    """An assignment breaks a rule of the snapshot it was made for (the message names the
    partition)."""


class InvalidOption(AssignorError, ValueError):
    """An assignor option is unknown to the assignor, of the wrong type or out of range."""

    def __init__(self, key: str, what: str) -> None:
        super().__init__(f"{key}: {what}")
        self.key = key
        self.what = what


class UnknownAssignor(AssignorError, KeyError):
    """No assignor is registered under that name."""

    def __init__(self, name: str, known: list[str]) -> None:
        super().__init__(f"unknown assignor {name!r}; known: {', '.join(known)}")
        self.name = name

    def __str__(self) -> str:  # KeyError would quote the whole message
        return self.args[0]

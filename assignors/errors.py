"""Errors of the assignment core, all in one place."""

from __future__ import annotations


class AssignorError(Exception):
    """Base of every error the assignors raise."""


class InvalidSnapshot(AssignorError, ValueError):
    """A group snapshot breaks a rule. ``where`` names the field (``topics.orders``, ``members[C0].topics``)."""

    def __init__(self, where: str, what: str) -> None:
        super().__init__(f"{where}: {what}")
        self.where = where
        self.what = what


class UnknownAssignor(AssignorError, KeyError):
    """No assignor is registered under that name."""

    def __init__(self, name: str, known: list[str]) -> None:
        super().__init__(f"unknown assignor {name!r}; known: {', '.join(known)}")
        self.name = name

    def __str__(self) -> str:  # KeyError would quote the whole message
        return self.args[0]

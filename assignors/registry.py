"""Assignors by name, as Kafka's ``partition.assignment.strategy`` names them.

Every assignor module exposes ``NAME`` and ``assign(snapshot, **options) -> Assignment``. Modules are
imported on first use so that picking one assignor does not load the others' dependencies.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from typing import Any

from assignors.errors import UnknownAssignor
from assignors.model import Assignment, GroupSnapshot

Assignor = Callable[..., Assignment]

_MODULES: dict[str, str] = {
    "range": "assignors.range",
    "roundrobin": "assignors.roundrobin",
    "sticky": "assignors.sticky",
    "cooperative-sticky": "assignors.cooperative_sticky",
    "lag": "assignors.lag",
    "balanced": "assignors.balanced",
}


def names() -> list[str]:
    """Registered assignor names whose module is present."""
    return [n for n, mod in _MODULES.items() if importlib.util.find_spec(mod) is not None]


def get(name: str) -> Assignor:
    """The ``assign`` function registered as ``name``; :class:`UnknownAssignor` otherwise."""
    module = _MODULES.get(name)
    if module is None or importlib.util.find_spec(module) is None:
        raise UnknownAssignor(name, names())
    return importlib.import_module(module).assign


def assign(name: str, snapshot: GroupSnapshot, **options: Any) -> Assignment:
    return get(name)(snapshot, **options)

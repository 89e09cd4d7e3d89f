"""Assignors by name, as Kafka's ``partition.assignment.strategy`` names them, and their options.

Every assignor module exposes ``NAME`` and ``assign(snapshot, **options) -> Assignment``. Modules
are imported on first use so that picking one assignor does not load the others' dependencies; the
options are declared here, as data, so that validating a configuration imports no assignor at all.

Options come from three places: a scenario file (Kafka's test flag ``prefer_rack_aware_logic``), the
command line (``rebalancer assign --option key=value``) and the configuration
(``[policy.assignor_options]``). :func:`validate_options` checks user-supplied ones strictly
(unknown key, wrong type, out of range: :class:`InvalidOption` naming the key and what is allowed);
:func:`applicable` keeps the scenario options an assignor takes and drops the rest, so a flag meant
for Kafka's assignors never reaches ``balanced``.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from assignors.errors import InvalidOption, UnknownAssignor
from assignors.model import Assignment, GroupSnapshot

Assignor = Callable[..., Assignment]


@dataclass(frozen=True)
class OptionSpec:
    """One option an assignor takes: its type, default and allowed range (inclusive)."""

    name: str
    type: type  # bool, int or float
    default: Any
    help: str
    minimum: float | None = None
    maximum: float | None = None
    nullable: bool = False
    """``None`` (written ``none`` on the command line) is allowed and means "not set"."""

    def allowed(self) -> str:
        """What a valid value looks like, for error messages and ``--help``."""
        if self.type is bool:
            return "true or false"
        kind = "an integer" if self.type is int else "a number"
        if self.minimum is not None and self.maximum is not None:
            text = f"{kind} in [{_num(self.minimum)}, {_num(self.maximum)}]"
        elif self.minimum is not None:
            text = f"{kind} >= {_num(self.minimum)}"
        elif self.maximum is not None:
            text = f"{kind} <= {_num(self.maximum)}"
        else:
            text = kind
        return f"{text} or none" if self.nullable else text

    def parse(self, value: object) -> Any:
        """``value`` as this option's type; strings (command line, config overrides) are parsed."""
        if isinstance(value, str):
            value = _from_text(value.strip())
        if value is None:
            if self.nullable:
                return None
            raise InvalidOption(self.name, f"must be {self.allowed()}, got none")
        bad = InvalidOption(self.name, f"must be {self.allowed()}, got {value!r}")
        if self.type is bool:
            if not isinstance(value, bool):
                raise bad
            return value
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise bad
        if self.type is int:
            if isinstance(value, float) and not value.is_integer():
                raise bad
            value = int(value)
        else:
            value = float(value)
            if not math.isfinite(value):
                raise bad
        if ((self.minimum is not None and value < self.minimum)
                or (self.maximum is not None and value > self.maximum)):
            raise bad
        return value


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def _from_text(text: str) -> object:
    """A command-line value as JSON would read it (``1``, ``0.5``, ``true``, ``none``), else the
    text."""
    low = text.lower()
    if low in ("none", "null", ""):
        return None
    if low in ("true", "false"):
        return low == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


_PREFER = OptionSpec(
    "prefer_rack_aware_logic", bool, False,
    "Kafka's test flag: take the rack-aware path "
    "even when every partition has a replica on every rack")
_KAFKA_BUGS = OptionSpec(
    "kafka_bugs", bool, False,
    "reproduce a Kafka defect that can give a partition "
    "to a member no longer subscribed to its topic")
_HORIZON = OptionSpec(
    "horizon_s", float, 0.0, "load = lag + produce rate x this many seconds (0: lag alone)",
    minimum=0)

# name -> (module, options). Kafka's own assignors take Kafka's settings; ``lag`` has none.
_REGISTRY: dict[str, tuple[str, tuple[OptionSpec, ...]]] = {
    "range": ("assignors.range", (_PREFER,)),
    "roundrobin": ("assignors.roundrobin", ()),
    "sticky": ("assignors.sticky.eager", (_PREFER, _KAFKA_BUGS)),
    "cooperative-sticky": ("assignors.sticky.cooperative", (_PREFER, _KAFKA_BUGS)),
    "lag": ("assignors.lag", ()),
    "balanced": ("assignors.balanced", (
        OptionSpec("max_count_skew", int, None,
                   "partition counts of members with the same subscriptions differ by at most 1 + "
                   "this (none: load decides)", minimum=0, nullable=True),
        OptionSpec("load_tolerance", float, 0.02,
                   "fraction above the best max load that rack locality and stickiness may cost",
                   minimum=0),
        OptionSpec("cross_rack_cost", float, 10.0, "cost of one cross-rack partition", minimum=0),
        OptionSpec("move_cost", float, 1.0, "cost of one moved partition", minimum=0),
        _HORIZON,
        OptionSpec("target_utilisation", float, None,
                   "with capacities and rates known, no member is given more production than this "
                   "fraction of its capacity where a plan allows it (none: off)", minimum=0.01,
                   nullable=True),
    )),
}


def names() -> list[str]:
    """Registered assignor names whose module is present."""
    return [n for n, (mod, _) in _REGISTRY.items() if importlib.util.find_spec(mod) is not None]


def _entry(name: str) -> tuple[str, tuple[OptionSpec, ...]]:
    entry = _REGISTRY.get(name)
    if entry is None or importlib.util.find_spec(entry[0]) is None:
        raise UnknownAssignor(name, names())
    return entry


def get(name: str) -> Assignor:
    """The ``assign`` function registered as ``name``; :class:`UnknownAssignor` otherwise."""
    return importlib.import_module(_entry(name)[0]).assign


def withholds(name: str) -> bool:
    """Whether ``name``'s assignment may leave a partition to nobody for a round (a cooperative
    first round: its module says ``WITHHOLDS = True``); every other one assigns every partition of
    a subscribed topic."""
    return bool(getattr(importlib.import_module(_entry(name)[0]), "WITHHOLDS", False))


def options(name: str) -> dict[str, OptionSpec]:
    """The options ``name`` takes, by option name (empty for an assignor that takes none)."""
    return {spec.name: spec for spec in _entry(name)[1]}


def options_of_module(module: str) -> dict[str, OptionSpec] | None:
    """The options of the assignor implemented in ``module``; ``None`` if no registered one is."""
    for mod, specs in _REGISTRY.values():
        if mod == module:
            return {spec.name: spec for spec in specs}
    return None


def validate_options(name: str, given: Mapping[str, object]) -> dict[str, Any]:
    """User-supplied options of assignor ``name``, typed and checked; :class:`InvalidOption`
    otherwise."""
    specs = options(name)
    out: dict[str, Any] = {}
    for key, value in given.items():
        spec = specs.get(key)
        if spec is None:
            takes = f"it takes {', '.join(specs)}" if specs else "it takes none"
            raise InvalidOption(key, f"not an option of the {name} assignor; {takes}")
        out[key] = spec.parse(value)
    return out


def applicable(name: str, given: Mapping[str, Any]) -> dict[str, Any]:
    """The entries of ``given`` that assignor ``name`` takes (a scenario's options are for some
    only)."""
    specs = options(name)
    return {k: v for k, v in given.items() if k in specs}


def assign(name: str, snapshot: GroupSnapshot, **opts: Any) -> Assignment:
    """Run assignor ``name`` with validated ``opts`` (:class:`InvalidOption` on a bad one)."""
    return get(name)(snapshot, **validate_options(name, opts))

"""TOML values and ``--conf`` strings into the typed settings of :mod:`streaming.config`: a table
becomes its dataclass (an unknown key is an error naming the known ones), a string ``"true"`` a
bool, ``"none"`` / ``""`` None for an optional setting, a map's values strings
(``assignor_options = {hot = true}`` reads ``"true"``, as a Java client would).

Example: ``build(JobSettings, {"state_buckets": "64"}, "job")`` gives
``JobSettings(state_buckets=64, ...)``; ``{"state_buckets": "x"}`` raises
``ConfigError("state_buckets: expected int, got 'x'")``.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any

from streaming.errors import ConfigError


def build(cls: type, raw: Any, where: str) -> Any:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected a table, got {type(raw).__name__}")
    hints = typing.get_type_hints(cls)
    known = {f.name: f for f in dataclasses.fields(cls)}
    kwargs = {}
    for key, value in raw.items():
        if key not in known:
            raise ConfigError(f"{where}: unknown setting {key!r} (known: {', '.join(known)})")
        kwargs[key] = coerce(hints[key], value, f"{where}.{key}" if "." in where else f"{key}")
    return cls(**kwargs)


def coerce(tp: Any, value: Any, where: str) -> Any:
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return build(tp, value, where)
    origin = typing.get_origin(tp)
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a table of settings")
        return {str(k): _scalar_str(v) for k, v in value.items()}
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if value is None or (isinstance(value, str) and value.lower() in ("none", "null", "")):
            return None
        return coerce(args[0], value, where)
    try:
        if tp is bool:
            if isinstance(value, str):
                if value.lower() not in ("true", "false"):
                    raise ValueError(value)
                return value.lower() == "true"
            return bool(value)
        if tp in (int, float):
            if isinstance(value, bool):
                raise ValueError(value)
            return tp(value)
        if tp is str:
            return str(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{where}: expected {tp.__name__}, got {value!r}") from None
    return value


def _scalar_str(v: Any) -> str:
    return str(v).lower() if isinstance(v, bool) else str(v)

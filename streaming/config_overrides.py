"""``--conf key=value`` applied to the typed configuration (:class:`streaming.config.Config`):

- ``spark.*`` keys that are not settings of ``[spark]`` join the Spark session's conf as they are;
- ``kafka.*`` keys that are not settings of ``[kafka]`` join every Kafka client's options
  (``kafka.bootstrap.servers``, Spark's spelling, sets ``kafka.bootstrap_servers``);
- ``policy.mode_overrides.REGEX=MODE`` and ``policy.assignor_options.KEY=VALUE`` add one entry of
  their map (an empty value after the map's name clears it);
- anything else is ``section.field``, its value coerced to the field's type
  (:mod:`streaming.config_values`); an unknown section or field is an error.

Example: ``apply(cfg, ["job.trigger_interval=10 seconds", "spark.sql.shuffle.partitions=8"])``
gives ``cfg`` with ``job.trigger_interval`` "10 seconds" and the Spark conf entry added.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

from streaming import config_values as values
from streaming.errors import ConfigError

POLICY_MAPS = {"mode_overrides": "REGEX=MODE", "assignor_options": "KEY=VALUE"}
"""The map-valued policy settings that ``--conf policy.<map>.<entry>=<value>`` extends one entry at
a time."""


def apply(cfg: Any, overrides: list[str] | dict[str, str]) -> Any:
    """``cfg`` (a :class:`streaming.config.Config`) with the ``key=value`` overrides applied in
    order."""
    pairs = overrides.items() if isinstance(overrides, dict) else [_split(o) for o in overrides]
    for key, value in pairs:
        if key == "kafka.bootstrap.servers":  # Spark's spelling of the same setting
            key = "kafka.bootstrap_servers"
        section, _, name = key.partition(".")
        if section == "spark" and not _is_field(type(cfg.spark), name):
            spark = dataclasses.replace(cfg.spark, conf=cfg.spark.conf | {key: value})
            cfg = dataclasses.replace(cfg, spark=spark)
        elif section == "kafka" and not _is_field(type(cfg.kafka), name):
            opts = cfg.kafka.options | {name: value}
            cfg = dataclasses.replace(cfg, kafka=dataclasses.replace(cfg.kafka, options=opts))
        elif section == "policy" and name.partition(".")[0] in POLICY_MAPS:
            # policy.mode_overrides.REGEX=MODE / policy.assignor_options.KEY=VALUE adds one entry
            # (after those of the file); policy.mode_overrides= / policy.assignor_options= clears
            # the map
            field, _, entry = name.partition(".")
            if not entry and value:
                raise ConfigError(f"--conf {key}: expected policy.{field}.{POLICY_MAPS[field]}")
            entries: dict[str, Any] = getattr(cfg.policy, field) | {entry: value} if entry else {}
            policy = dataclasses.replace(cfg.policy, **{field: entries})
            cfg = dataclasses.replace(cfg, policy=policy)
        else:
            sub: Any = getattr(cfg, section, None)
            if (not name or sub is None or not dataclasses.is_dataclass(sub)
                    or isinstance(sub, type)):
                raise ConfigError(f"--conf {key}: unknown section {section!r}")
            known = {f.name: f for f in dataclasses.fields(sub)}
            if name not in known:
                raise ConfigError(f"--conf {key}: unknown setting {name!r} in [{section}]")
            coerced = values.coerce(typing.get_type_hints(type(sub))[name], value, f"--conf {key}")
            changed: dict[str, Any] = {section: dataclasses.replace(sub, **{name: coerced})}
            cfg = dataclasses.replace(cfg, **changed)
    return cfg


def _is_field(cls: type, name: str) -> bool:
    return name in {f.name for f in dataclasses.fields(cls)}


def _split(item: str) -> tuple[str, str]:
    key, sep, value = item.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"--conf {item!r}: expected key=value")
    return key.strip(), value.strip()

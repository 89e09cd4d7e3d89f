"""Where things live on disk, from a checkout or installed from the wheel.

- **From a checkout** (``make``, an editable install): everything stays in the repository, as
  always: ``conf/``, ``.cache/`` (the JVM jars), ``data/`` and ``checkpoints/``.
- **Installed** (the wheel in some environment): the configuration, log4j2 files and Maven poms are
  package data (``streaming/_conf``, copied from ``conf/`` when the wheel is built); data and
  checkpoints go under the working directory; the jar cache goes to ``~/.cache/kafka-rebalancer``
  (``$XDG_CACHE_HOME`` respected). Nothing is ever written inside the installed package.

Environment overrides: ``REBALANCER_HOME`` is the root of ``data/``, ``checkpoints/`` and relative
``[paths]`` settings (and holds ``.cache`` too); ``REBALANCER_CACHE`` is the cache (``jars/``,
``m2/``, ``logs/``, ``kafka_clients/``) alone.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

SOURCE_ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Layout:
    root: Path
    """Root of ``data/``, ``checkpoints/`` and of relative paths in the configuration."""
    conf: Path
    cache: Path
    from_checkout: bool


def layout(source_root: Path, env: Mapping[str, str], cwd: Path, user_home: Path) -> Layout:
    """Where things go for a package whose sources sit in ``source_root`` (pure: the caller passes
    the world)."""
    # a checkout holds pyproject.toml and conf/ beside the package; site-packages does not
    checkout = ((source_root / "pyproject.toml").is_file()
                and (source_root / "conf" / "rebalancer.toml").is_file())
    home = env.get("REBALANCER_HOME")
    root = (cwd / home) if home else (source_root if checkout else cwd)
    if env.get("REBALANCER_CACHE"):
        cache = cwd / env["REBALANCER_CACHE"]
    elif home or checkout:
        cache = root / ".cache"
    else:
        xdg = env.get("XDG_CACHE_HOME")
        cache = (cwd / xdg if xdg else user_home / ".cache") / "kafka-rebalancer"
    conf = source_root / "conf" if checkout else source_root / "streaming" / "_conf"
    return Layout(root=root, conf=conf, cache=cache, from_checkout=checkout)


_LAYOUT = layout(SOURCE_ROOT, os.environ, Path.cwd(), Path.home())
FROM_CHECKOUT = _LAYOUT.from_checkout
PROJECT_ROOT = _LAYOUT.root
CONF_DIR = _LAYOUT.conf
CACHE_DIR = _LAYOUT.cache
JARS_DIR = CACHE_DIR / "jars"
LOG_DIR = CACHE_DIR / "logs"
CHECKPOINTS_DIR = PROJECT_ROOT / "checkpoints"
DATA_DIR = PROJECT_ROOT / "data"


# -- table and checkpoint locations: local paths or Hadoop URIs ------------------------------------

_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]+:/")  # scheme:/..., two letters at least (not C:\)


def is_uri(location: str) -> bool:
    """``s3a://b/x``, ``file:///x``, ``hdfs://nn/x``, ``abfss://c@a/x``: a Hadoop URI, not a local
    path."""
    return bool(_URI.match(location))


def resolve_location(location: str) -> str:
    """A URI as it is; a local path made absolute, relative ones against ``PROJECT_ROOT``."""
    if is_uri(location):
        return location
    p = Path(location)
    return str(p if p.is_absolute() else PROJECT_ROOT / p)


def join_location(base: str, name: str) -> str:
    """``name`` under ``base``: URIs joined with '/', as Hadoop does (no percent-encoding: a space
    stays a space); ``name`` itself absolute or a URI stands alone."""
    if is_uri(name) or Path(name).is_absolute():
        return name
    base = resolve_location(base)
    if is_uri(base):
        return base + name if base.endswith("/") else f"{base}/{name}"
    return str(Path(base) / name)


def local_path(location: str) -> Path | None:
    """The local file a location names (a plain path or a ``file:`` URI), else None (an object
    store, HDFS)."""
    if not is_uri(location):
        return Path(resolve_location(location))
    scheme, _, rest = location.partition(":")
    if scheme.lower() != "file":
        return None
    if rest.startswith("//"):  # file://host/path: only the local host means this machine
        host, slash, path = rest[2:].partition("/")
        if host not in ("", "localhost"):
            return None
        rest = slash + path
    return Path(rest)

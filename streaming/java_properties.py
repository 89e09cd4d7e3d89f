"""Java ``.properties`` files, as Kafka's tools read them (``--command-config``), and ``${ENV}``
references in settings (for secrets). A base module: :mod:`streaming.config` reads with it, and the
Kafka clients' translation (:mod:`streaming.kafka_clients.properties`) stands above both."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from streaming.errors import ConfigError

_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


# -- .properties files -----------------------------------------------------------------------------

def parse_properties(text: str, where: str = "properties") -> dict[str, str]:
    """Java ``.properties`` syntax: ``key=value``, ``key: value`` or ``key value``; ``#``/``!``
    comments; a trailing backslash continues a line; ``\\t \\n \\r \\f \\uXXXX`` escapes."""
    out: dict[str, str] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].lstrip(" \t\f")
        i += 1
        if not line or line[0] in "#!":
            continue
        while _continues(line) and i < len(lines):
            line = line[:-1] + lines[i].lstrip(" \t\f")
            i += 1
        if _continues(line):
            line = line[:-1]
        key, value = _split_logical(line)
        out[_unescape(key, where)] = _unescape(value, where)
    return out


def _continues(line: str) -> bool:
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def _split_logical(line: str) -> tuple[str, str]:
    j = 0
    while j < len(line):
        c = line[j]
        if c == "\\":
            j += 2
            continue
        if c in "=: \t\f":
            break
        j += 1
    key, rest = line[:j], line[j:].lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return key, rest


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(s: str, where: str) -> str:
    out, j = [], 0
    while j < len(s):
        c = s[j]
        if c != "\\" or j + 1 >= len(s):
            out.append(c)
            j += 1
            continue
        n = s[j + 1]
        if n == "u":
            digits = s[j + 2:j + 6]
            if not re.fullmatch(r"[0-9a-fA-F]{4}", digits):
                raise ConfigError(f"{where}: malformed \\uXXXX escape")
            out.append(chr(int(digits, 16)))
            j += 6
        else:
            out.append(_ESCAPES.get(n, n))
            j += 2
    return "".join(out)


def format_properties(props: Mapping[str, str]) -> str:
    """``props`` in .properties syntax that :func:`parse_properties` (and Java) read back
    unchanged."""
    def esc(s: str, key: bool) -> str:
        s = s.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
        if key:
            s = re.sub(r"([=: #!])", r"\\\1", s)
        elif s[:1] in (" ", "#", "!"):
            s = "\\" + s
        return s
    return "".join(f"{esc(k, True)}={esc(v, False)}\n" for k, v in props.items())


def read_properties_file(path: str | Path) -> dict[str, str]:
    file = Path(path)
    try:
        text = file.read_text()
    except FileNotFoundError:
        raise ConfigError(f"--command-config {file}: no such file") from None
    except OSError as e:
        raise ConfigError(f"--command-config {file}: cannot read it ({e.strerror})") from None
    return parse_properties(text, where=str(file))


# -- ${ENV} references -----------------------------------------------------------------------------

def expand_env(options: Mapping[str, str], env: Mapping[str, str] | None = None,
               where: str = "kafka") -> dict[str, str]:
    """Replace ``${NAME}`` in every value with the environment variable NAME; an unset one is an
    error that names the setting and the variable, never a value."""
    env = os.environ if env is None else env

    def expand(key: str, value: str) -> str:
        def sub(m: re.Match[str]) -> str:
            name = m.group(1)
            if name not in env:
                raise ConfigError(
                    f"{where}.{key} refers to ${{{name}}}, which is not set in the environment")
            return env[name]
        return _ENV_REF.sub(sub, value)

    return {k: expand(k, v) for k, v in options.items()}

"""Names from data made safe to print: group ids, topics and client ids reach logs and terminals.

Kafka allows almost any string as a group id or client id, and the trigger feed and the event topics
can carry anything a producer wrote. A newline in a name forges log lines; an ANSI escape rewrites
the operator's terminal. :func:`printable` escapes every control character (C0, DEL, C1, and the
Unicode line and paragraph separators) and caps the length, so one name is always one short line.

    >>> printable("orders\\n\\x1b[2Jevil")
    'orders\\\\n\\\\x1b[2Jevil'
"""

from __future__ import annotations

import re
from typing import Any

MAX_CHARS = 200

_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(m: re.Match[str]) -> str:
    ch = m.group()
    return _NAMED.get(ch) or (f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}")


def printable(value: Any, limit: int = MAX_CHARS) -> str:
    """``value`` as one line of at most about ``limit`` characters, control characters escaped."""
    text = value if isinstance(value, str) else repr(value)
    if len(text) > limit:
        text = text[:limit] + f"...(+{len(text) - limit} chars)"
    return _UNSAFE.sub(_escape, text)

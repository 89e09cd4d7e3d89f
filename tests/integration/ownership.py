"""What a group's member processes said, read back as a timeline
(tests/integration/test_migration.py): who held each partition when, how long a partition had no
owner, how often it changed hands, which offsets were read how often, and which assignor decided
each assignment.

A member process is anything with ``changes`` (a list of (monotonic time, partitions held) in the
order it reported them, partitions as (topic, partition)), ``exited`` (monotonic time it stopped,
None while it runs), ``reads`` ((partition, first offset, last offset) of every poll) and ``logs``
((monotonic time, line)).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

Interval = tuple[float, float, int]
"""(from, to, member process index): one partition held by one process."""


def owned(members: Sequence[Any], end: float) -> dict[int, list[Interval]]:
    """partition -> the intervals it was held, from each process's reports (held until its next
    report, or its exit, or ``end``)."""
    out: dict[int, list[Interval]] = {}
    for n, m in enumerate(members):
        marks = [*m.changes, (m.exited or end, set())]
        for (t, held), (t_next, _) in itertools.pairwise(marks):
            for _, p in held:
                out.setdefault(p, []).append((t, t_next, n))
    return out


def unowned(intervals: Sequence[Interval], since: float, until: float) -> float:
    """The longest time within [since, until] that no interval covers."""
    longest, covered = 0.0, since
    for start, stop, _ in sorted(intervals):
        if start > covered:
            longest = max(longest, min(start, until) - covered)
        covered = max(covered, stop)
    return max(longest, until - covered)


def handovers(intervals: Sequence[Interval]) -> int:
    """How often the partition went to another process."""
    owners = [n for _, _, n in sorted(intervals)]
    return sum(a != b for a, b in itertools.pairwise(owners))


def moves(by_partition: dict[int, list[Interval]], since: float, until: float) -> int:
    """Handovers that happened within [since, until], over all partitions."""
    n = 0
    for intervals in by_partition.values():
        ordered = sorted(intervals)
        n += sum(a[2] != b[2] and since <= b[0] <= until for a, b in itertools.pairwise(ordered))
    return n


def read_counts(members: Sequence[Any], partition: int) -> dict[int, int]:
    """offset -> how many times a process read it."""
    counts: dict[int, int] = {}
    for m in members:
        for p, first, last in list(m.reads):
            if p == partition:
                for o in range(first, last + 1):
                    counts[o] = counts.get(o, 0) + 1
    return counts


_BROKER_LINE = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] \w+ (.*)$")
_LABELS = (
    (re.compile(r"Converted the classic group"), lambda m: "converted"),
    (re.compile(r"is the target assignment of"), lambda m: "server: recommendation"),
    (re.compile(r"applying recommendation v\d+"), lambda m: "classic leader: recommendation"),
    (re.compile(r"a member joined and left"), lambda m: "server: nudge"),
    (re.compile(r"not applied, using (?:the )?(\S+?)(?: fallback)? \[(\w+)\]"),
     lambda m: f"{m[1]} ({m[2]})"),
    (re.compile(r"; using (?:the )?(\S+?)(?: fallback)?$"), lambda m: m[1]),
)


def _label(text: str, who: str) -> str | None:
    for pattern, name in _LABELS:
        found = pattern.search(text)
        if found:
            label = name(found)
            return label if ":" in label or label == "converted" else f"{who}: {label}"
    return None


def decisions(group: str, leader: Sequence[tuple[float, str]], broker_log: str,
              since_until: tuple[float, float], wall: tuple[float, float]) -> list[str]:
    """In time order, the assignments decided for ``group`` within a window (``since_until`` in
    monotonic time for the members' ``leader`` lines, ``wall`` the same window in wall-clock time
    for the broker's log): the classic leader's RecommendationAssignor, the broker's ServerAssignor
    and its nudges, the conversion."""
    found: list[tuple[float, str]] = []
    for t, line in leader:
        if since_until[0] <= t <= since_until[1] and f"group {group}:" in line:
            label = _label(line, "classic leader")
            if label:
                found.append((wall[0] + t - since_until[0], label))
    for line in broker_log.splitlines():
        m = _BROKER_LINE.match(line)
        if not m or (f"group {group}:" not in line and f"[GroupId {group}]" not in line):
            continue
        # the broker logs local time
        t = datetime.strptime(m[1], "%Y-%m-%d %H:%M:%S,%f").timestamp()
        label = _label(m[2].rsplit(" (", 1)[0], "server")
        if label and wall[0] <= t <= wall[1]:
            found.append((t, label))
    return [label for _, label in sorted(found)]

"""What the demo shows, computed from the collector's own events (pure: events in, figures out).

:class:`GroupMonitor` follows one group: each ``members`` event gives the current assignment and
racks, each ``partitions`` event a topic's replica racks, and each poll's ``lag`` events the lag per
partition. After every poll that carried lag it records a :class:`Sample`: the lag of each consumer
(the sum over the partitions it is assigned), the max and the imbalance (max / mean), and the
cross-rack partitions (assigned to a consumer whose rack holds no replica); the last two are
:mod:`assignors.metrics`' figures. Marks (recommendations, rebalances, replica moves) are kept
beside the samples for the display and the plot.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from assignors import metrics
from assignors.model import GroupSnapshot, Member
from streaming.collector.member_metadata import RACK_SUFFIX
from streaming.contracts import events as ev


def short_name(client_id: str, group: str) -> str:
    """``orders-app-2-rack-c`` -> ``c2(c)``; anything else is left as it is."""
    m = re.fullmatch(re.escape(group) + r"-(\d+)(?:" + re.escape(RACK_SUFFIX) + r"(\w+))?",
                     client_id or "")
    if not m:
        return client_id
    return f"c{m.group(1)}" + (f"({m.group(2)})" if m.group(2) else "")


@dataclass(frozen=True)
class Sample:
    t: float
    """seconds since the monitor started (wall clock of the poll)."""
    lag: dict[str, int]
    """consumer (client id) -> records of lag on its partitions."""
    generation: int | None
    cross_rack: int | None
    partitions: int

    @property
    def max_lag(self) -> int:
        return max(self.lag.values(), default=0)

    @property
    def imbalance(self) -> float:
        return metrics.imbalance(list(self.lag.values()))


@dataclass(frozen=True)
class Mark:
    t: float
    kind: str
    """``recommendation``, ``applied``, ``fallback``, ``replicas``."""
    text: str
    data: dict[str, Any] = field(default_factory=dict)


class GroupMonitor:
    def __init__(self, group: str, t0: float) -> None:
        self.group = group
        self.t0 = t0
        self.samples: list[Sample] = []
        self.marks: list[Mark] = []
        self.assignment: dict[str, list[tuple[str, int]]] = {}
        self.racks: dict[str, str | None] = {}
        self.generation: int | None = None
        self.replica_racks: dict[tuple[str, int], frozenset[str]] = {}
        self._lock = threading.Lock()

    # -- input -------------------------------------------------------------------------------------

    def observe(self, events: Iterable[Mapping[str, Any]], now: float) -> Sample | None:
        """One collector poll's events (any groups); a sample when the poll carried this group's
        lag."""
        lag: dict[tuple[str, int], int] = {}
        for e in events:
            if e.get("group") != self.group:
                continue
            if e["type"] == "members":
                self.generation = e.get("generation")
                self.assignment = {
                    m["client_id"] or m["member_id"]: [tuple(tp) for tp in m.get("assigned") or []]
                    for m in e["members"]}
                self.racks = {m["client_id"] or m["member_id"]: m.get("rack") for m in e["members"]}
            elif e["type"] == "partitions":
                for p in e["partitions"]:
                    self.replica_racks[(e["topic"], p["partition"])] = frozenset(
                        r for r in p.get("replica_racks") or [] if r)
            elif e["type"] in ev.LAG_TYPES:
                for r in ev.readings(dict(e)):
                    lag[(r["topic"], r["partition"])] = max(
                        0, int(r["end_offset"]) - int(r["committed_offset"]))
        if not lag:
            return None
        per_member = {c: sum(lag.get(tp, 0) for tp in tps) for c, tps in self.assignment.items()}
        sample = Sample(round(now - self.t0, 2), per_member, self.generation, self.cross_rack(),
                        len(lag))
        with self._lock:
            self.samples.append(sample)
        return sample

    def mark(self, now: float, kind: str, text: str, **data: Any) -> Mark:
        m = Mark(round(now - self.t0, 2), kind, text, data)
        with self._lock:
            self.marks.append(m)
        return m

    # -- figures -----------------------------------------------------------------------------------

    def cross_rack(self) -> int | None:
        """:func:`assignors.metrics.cross_rack_partitions` of the current assignment (None before
        any partitions event)."""
        if not self.replica_racks:
            return None
        topics: dict[str, int] = {}
        for t, p in [*self.replica_racks, *(tp for tps in self.assignment.values() for tp in tps)]:
            topics[t] = max(topics.get(t, 0), p + 1)
        racks = {t: [tuple(self.replica_racks.get((t, p), ())) for p in range(n)]
                 for t, n in topics.items()}
        members = tuple(
            Member(c, tuple(sorted({t for t, _ in tps})), rack=self.racks.get(c) or None)
            for c, tps in self.assignment.items() if tps)
        return metrics.cross_rack_partitions(GroupSnapshot(topics, members, racks), self.assignment)

    def consumers(self) -> list[str]:
        names: dict[str, None] = {}
        for s in self.samples:
            names.update(dict.fromkeys(s.lag))
        return sorted(names)

    def window(self, start: float | None = None, end: float | None = None) -> list[Sample]:
        return [s for s in self.samples
                if (start is None or s.t >= start) and (end is None or s.t <= end)]

    def first_mark(self, kind: str, after: float = float("-inf")) -> Mark | None:
        return next((m for m in self.marks if m.kind == kind and m.t >= after), None)


def final_max_lag(samples: list[Sample], window_s: float = 6.0) -> float:
    """The mean of the group's max consumer lag over the samples of the last ``window_s`` seconds:
    what a run ends with, less noisy than the last sample alone."""
    last = [s.max_lag for s in samples if s.t >= samples[-1].t - window_s]
    return sum(last) / len(last)


def peak(samples: list[Sample]) -> Sample | None:
    return max(samples, key=lambda s: s.max_lag, default=None)


def line(sample: Sample, group: str, note: str = "") -> str:
    """One compact progress line: per-consumer lag, max, imbalance, cross-rack, generation."""
    parts = "  ".join(f"{short_name(c, group)} {v:>6,}" for c, v in sorted(sample.lag.items()))
    cross = "?" if sample.cross_rack is None else str(sample.cross_rack)
    gen = "?" if sample.generation is None else str(sample.generation)
    return (f"[{sample.t:5.0f}s] lag  {parts}  | max {sample.max_lag:>6,}  imbalance "
            f"{sample.imbalance:4.2f}  cross-rack {cross:>2}/{sample.partitions}  gen {gen}{note}")


def recommendation_text(rec: Mapping[str, Any], horizon_s: float = 0.0) -> str:
    """One line for a recommendation. Its figures are the job's member loads: lag, plus
    ``horizon_s`` seconds of production when the policy counts rates."""
    b, a = rec.get("before") or {}, rec.get("after") or {}

    def fig(key: str, fmt: str) -> str:
        if key not in b or key not in a:
            return "?"
        return f"{format(b[key], fmt)} -> {format(a[key], fmt)}"

    return (f"recommendation v{rec['version']} ({', '.join(rec.get('triggers') or [])}): "
            f"{'max lag' if not horizon_s else f'max load (lag + {horizon_s:g}s of production)'} "
            f"{fig('max_member_lag', ',.0f')}, imbalance {fig('imbalance', '.2f')}, "
            f"cross-rack {fig('cross_rack_partitions', 'd')}, "
            f"{rec.get('partitions_moved', '?')} partition(s) moved")

"""The cases (Kafka's scale-test sizes), the results folder and units, and member and topic names
and subscriptions as Kafka's runner makes them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS_DIR = ROOT / "benchmarks" / "results"
MIB = 1024 * 1024
GIB = 1024 * MIB


@dataclass(frozen=True)
class Case:
    name: str
    topics: int
    partitions: int
    consumers: int
    subscription: str  # equal | one-single | split  (as KafkaAssignorRunner.topicsFor)
    assignors: tuple[str, ...]
    sticky_limit_s: float | None = None  # Kafka's test timeout for the sticky family
    sticky_rounds: int = 2  # rounds the sticky family runs (1: the fresh assignment only)


def cases(quick: bool) -> list[Case]:
    if quick:
        return [
            Case(
                "uniform-10k", 50, 200, 200, "equal",
                ("range", "roundrobin", "lag", "sticky", "cooperative-sticky"), 30
            ),
            Case("one-single-10k", 50, 200, 200, "one-single",
                 ("range", "roundrobin", "sticky"), 90),
            Case("split-2k", 20, 100, 100, "split",
                 ("range", "roundrobin", "lag", "sticky", "cooperative-sticky"), 90),
            Case("balanced-10k", 10, 1000, 100, "equal", ("balanced",)),
        ]
    return [
        Case(
            "uniform-1M", 500, 2000, 2000, "equal",
            ("range", "roundrobin", "lag", "sticky", "cooperative-sticky"), 30
        ),
        Case(
            "one-single-1M", 500, 2000, 2000, "one-single",
            ("range", "roundrobin", "sticky", "cooperative-sticky"), 90
        ),
        Case("many-topics-r1", 500, 2000, 2000, "equal", STICKY, 30, sticky_rounds=1),
        Case("split-20k", 100, 200, 500, "split",
             ("range", "roundrobin", "lag", "sticky", "cooperative-sticky"), 90),
        Case("balanced-100k", 100, 1000, 1000, "equal", ("balanced",)),
    ]


STICKY = ("sticky", "cooperative-sticky")
JAVA = ("range", "roundrobin", "sticky", "cooperative-sticky")


def canonical(prefix: str, i: int, count: int) -> str:
    """``t007`` / ``c0042``: as KafkaAssignorRunner.canonicalName (digits of count - 1)."""
    return f"{prefix}{i:0{len(str(max(count - 1, 0)))}d}"


def topics_for(pattern: str, i: int, consumers: int, topics: tuple[str, ...]) -> tuple[str, ...]:
    n = len(topics)
    if pattern == "equal":
        return topics
    if pattern == "one-single":
        return topics[:1] if i == consumers - 1 else topics
    if pattern == "split":
        return topics[: n // 2] if i % 4 == 0 else topics[n // 2 :]
    raise ValueError(f"unknown subscription pattern {pattern!r}")

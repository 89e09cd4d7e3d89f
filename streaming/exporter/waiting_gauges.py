"""The collector's gauges of recommendations waiting (the figures:
:mod:`streaming.apply.waiting`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from prometheus_client import Gauge


class WaitingGauges:
    """Two gauges in a collector's registry; a group absent from an update loses its series."""

    def __init__(self, registry: Any, prefix: str) -> None:
        self.awaiting = Gauge(
            f"{prefix}_group_recommendation_awaiting_approval_seconds",
            "Seconds the group's latest proposal has awaited approval (NaN: none awaits)",
            ["group"],
            registry=registry,
        )
        self.unapplied = Gauge(
            f"{prefix}_group_recommendation_unapplied_seconds",
            "Seconds since the group's latest applicable recommendation was published (or "
            "approved) while it is not in place; 0 in place, NaN none to apply",
            ["group"],
            registry=registry,
        )
        self._groups: set[str] = set()

    def update(self, figures: Mapping[str, tuple[float, float]]) -> None:
        for g in self._groups - figures.keys():
            self.awaiting.remove(g)
            self.unapplied.remove(g)
        for g, (awaiting, unapplied) in figures.items():
            self.awaiting.labels(g).set(awaiting)
            self.unapplied.labels(g).set(unapplied)
        self._groups = set(figures)

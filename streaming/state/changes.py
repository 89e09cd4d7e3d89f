"""The metadata changes one observation of a group can bring, each a possible trigger of the policy.

- membership: members joined or left. Member ids change on every rejoin, so members are matched by a
  stable identity (:attr:`assignors.model.Member.identity`): ``group.instance.id`` when set, else
  client id and host, else the member id. A new generation with the same identities (a rebalance
  that only moved partitions, e.g. onto a recommendation) is no change. Example: generation 7 has C0
  and C1, generation 8 has C0, C1 and C2: C2 joined.
- partition count: a subscribed topic gained (or, after a re-creation, lost) partitions. Kafka's
  assignors see new partitions only at the next rebalance; until then nobody reads them. Example: t0
  had 4 partitions and gets 6: t0p4 and t0p5 are unassigned until a rebalance.
- rack change: the set of replica racks of a partition changed, KIP-881's rule for when a
  rack-aware group must rebalance (a reassignment or a broker move changes which racks hold it, and
  consumers keep reading across racks until the next rebalance). Example: t0p0 was on racks {a, b}
  and moves to {b, c}. Whether that is worth a recommendation is the policy's call (cross-rack
  partitions must drop).

:class:`Changes` collects what :mod:`streaming.state.update` saw while applying one observation.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from assignors.model import Member
from streaming.contracts.recommendation import (
    MEMBERSHIP_CHANGE,
    PARTITION_COUNT_CHANGE,
    RACK_CHANGE,
)


@dataclass
class Changes:
    joined: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)
    partition_counts: dict[str, dict] = field(default_factory=dict)
    racks: dict[str, list[dict]] = field(default_factory=dict)
    applied: bool = False
    """Some metadata event of this observation replaced what the state held."""

    def any(self) -> bool:
        """Whether any change was seen (any that :meth:`triggers` names)."""
        return bool(self.joined or self.left or self.partition_counts or self.racks)

    def then(self, later: Changes) -> Changes:
        """These changes followed by ``later``'s, of the same observation (applied in two calls), as
        one :class:`Changes` applying them all would hold."""
        racks = self.racks | later.racks
        return Changes(self.joined + later.joined, self.left + later.left,
                       self.partition_counts | later.partition_counts, racks,
                       self.applied or later.applied)

    def triggers(self) -> dict[str, Any]:
        """Trigger name -> figures for the metadata changes seen."""
        out: dict[str, Any] = {}
        if self.joined or self.left:
            out[MEMBERSHIP_CHANGE] = {"joined": self.joined, "left": self.left}
        if self.partition_counts:
            out[PARTITION_COUNT_CHANGE] = self.partition_counts
        if self.racks:
            out[RACK_CHANGE] = self.racks
        return out


def joined_and_left(old: Iterable[Member], new: Iterable[Member]) -> tuple[list[str], list[str]]:
    """(joined, left) member identities, sorted."""
    before = {m.identity for m in old}
    after = {m.identity for m in new}
    return sorted(after - before), sorted(before - after)


def partition_count_change(before: int, after: int) -> dict | None:
    """The change as trigger figures, or None when the count is the same."""
    return None if before == after else {"before": before, "after": after}


def rack_changes(old: Sequence[Sequence[str | None]],
                 new: Sequence[Sequence[str | None]]) -> list[dict]:
    """Partitions (present in both) whose set of replica racks differs; racks of
    None are ignored."""
    out = []
    for p in range(min(len(old), len(new))):
        before = {r for r in old[p] if r is not None}
        after = {r for r in new[p] if r is not None}
        if before != after:
            out.append({"partition": p, "before": sorted(before), "after": sorted(after)})
    return out

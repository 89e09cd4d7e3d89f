"""Who owns what under a group state's current assignment, as index arrays per topic: what every lag observation
sums by member (the capacity estimates, the skew reading, the retention risk)."""

from __future__ import annotations

import numpy as np

from assignors.model import Member
from streaming.lag.owners import owned_by_topic
from streaming.state.group_state import GroupState


class Owners:
    """Who owns what under the current assignment, as index arrays per topic (rebuilt when members change), and
    the members that subscribe to something in owner-index order: their ids and identities."""

    __slots__ = ("by_topic", "count", "identities", "ids")

    def __init__(self, count: int, by_topic: dict[str, tuple[np.ndarray, np.ndarray]], ids: tuple[str, ...],
                 identities: tuple[str, ...]) -> None:
        self.count = count
        self.by_topic = by_topic
        self.ids = ids
        self.identities = identities

    @classmethod
    def of(cls, state: GroupState) -> Owners:
        """Of the state's current members; built once per members' memo when they are as decoded."""
        memo = state.held_members()
        if memo is None:
            return cls._build(state.members)
        owners = memo.derived.get("owners")
        if owners is None:
            owners = memo.derived["owners"] = cls._build(state.members)
        return owners

    @classmethod
    def _build(cls, held: list[Member] | None) -> Owners:
        members = [m for m in held or [] if m.topics]
        owned = owned_by_topic(members)
        return cls(len(members), {t: (_frozen(p), _frozen(w)) for t, (p, w) in owned.items()},
                   tuple(m.member_id for m in members), tuple(m.identity for m in members))


def _frozen(values: list[int]) -> np.ndarray:
    """An int64 array nobody may write to (an Owners may be shared by states through a members memo)."""
    out = np.asarray(values, dtype=np.int64)
    out.flags.writeable = False
    return out

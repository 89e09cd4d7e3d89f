"""A group member as the collector observes it: the project's one member type plus what only a
describe tells.

:class:`ObservedMember` wraps an :class:`assignors.model.Member` (id, static id, client id, rack,
subscribed topics, and as ``owned`` the partitions the member holds now) and adds what no assignor
needs: the client host, the generation hint from its subscription, and for KIP-848 members the
member epoch and the target assignment. :meth:`ObservedMember.entry` is the member's entry in the
``members`` event.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from assignors.model import Member, TopicPartition
from streaming.contracts import events


@dataclass(frozen=True, slots=True)
class ObservedMember:
    member: Member
    host: str
    generation_hint: int | None = None
    """the least generation the group can be in, from what the member sent when it joined."""
    member_epoch: int | None = None
    """KIP-848 members only (ConsumerGroupDescribe); classic members have none."""
    target: tuple[TopicPartition, ...] | None = None
    """KIP-848 members only: the coordinator's target assignment the member reconciles towards."""

    # the member's own fields, read through (the exporter's rows and `rebalancer verify` read them
    # so)

    @property
    def member_id(self) -> str:
        return self.member.member_id

    @property
    def instance_id(self) -> str | None:
        return self.member.instance_id

    @property
    def client_id(self) -> str:
        return self.member.client_id or ""

    @property
    def rack(self) -> str | None:
        return self.member.rack

    @property
    def topics(self) -> tuple[str, ...]:
        return self.member.topics

    @property
    def assigned(self) -> tuple[TopicPartition, ...]:
        """The partitions the member holds now (the member's ``owned``)."""
        return self.member.owned

    def entry(self) -> dict[str, Any]:
        m = self.member
        entry = events.member_entry(m.member_id, m.topics, m.owned, instance_id=m.instance_id,
                                    client_id=self.client_id, host=self.host, rack=m.rack)
        # optional fields of the members event, present only for KIP-848 members
        if self.member_epoch is not None:
            entry["member_epoch"] = int(self.member_epoch)
        if self.target is not None:
            entry["target_assigned"] = [[t, int(p)] for t, p in self.target]
        return entry

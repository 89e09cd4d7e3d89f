"""What one poll read of a cluster: a :class:`ClusterSnapshot`, with a :class:`GroupInfo` for each
group read.

:class:`streaming.collector.poll.ClusterReader` makes one per poll (the order of its reads, and what
a failure leaves out, are told there); the collector loop (:mod:`.collector`), the operator's view
(:mod:`streaming.operator_view`) and the exporter (:mod:`streaming.exporter`) read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from assignors.model import TopicPartition as TP
from streaming.collector import kip848, kip932
from streaming.collector.observed import ObservedMember
from streaming.contracts import serving


@dataclass
class GroupInfo:
    group_id: str
    state: str | None
    protocol: str | None
    members: list[ObservedMember]
    group_protocol: str = kip848.CLASSIC
    """``classic``, ``consumer`` (KIP-848) or ``share`` (KIP-932)."""
    epoch: int | None = None
    """the group epoch of a KIP-848 group."""
    assignment_epoch: int | None = None
    """the epoch of a KIP-848 group's target assignment (its members converge on it)."""
    protocol_type: str = "consumer"
    """``consumer``, or ``""`` for a group that only commits offsets."""

    @property
    def share(self) -> bool:
        """A share group (KIP-932): no member owns a partition, the broker hands out records."""
        return self.group_protocol == serving.SHARE

    @property
    def serving(self) -> serving.Serving:
        """Whether its members can take a recommendation (:mod:`streaming.contracts.serving`)."""
        return serving.verdict(self.group_protocol, self.protocol_type, self.protocol)

    def subscribed_topics(self) -> set[str]:
        topics = {t for m in self.members for t in m.topics}
        return topics or {t for m in self.members for t, _ in m.member.owned}

    def generation_hint(self) -> int | None:
        hints = [m.generation_hint for m in self.members if m.generation_hint is not None]
        if self.epoch is not None and self.epoch >= 0:
            hints.append(self.epoch)
        return max(hints) if hints else None


@dataclass
class ClusterSnapshot:
    ts: int
    groups: dict[str, GroupInfo] = field(default_factory=dict)
    listed: set[str] = field(default_factory=set)
    """the selected groups ListGroups returned (those read)."""
    skipped: dict[str, serving.Serving] = field(default_factory=dict)
    """the selected groups ListGroups returned that are not read, and why (share, Connect, ...)."""
    group_list_complete: bool = True
    gone_groups: set[str] = field(default_factory=set)
    """groups the coordinator says do not exist (any more)."""
    committed: dict[str, dict[TP, int]] = field(default_factory=dict)
    """group -> committed offsets; a group absent here had its offsets lookup fail. A share group's
    are the positions its share-partitions' lag puts them at
    (:func:`streaming.collector.kip932.positions`)."""
    share_offsets: dict[str, dict[TP, kip932.ShareOffset]] = field(default_factory=dict)
    """share group -> its share-partitions as the broker reports them (start offset, leader epoch,
    lag)."""
    topics: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """topic -> partitions as describe_topics gives them (existing topics only)."""
    missing_topics: set[str] = field(default_factory=set)
    topics_read: bool = True
    """False when the topic metadata could not be read at all this poll."""
    broker_racks: dict[int, str | None] = field(default_factory=dict)
    end: dict[TP, int] = field(default_factory=dict)
    begin: dict[TP, int] = field(default_factory=dict)
    """log start offsets (the first offset retention has not deleted), read just before ``end``."""
    warnings: list[str] = field(default_factory=list)

    def group_topics(self, group: str) -> set[str]:
        """The topics whose partitions the group's lag covers: the members' subscriptions, or for a
        group without members (or none readable) the topics it committed offsets for."""
        info = self.groups[group]
        topics = info.subscribed_topics()
        if not topics:
            offsets = self.committed.get(group, {}) or self.share_offsets.get(group, {})
            topics = {t for t, _ in offsets}
        return topics

"""A share group (KIP-932) as ``kafka-share-groups --describe`` shows it: its share-partitions
(``--offsets``: leader epoch, start offset and the broker's share-partition lag, KIP-1226) and its
members (``--members --verbose``), from one live :class:`ClusterSnapshot`. Pure, as :mod:`.groups`,
whose figures count a share group's lag per topic and none per member (the broker hands records to
whichever member fetches)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from streaming.collector.cluster_snapshot import ClusterSnapshot

TP = tuple[str, int]


@dataclass(frozen=True)
class SharePartitionRow:
    """A share-partition as ``kafka-share-groups --describe --offsets`` shows it, and its log end
    offset."""

    group: str
    topic: str
    partition: int
    leader_epoch: int | None
    start_offset: int | None
    """the share-partition start offset (None: not initialised yet)."""
    lag: int | None
    """records not yet delivered to completion, as the broker counts them (KIP-1226; None: not
    reported)."""
    log_end_offset: int | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ShareMemberRow:
    """A share consumer as ``kafka-share-groups --describe --members --verbose`` shows it, and its
    rack."""

    group: str
    consumer_id: str
    host: str
    client_id: str
    rack: str | None
    member_epoch: int | None
    assignment: tuple[TP, ...]
    """the partitions the broker gives it records of (other members may be given them too)."""

    @property
    def partitions(self) -> int:
        return len(self.assignment)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"partitions": self.partitions,
                               "assignment": [list(tp) for tp in self.assignment]}


def share_partition_rows(snap: ClusterSnapshot, group: str) -> list[SharePartitionRow]:
    """The share group's share-partitions the broker reports, sorted by topic and partition."""
    return [SharePartitionRow(group, tp[0], tp[1], o.leader_epoch,
                              None if o.start_offset < 0 else o.start_offset, o.lag,
                              snap.end.get(tp))
            for tp, o in sorted(snap.share_offsets.get(group, {}).items())]


def share_member_rows(snap: ClusterSnapshot, group: str) -> list[ShareMemberRow]:
    """The share group's members, sorted by client id then member id."""
    rows = [ShareMemberRow(group, m.member_id, m.host, m.client_id, m.rack, m.member_epoch,
                           tuple(m.assigned))
            for m in snap.groups[group].members]
    return sorted(rows, key=lambda r: (r.client_id, r.consumer_id))

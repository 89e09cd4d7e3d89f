"""Reading a cluster with kafka-python's admin API: one :class:`ClusterSnapshot` per poll.

The order of the reads matters: committed offsets are read before end offsets, so for a group that
commits only what it consumed, ``end >= committed`` holds for every partition of the snapshot.

Requests per poll, whatever the number of groups: DescribeCluster; ListGroups per broker;
DescribeGroups (classic groups), ConsumerGroupDescribe (KIP-848 groups, whose type ListGroups v5+
reports; see :mod:`streaming.collector.kip848`) and OffsetFetch (v8, all groups at once) per group
coordinator; one Metadata request for
the topics; ListOffsets per partition leader twice: begin (log start, ``EARLIEST``, timestamp -2) then end
(``LATEST``) offsets. Begin before end, so ``begin <= end`` holds too; the log start offsets are what the lag
events carry for the retention rule (:mod:`streaming.lag.retention`) and where an ``earliest`` group's
never-committed partitions start. The collector never joins a group and never commits: ListOffsets through the
admin client needs no consumer at all.

Failures are contained to what they touch: a broker that does not answer ListGroups makes the group
list partial (so nothing is declared vanished); a group whose description or offsets cannot be read
is skipped for this poll; a partition leader that does not answer ListOffsets leaves its partitions
without an end offset. Each is a warning in :attr:`ClusterSnapshot.warnings`. kafka-python caches
group coordinators for the life of an admin client, so after any failure the reader starts the next
poll with a fresh client.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from assignors.model import TopicPartition as TP
from streaming.collector import kip848
from streaming.collector.member_metadata import RackResolver, member_from
from streaming.collector.observed import ObservedMember

log = logging.getLogger(__name__)

# ListGroups protocol types the collector reads: classic consumer groups, and groups that only commit
# offsets (created by the admin API or by consumers using assign(); their protocol type is empty).
CONSUMER_PROTOCOL_TYPES = frozenset({"consumer", ""})
SKIPPED_GROUP_TYPES = frozenset({"share", "streams"})


@dataclass
class GroupInfo:
    group_id: str
    state: str | None
    protocol: str | None
    members: list[ObservedMember]
    group_protocol: str = kip848.CLASSIC
    """``classic`` or ``consumer`` (KIP-848)."""
    epoch: int | None = None
    """the group epoch of a KIP-848 group."""

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
    """the selected groups ListGroups returned."""
    group_list_complete: bool = True
    gone_groups: set[str] = field(default_factory=set)
    """groups the coordinator says do not exist (any more)."""
    committed: dict[str, dict[TP, int]] = field(default_factory=dict)
    """group -> committed offsets; a group absent here had its offsets lookup fail."""
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
            topics = {t for t, _ in self.committed.get(group, {})}
        return topics


class ClusterReader:
    """Reads what the collector needs, with one admin client re-made after failures."""

    def __init__(self, admin_factory: Callable[[], Any], racks: RackResolver,
                 describe_consumer_groups: Callable[[Any, list[str]], dict[str, dict[str, Any]]] = kip848.describe
                 ) -> None:
        self._admin_factory = admin_factory
        self._describe_consumer_groups = describe_consumer_groups
        self._admin: Any = None
        self._racks = racks
        self._broker_racks: dict[int, str | None] = {}
        self._dirty = False

    # -- client lifecycle --------------------------------------------------------------------------

    def admin(self) -> Any:
        if self._admin is not None and self._dirty:
            self.close()
        if self._admin is None:
            self._admin = self._admin_factory()
            self._dirty = False
        return self._admin

    def close(self) -> None:
        if self._admin is not None:
            try:
                self._admin.close()
            except Exception:  # closing a client of a dead cluster may fail; nothing to do about it
                log.debug("closing the admin client failed", exc_info=True)
            self._admin = None

    def _warn(self, snap: ClusterSnapshot, message: str) -> None:
        self._dirty = True
        snap.warnings.append(message)
        log.warning("%s", message)

    # -- the poll ----------------------------------------------------------------------------------

    def read(self, select: Callable[[str], bool]) -> ClusterSnapshot:
        """One snapshot of the groups ``select(group_id)`` picks.

        Raises only when the cluster cannot be reached at all (DescribeCluster fails)."""
        admin = self.admin()
        snap = ClusterSnapshot(ts=int(time.time() * 1000))
        try:
            brokers = self._read_brokers(admin)
        except Exception:
            self._dirty = True
            raise
        snap.broker_racks = dict(self._broker_racks)

        listed = self._list_groups(admin, brokers, snap)
        ids = sorted(g for g in listed if select(g))
        snap.listed = set(ids)
        self._describe_groups(admin, [g for g in ids if listed[g] != kip848.CONSUMER], snap)
        self._describe_kip848_groups(admin, [g for g in ids if listed[g] == kip848.CONSUMER], snap)
        self._committed(admin, [g for g in ids if g in snap.groups], snap)

        wanted_topics: set[str] = set()
        for g in snap.groups:
            wanted_topics |= snap.group_topics(g)
        self._describe_topics(admin, sorted(wanted_topics), snap)

        all_tps = {(t, p["partition_index"]) for t, parts in snap.topics.items() for p in parts}
        snap.begin = self._offsets(admin, all_tps, snap, latest=False)
        snap.end = self._offsets(admin, all_tps, snap, latest=True)
        return snap

    def _read_brokers(self, admin: Any) -> list[int]:
        described = admin.describe_cluster()
        live = []
        for b in described.get("brokers", ()):
            self._broker_racks[int(b["broker_id"])] = b.get("rack")
            if not b.get("is_fenced"):
                live.append(int(b["broker_id"]))
        return sorted(live)

    def _list_groups(self, admin: Any, brokers: Iterable[int], snap: ClusterSnapshot) -> dict[str, str]:
        """group id -> group type (``classic``, or ``consumer`` for KIP-848; brokers before 4.0 do not
        say, and have only classic groups)."""
        groups: dict[str, str] = {}
        for broker in brokers:
            try:
                listed = admin.list_groups(broker_ids=[broker])
            except Exception as e:
                snap.group_list_complete = False
                self._warn(snap, f"broker {broker} did not list its groups ({type(e).__name__}: {e})")
                continue
            for g in listed:
                if g.get("protocol_type", "") not in CONSUMER_PROTOCOL_TYPES:
                    continue
                group_type = (g.get("group_type") or kip848.CLASSIC).lower()
                if group_type in SKIPPED_GROUP_TYPES:
                    continue
                groups[g["group_id"]] = kip848.CONSUMER if group_type == kip848.CONSUMER else kip848.CLASSIC
        return groups

    def _describe_groups(self, admin: Any, ids: list[str], snap: ClusterSnapshot) -> None:
        if not ids:
            return
        try:
            described = admin.describe_groups(ids)
        except Exception as e:
            log.debug("describe_groups of %d groups failed (%s); describing one by one", len(ids), e)
            described = {}
            for g in ids:
                try:
                    described.update(admin.describe_groups([g]))
                except Exception as e1:
                    self._warn(snap, f"group {g}: describe failed ({type(e1).__name__}: {e1}); skipped this poll")
        for g in ids:
            d = described.get(g)
            if d is None:
                continue
            error = d.get("error")
            state = d.get("group_state") or None
            if error:
                if "GroupIdNotFound" in error:
                    snap.gone_groups.add(g)
                else:
                    self._warn(snap, f"group {g}: describe returned {error}; skipped this poll")
                continue
            if state == "Dead":
                snap.gone_groups.add(g)
                continue
            if d.get("protocol_type", "consumer") not in CONSUMER_PROTOCOL_TYPES:
                continue
            members = [member_from(m, self._racks) for m in d.get("members") or ()]
            snap.groups[g] = GroupInfo(g, state, d.get("protocol_data") or None, members)

    def _describe_kip848_groups(self, admin: Any, ids: list[str], snap: ClusterSnapshot) -> None:
        if not ids:
            return
        try:
            described = self._describe_consumer_groups(admin, ids)
        except Exception as e:
            log.debug("ConsumerGroupDescribe of %d groups failed (%s); one by one", len(ids), e)
            described = {}
            for g in ids:
                try:
                    described.update(self._describe_consumer_groups(admin, [g]))
                except Exception as e1:
                    self._warn(snap, f"group {g}: ConsumerGroupDescribe failed ({type(e1).__name__}: {e1}); "
                                     "skipped this poll")
        for g in ids:
            d = described.get(g)
            if d is None:
                continue
            error = d.get("error")
            if error:
                if "GroupIdNotFound" in error:
                    snap.gone_groups.add(g)
                else:
                    self._warn(snap, f"group {g}: ConsumerGroupDescribe returned {error}; skipped this poll")
                continue
            state = kip848.classic_state(d.get("group_state"))
            if state == "Dead":
                snap.gone_groups.add(g)
                continue
            epoch = d.get("group_epoch")
            members = [kip848.member_from(m, self._racks, epoch) for m in d.get("members") or ()]
            snap.groups[g] = GroupInfo(g, state, d.get("assignor_name") or None, members, kip848.CONSUMER, epoch)

    def _committed(self, admin: Any, ids: list[str], snap: ClusterSnapshot) -> None:
        if not ids:
            return
        try:
            got = admin.list_group_offsets({g: None for g in ids})
        except Exception as e:
            log.debug("list_group_offsets of %d groups failed (%s); one by one", len(ids), e)
            got = {}
            for g in ids:
                try:
                    got.update(admin.list_group_offsets({g: None}))
                except Exception as e1:
                    self._warn(snap, f"group {g}: committed offsets unreadable ({type(e1).__name__}: {e1}); "
                                     "no lag this poll")
        for g, offsets in got.items():
            if g in snap.groups:
                snap.committed[g] = {(tp.topic, tp.partition): int(om.offset) for tp, om in offsets.items()
                                     if om is not None and om.offset is not None and om.offset >= 0}

    def _describe_topics(self, admin: Any, topics: list[str], snap: ClusterSnapshot) -> None:
        if not topics:
            return
        try:
            described = admin.describe_topics(topics)
        except Exception as e:
            snap.topics_read = False
            self._warn(snap, f"topic metadata unreadable ({type(e).__name__}: {e}); no lag this poll")
            return
        seen = set()
        for t in described:
            name = t.get("name")
            if name not in topics:
                continue
            seen.add(name)
            if t.get("error_code"):
                snap.missing_topics.add(name)
                continue
            snap.topics[name] = sorted(t.get("partitions") or (), key=lambda p: p["partition_index"])
        snap.missing_topics |= set(topics) - seen

    def _offsets(self, admin: Any, tps: set[TP], snap: ClusterSnapshot, latest: bool) -> dict[TP, int]:
        """End (``latest``) or begin offsets; partitions whose leader does not answer are left out."""
        from kafka import TopicPartition
        from kafka.admin import OffsetSpec

        spec = OffsetSpec.LATEST if latest else OffsetSpec.EARLIEST
        by_leader: dict[int, set[TP]] = defaultdict(set)
        leaderless = []
        for t, parts in snap.topics.items():
            for p in parts:
                tp = (t, p["partition_index"])
                if tp not in tps:
                    continue
                leader = p.get("leader_id")
                if leader is None or leader < 0 or p.get("error_code"):
                    leaderless.append(tp)
                else:
                    by_leader[leader].add(tp)
        if leaderless:
            self._warn(snap, f"{len(leaderless)} partition(s) without a leader, e.g. {leaderless[0]}; "
                             "left out this poll")
        asked = {tp for group in by_leader.values() for tp in group}
        batches = [asked] if asked else []
        out: dict[TP, int] = {}
        while batches:
            batch = batches.pop()
            try:
                got = admin.list_partition_offsets({TopicPartition(t, p): spec for t, p in batch})
            except Exception as e:
                if batch is asked and len(by_leader) > 1:
                    batches.extend(by_leader.values())  # retry leader by leader, so one bad leader costs only its own
                    log.debug("list_partition_offsets failed (%s); retrying per leader", e)
                    continue
                self._warn(snap, f"{'end' if latest else 'begin'} offsets of {len(batch)} partition(s) "
                                 f"unreadable ({type(e).__name__}: {e}); left out this poll")
                continue
            out.update({(tp.topic, tp.partition): int(o.offset) for tp, o in got.items()})
        return out

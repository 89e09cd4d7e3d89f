"""Reading a cluster with kafka-python's admin API: one :class:`ClusterSnapshot` per poll (the
snapshot's types are in :mod:`streaming.collector.cluster_snapshot`).

The order of the reads matters: committed offsets are read before end offsets, so for a group that
commits only what it consumed, ``end >= committed`` holds for every partition of the snapshot.

Requests per poll, whatever the number of groups: DescribeCluster; ListGroups per broker;
DescribeGroups (classic groups), ConsumerGroupDescribe (KIP-848 groups, whose type ListGroups v5+
reports; see :mod:`streaming.collector.kip848`), ShareGroupDescribe and DescribeShareGroupOffsets
(share groups, :mod:`streaming.collector.kip932`) and OffsetFetch (v8, all other groups at once) per
group coordinator; one Metadata request for the topics; ListOffsets per partition leader twice:
begin (log start, ``EARLIEST``, timestamp -2) then end (``LATEST``) offsets. Begin before end, so
``begin <= end`` holds too; the log start offsets are what the lag events carry for the retention
rule (:mod:`streaming.lag.loss_risk`) and where an ``earliest`` group's never-committed partitions
start. The collector never joins a group and never commits: ListOffsets through the admin client
needs no consumer at all.

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
from dataclasses import dataclass
from typing import Any

from assignors.model import TopicPartition as TP
from streaming.collector import kip848, kip932
from streaming.collector.cluster_snapshot import ClusterSnapshot, GroupInfo
from streaming.collector.member_metadata import RackResolver, member_from
from streaming.contracts import serving

log = logging.getLogger(__name__)

# ListGroups protocol types the collector reads: classic consumer groups, and groups that only
# commit offsets (created by the admin API or by consumers using assign(); their protocol type is
# empty). Which groups are read and which are skipped, and why, is streaming.contracts.serving's
# rule.
CONSUMER_PROTOCOL_TYPES = frozenset({"consumer", ""})

Describe = Callable[[Any, list[str]], dict[str, dict[str, Any]]]
"""(admin, group ids) -> group id -> result, ``error`` a message or None (:func:`kip848.describe`
and kin)."""


@dataclass(frozen=True)
class Listed:
    """What ListGroups says of a group: its type (``classic``, ``consumer``, ``share``,
    ``streams``; classic when a broker before 4.0 does not say) and its protocol type
    (``consumer``, ``connect``, ``""``, ...)."""

    group_type: str
    protocol_type: str


class ClusterReader:
    """Reads what the collector needs, with one admin client re-made after failures."""

    def __init__(self, admin_factory: Callable[[], Any], racks: RackResolver) -> None:
        self._admin_factory = admin_factory
        # the new group APIs kafka-python has no calls for (tests stand in for them)
        self._describe_consumer_groups: Describe = kip848.describe
        self._describe_share_groups: Describe = kip932.describe
        self._share_group_offsets: Describe = kip932.offsets
        self._admin: Any = None
        self._racks = racks
        self._broker_racks: dict[int, str | None] = {}
        self._dirty = False
        self._said_skipped: set[str] = set()

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
        ids = self._skip(sorted(g for g in listed if select(g)), listed, snap)
        snap.listed = set(ids)
        of_type = {
            t: [g for g in ids if listed[g].group_type == t]
            for t in (kip848.CONSUMER, serving.SHARE)
        }
        self._describe_groups(admin, [g for g in ids if listed[g].group_type not in of_type], snap)
        self._describe_kip848_groups(admin, of_type[kip848.CONSUMER], snap)
        self._read_share_groups(admin, of_type[serving.SHARE], snap)
        shared = [g for g in of_type[serving.SHARE] if g in snap.groups]
        self._committed(admin, [g for g in ids if g in snap.groups and g not in shared], snap)
        self._read_share_offsets(admin, shared, snap)

        wanted_topics: set[str] = set()
        for g in snap.groups:
            wanted_topics |= snap.group_topics(g)
        self._describe_topics(admin, sorted(wanted_topics), snap)

        all_tps = {(t, p["partition_index"]) for t, parts in snap.topics.items() for p in parts}
        snap.begin = self._offsets(admin, all_tps, snap, latest=False)
        snap.end = self._offsets(admin, all_tps, snap, latest=True)
        for g, offsets in snap.share_offsets.items():
            snap.committed[g] = kip932.positions(offsets, snap.end)
        return snap

    def _read_brokers(self, admin: Any) -> list[int]:
        described = admin.describe_cluster()
        live = []
        for b in described.get("brokers", ()):
            self._broker_racks[int(b["broker_id"])] = b.get("rack")
            if not b.get("is_fenced"):
                live.append(int(b["broker_id"]))
        return sorted(live)

    def _skip(self, ids: list[str], listed: dict[str, Listed], snap: ClusterSnapshot) -> list[str]:
        """The groups of ``ids`` the collector reads; the others go to ``snap.skipped``, each said
        once in the log (while it is skipped), so an operator who misses a group finds why."""
        read = []
        for g in ids:
            found = serving.verdict(listed[g].group_type, listed[g].protocol_type, None)
            if found.read:
                read.append(g)
                continue
            snap.skipped[g] = found
            if g not in self._said_skipped:
                log.info("group %s not read: %s", g, found.reason)
        self._said_skipped = set(snap.skipped)
        return read

    def _list_groups(
        self, admin: Any, brokers: Iterable[int], snap: ClusterSnapshot
    ) -> dict[str, Listed]:
        """group id -> what ListGroups says of it (brokers before 4.0 do not give a group type, and
        have only classic groups)."""
        groups: dict[str, Listed] = {}
        for broker in brokers:
            try:
                listed = admin.list_groups(broker_ids=[broker])
            except Exception as e:
                snap.group_list_complete = False
                self._warn(
                    snap, f"broker {broker} did not list its groups ({type(e).__name__}: {e})"
                )
                continue
            for g in listed:
                group_type = (g.get("group_type") or kip848.CLASSIC).lower()
                groups[g["group_id"]] = Listed(group_type, g.get("protocol_type") or "")
        return groups

    def _describe_groups(self, admin: Any, ids: list[str], snap: ClusterSnapshot) -> None:
        described = self._described(
            admin, ids, snap, lambda a, groups: a.describe_groups(groups), "DescribeGroups"
        )
        for g, d in described.items():
            if d.get("protocol_type", "consumer") not in CONSUMER_PROTOCOL_TYPES:
                continue
            protocol = d.get("protocol_data") or None
            members = [member_from(m, self._racks, protocol) for m in d.get("members") or ()]
            snap.groups[g] = GroupInfo(
                g, d.get("group_state") or None, protocol, members,
                protocol_type=d.get("protocol_type") or "",
            )

    def _described(
        self, admin: Any, ids: list[str], snap: ClusterSnapshot, describe: Describe, api: str
    ) -> dict[str, dict[str, Any]]:
        """group -> ``describe``'s result for the groups of ``ids`` it read without error: one
        call, one per group after a failure; a group the coordinator does not know (or Dead) goes
        to ``snap.gone_groups``."""
        if not ids:
            return {}
        try:
            described = describe(admin, ids)
        except Exception as e:
            log.debug("%s of %d groups failed (%s); one by one", api, len(ids), e)
            described = {}
            for g in ids:
                try:
                    described.update(describe(admin, [g]))
                except Exception as e1:
                    self._warn(
                        snap,
                        f"group {g}: {api} failed ({type(e1).__name__}: {e1}); skipped this poll",
                    )
        out = {}
        for g in ids:
            d = described.get(g)
            if d is None:
                continue
            error = d.get("error")
            if error and "GroupIdNotFound" in error:
                snap.gone_groups.add(g)
            elif error:
                self._warn(snap, f"group {g}: {api} returned {error}; skipped this poll")
            elif kip848.classic_state(d.get("group_state")) == "Dead":
                snap.gone_groups.add(g)
            else:
                out[g] = d
        return out

    def _describe_kip848_groups(self, admin: Any, ids: list[str], snap: ClusterSnapshot) -> None:
        matching = kip848.regex_matcher(
            lambda: admin.list_topics(), lambda message: self._warn(snap, message)
        )
        described = self._described(
            admin, ids, snap, self._describe_consumer_groups, "ConsumerGroupDescribe"
        )
        for g, d in described.items():
            epoch = d.get("group_epoch")
            members = [
                kip848.member_from(m, self._racks, epoch, matching) for m in d.get("members") or ()
            ]
            snap.groups[g] = GroupInfo(
                g, kip848.classic_state(d.get("group_state")), d.get("assignor_name") or None,
                members, kip848.CONSUMER, epoch,
                assignment_epoch=d.get("assignment_epoch"),
            )

    def _read_share_groups(self, admin: Any, ids: list[str], snap: ClusterSnapshot) -> None:
        described = self._described(
            admin, ids, snap, self._describe_share_groups, "ShareGroupDescribe"
        )
        for g, d in described.items():
            epoch = d.get("group_epoch")
            members = [kip932.member_from(m, self._racks, epoch) for m in d.get("members") or ()]
            snap.groups[g] = GroupInfo(
                g, kip848.classic_state(d.get("group_state")), d.get("assignor_name") or None,
                members, serving.SHARE, epoch, protocol_type=serving.SHARE,
            )

    def _read_share_offsets(self, admin: Any, ids: list[str], snap: ClusterSnapshot) -> None:
        """Each share group's share-partitions (its lag comes from them once the end offsets are
        read)."""
        described = self._described(
            admin, ids, snap, self._share_group_offsets, "DescribeShareGroupOffsets"
        )
        for g, d in described.items():
            snap.share_offsets[g], failed = kip932.share_offsets(d)
            if failed:
                self._warn(
                    snap,
                    f"group {g}: {len(failed)} share-partition(s) unreadable, e.g. {failed[0]}; "
                    "no lag for them this poll",
                )

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
                    self._warn(
                        snap,
                        f"group {g}: committed offsets unreadable ({type(e1).__name__}: {e1}); "
                        "no lag this poll",
                    )
        for g, offsets in got.items():
            if g in snap.groups:
                snap.committed[g] = {
                    (tp.topic, tp.partition): int(om.offset)
                    for tp, om in offsets.items()
                    if om is not None and om.offset is not None and om.offset >= 0
                }

    def _describe_topics(self, admin: Any, topics: list[str], snap: ClusterSnapshot) -> None:
        if not topics:
            return
        try:
            described = admin.describe_topics(topics)
        except Exception as e:
            snap.topics_read = False
            self._warn(
                snap, f"topic metadata unreadable ({type(e).__name__}: {e}); no lag this poll"
            )
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
            partitions = t.get("partitions") or ()
            snap.topics[name] = sorted(partitions, key=lambda p: p["partition_index"])
        snap.missing_topics |= set(topics) - seen

    def _offsets(
        self, admin: Any, tps: set[TP], snap: ClusterSnapshot, latest: bool
    ) -> dict[TP, int]:
        """End (``latest``) or begin offsets; partitions whose leader does not answer are left
        out."""
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
            self._warn(
                snap,
                f"{len(leaderless)} partition(s) without a leader, e.g. {leaderless[0]}; "
                "left out this poll",
            )
        asked = {tp for group in by_leader.values() for tp in group}
        batches = [asked] if asked else []
        out: dict[TP, int] = {}
        while batches:
            batch = batches.pop()
            try:
                got = admin.list_partition_offsets({TopicPartition(t, p): spec for t, p in batch})
            except Exception as e:
                if batch is asked and len(by_leader) > 1:
                    # retry leader by leader, so one bad leader costs only its own
                    batches.extend(by_leader.values())
                    log.debug("list_partition_offsets failed (%s); retrying per leader", e)
                    continue
                self._warn(
                    snap,
                    f"{'end' if latest else 'begin'} offsets of {len(batch)} partition(s) "
                    f"unreadable ({type(e).__name__}: {e}); left out this poll",
                )
                continue
            out.update({(tp.topic, tp.partition): int(o.offset) for tp, o in got.items()})
        return out

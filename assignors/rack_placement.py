"""Whether rack-aware placement can save any cross-rack read in a group, or none at all.

A consumer reads a partition from its leader, or, with follower fetching (KIP-392: brokers with
``replica.selector.class`` set to ``RackAwareReplicaSelector``, consumers with ``client.rack``),
from a replica on its own rack when the partition has one there. The verdict, from each subscribed
partition's replica racks, the members' racks and whether follower fetching is on (``None``: not
known):

- ``no-racks``: no member has a rack, or no partition has a replica with a rack: nothing to place
  by;
- ``saves-nothing``: follower fetching is on and every partition has a replica on every member's
  rack: whichever member gets a partition reads it on its own rack, so rack-aware placement saves
  nothing and balance can decide alone;
- ``decides``: some partition has no replica on some member's rack (replication factor 1 over 3
  racks, say): which member gets it decides whether its reads cross racks; or follower fetching is
  off, so every read goes to the leader and placement decides whether the reader shares the leader's
  rack;
- ``unknown``: every partition has a replica on every member's rack, and whether follower fetching
  is on is not known (the job does not read broker configs; ``describe`` does).

``decided`` counts the partitions whose placement matters (all of them with follower fetching off).
A member without a rack reads across racks or not by chance, wherever its partitions are: it is left
out; so is a replica without a rack.

Worked example: members on racks a, b, c. Three replicas of every partition, one per rack, follower
fetching on: ``saves-nothing``. The same with follower fetching unknown: ``unknown``; off:
``decides`` (every partition). One replica per partition, partition p on rack ``"abc"[p % 3]``:
``decides``, every partition (each is on one rack, and two of the three members would read it across
racks).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from assignors.model import GroupSnapshot

NO_RACKS, SAVES_NOTHING, DECIDES, UNKNOWN = "no-racks", "saves-nothing", "decides", "unknown"
VERDICTS = (NO_RACKS, SAVES_NOTHING, DECIDES, UNKNOWN)
SELECTOR_CONFIG = "replica.selector.class"
RACK_AWARE_SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"


def follower_fetching(selectors: Iterable[str | None]) -> bool | None:
    """Whether follower fetching is on, from each broker's ``replica.selector.class`` (None: unset,
    the leader serves every fetch): on when every broker has the rack-aware selector, off when none
    has any selector, else (a mix, another selector, no broker read) unknown."""
    values = list(selectors)
    if values and all(v == RACK_AWARE_SELECTOR for v in values):
        return True
    if values and all(not v for v in values):
        return False
    return None


@dataclass(frozen=True)
class RackPlacement:
    verdict: str
    """one of :data:`VERDICTS`."""
    decided: int
    """partitions whose placement decides whether their reads cross racks."""
    partitions: int
    member_racks: tuple[str, ...]
    follower_fetching: bool | None

    def sentence(self) -> str:
        """The verdict as ``describe`` prints it."""
        racks = f"{len(self.member_racks)} member rack{'s' if len(self.member_racks) != 1 else ''}"
        ff = {True: "on", False: "off", None: "unknown"}[self.follower_fetching]
        if self.verdict == NO_RACKS:
            return "no racks to place by: rack placement saves nothing"
        if self.verdict == SAVES_NOTHING:
            return (
                f"every partition has a replica on each of the {racks} and follower fetching is "
                "on: rack placement saves nothing"
            )
        if self.verdict == UNKNOWN:
            return (
                f"every partition has a replica on each of the {racks}; follower fetching "
                "unknown: rack placement saves nothing if it is on, decides reads from the leader "
                "if it is off"
            )
        if self.follower_fetching is False:
            return (
                f"follower fetching is off: placement decides whether reads cross racks ({racks})"
            )
        return (
            f"{self.decided} of {self.partitions} partitions lack a replica on some of the "
            f"{racks} (follower fetching {ff}): placement decides cross-rack reads"
        )


def placement(replica_racks: Iterable[Iterable[str | None]], member_racks: Iterable[str | None],
              follower_fetching: bool | None) -> RackPlacement:
    """The verdict for partitions with these replica racks (one iterable per partition) and these
    members."""
    members = tuple(sorted({r for r in member_racks if r}))
    per_partition = [frozenset(r for r in racks if r) for racks in replica_racks]
    n = len(per_partition)
    if not members or not any(per_partition):
        return RackPlacement(NO_RACKS, 0, n, members, follower_fetching)
    wanted = frozenset(members)
    lacking = sum(1 for racks in per_partition if racks and not wanted <= racks)
    if follower_fetching is False:
        return RackPlacement(DECIDES, sum(1 for racks in per_partition if racks), n, members, False)
    if lacking:
        return RackPlacement(DECIDES, lacking, n, members, follower_fetching)
    verdict = SAVES_NOTHING if follower_fetching else UNKNOWN
    return RackPlacement(verdict, 0, n, members, follower_fetching)


def of_snapshot(snapshot: GroupSnapshot, follower_fetching: bool | None) -> RackPlacement:
    """:func:`placement` over the snapshot's subscribed partitions and its members."""
    return placement((snapshot.racks_of(tp) for tp in snapshot.subscribed_partitions()),
                     (m.rack for m in snapshot.members), follower_fetching)

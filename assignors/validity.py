"""Whether an assignment is one Kafka would accept for a snapshot: every subscribed partition
assigned once, to a member that subscribes to its topic (the check every assignor's result passes,
apart from its figures in :mod:`assignors.metrics`)."""

from __future__ import annotations

from assignors.errors import InvalidAssignment
from assignors.model import Assignment, GroupSnapshot


def validate_assignment(snapshot: GroupSnapshot, assignment: Assignment,
                        allow_unassigned: bool = False) -> None:
    """Raise :class:`InvalidAssignment` unless every subscribed partition is assigned exactly once,
    to a member of the snapshot that subscribes to its topic.

    ``allow_unassigned`` accepts partitions assigned to nobody: a cooperative first round withholds
    the partitions that change owner.
    """
    subs = {m.member_id: set(m.topics) for m in snapshot.members}
    seen: dict[str, bytearray] = {}
    for member, tps in assignment.items():
        topics = subs.get(member)
        if topics is None:
            if tps:
                raise InvalidAssignment(f"assignment names {member!r}, which is not a member of "
                                        "the group")
            continue
        for tp in tps:
            t, p = tp
            n = snapshot.topics.get(t)
            if n is None or not isinstance(p, int) or not 0 <= p < n:
                raise InvalidAssignment(f"{t}-{p} assigned to {member!r} is not a partition of the "
                                        "metadata")
            if t not in topics:
                raise InvalidAssignment(f"{t}-{p} assigned to {member!r}, which does not subscribe "
                                        f"to {t!r}")
            row = seen.get(t)
            if row is None:
                row = seen[t] = bytearray(n)
            if row[p]:
                raise InvalidAssignment(f"{t}-{p} is assigned more than once")
            row[p] = 1
    if allow_unassigned:
        return
    wanted = set().union(*subs.values()) if subs else set()
    for t, n in snapshot.topics.items():
        if t not in wanted or n == 0:
            continue
        row = seen.get(t)
        if row is None or row.count(0):
            p = 0 if row is None else row.index(0)
            raise InvalidAssignment(f"{t}-{p} is subscribed but not assigned")

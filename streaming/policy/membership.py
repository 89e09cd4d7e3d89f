"""Membership change: members joined or left the group.

Member ids change on every rejoin, so members are matched by a stable identity: ``group.instance.id``
when set, else client id and host, else the member id. A new generation with the same identities (a
rebalance that only moved partitions, e.g. onto a recommendation) is not a membership change.

Example: generation 7 has C0 and C1; generation 8 has C0, C1 and C2: C2 joined, a recommendation for
the three-member shape follows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def identity(member: Mapping[str, Any]) -> str:
    if member.get("instance_id"):
        return f"instance:{member['instance_id']}"
    if member.get("client_id"):
        return f"client:{member['client_id']}@{member.get('host') or ''}"
    return f"member:{member['member_id']}"


def diff(old: Iterable[Mapping[str, Any]], new: Iterable[Mapping[str, Any]]) -> tuple[list[str], list[str]]:
    """(joined, left) identities, sorted."""
    before = {identity(m) for m in old}
    after = {identity(m) for m in new}
    return sorted(after - before), sorted(before - after)

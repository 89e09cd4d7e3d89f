"""What a recommendation changes, member by member: the review of a proposal
(``rebalancer recommendations --diff``). Pure: one recommendations row in, plain values out.

Per member, its entry of the row's ``assignment`` (what it gets) is joined by member id with its
entry of ``member_figures`` (what it owned, and its figures before and after:
:mod:`streaming.policy.member_figures`):

- ``gains``: partitions it gets and did not own; ``loses``: partitions it owned and does not get;
  ``keeps``: how many it owned and keeps;
- ``load``, ``rate``, ``catch_up_s``, ``cross_rack``: (before, after); ``capacity``: the records/s
  both times to catch up divide its lag by.

A partition *moves* when one member loses it and another gains it; one gained that nobody owned is
*new* (a partition added since the group's last rebalance). Every partition lost is gained by
another member (the recommendation covers every subscribed partition), so the moves are the row's
``partitions_moved``; the max of the members' loads and times and the sum of their cross-rack
partitions are the row's figures.

Example: C0 owned t-0 and t-1, C1 owned t-2 and t-3, t-4 is new; the recommendation gives C0 t-0, C1
t-1, t-2, t-3, t-4. C0 loses t-1 (keeps 1), C1 gains t-1 and t-4 (keeps 2): one partition moves, one
is new.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from streaming.errors import UsageError

TP = tuple[str, int]


class NoFigures(UsageError):
    """The row has no ``member_figures`` (made before they were recorded)."""


@dataclass(frozen=True)
class MemberDiff:
    member_id: str
    label: str
    """static id, else client id, else member id (as the apply helpers name members)"""
    rack: str | None
    gains: tuple[TP, ...]
    loses: tuple[TP, ...]
    keeps: int
    load: tuple[int | None, int | None]
    rate: tuple[float | None, float | None]
    capacity: float | None
    catch_up_s: tuple[float | None, float | None]
    """None: unbounded or unknown"""
    cross_rack: tuple[int | None, int | None]


@dataclass(frozen=True)
class Diff:
    group: str
    version: int
    members: tuple[MemberDiff, ...]
    moved: int
    """partitions that change owner"""
    new: int
    """partitions nobody owned before"""

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for m in out["members"]:
            m["gains"] = [f"{t}-{p}" for t, p in m["gains"]]
            m["loses"] = [f"{t}-{p}" for t, p in m["loses"]]
        return out


def _tps(parts: Sequence[Any] | None) -> set[TP]:
    """Partitions as the table gives them (``{topic, partition}`` structs) or the feed
    (``[topic, partition]``)."""
    return {(p["topic"], int(p["partition"])) if isinstance(p, Mapping) else (str(p[0]), int(p[1]))
            for p in parts or ()}


def of_row(row: Mapping[str, Any]) -> Diff:
    """The diff of one recommendations row; :class:`NoFigures` for a row without
    ``member_figures``."""
    figures = {e["member_id"]: e for e in row.get("member_figures") or ()}
    if not figures:
        raise NoFigures(f"recommendation v{row['version']} of group {row['group']} was made "
                        "before per-member figures were recorded (no member_figures): only its "
                        "assignment is known")
    entries = {e["member_id"]: e for e in row.get("assignment") or ()}
    owned_by = {tp: mid for mid, f in figures.items() for tp in _tps(f.get("owned"))}
    members, moved, new = [], 0, 0
    for mid in sorted(set(figures) | set(entries)):
        entry, fig = entries.get(mid) or {}, figures.get(mid) or {}
        wanted, owned = _tps(entry.get("partitions")), _tps(fig.get("owned"))
        gains = sorted(wanted - owned)
        moved += sum(1 for tp in gains if tp in owned_by)
        new += sum(1 for tp in gains if tp not in owned_by)
        members.append(MemberDiff(
            mid, entry.get("instance_id") or entry.get("client_id") or mid, entry.get("rack"),
            tuple(gains), tuple(sorted(owned - wanted)), len(owned & wanted), _pair(fig, "load"),
            _pair(fig, "rate"), fig.get("capacity"),
            (fig.get("catch_up_before_s"), fig.get("catch_up_after_s")), _pair(fig, "cross_rack")))
    members.sort(key=lambda m: (m.label, m.member_id))
    return Diff(row["group"], int(row["version"]), tuple(members), moved, new)


def _pair(fig: Mapping[str, Any], name: str) -> tuple[Any, Any]:
    return fig.get(f"{name}_before"), fig.get(f"{name}_after")

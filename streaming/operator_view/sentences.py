"""What ``rebalancer describe`` says of a group in sentences, from the rows and figures of
:mod:`streaming.operator_view.groups`: its data-loss risk, its hot partitions, the consumers it
needs, and the slow members its latest recommendation names."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from streaming.contracts.recommendation import LAG_SKEW, SLOW_MEMBERS
from streaming.lag import hot
from streaming.operator_view.groups import Consumers, PartitionRow


def retention_says(rows: Sequence[PartitionRow]) -> list[str]:
    """What describe says of the group's data-loss risk: each partition that lost records ("already
    lost"), and the soonest one losing records at current rates; nothing when no log start was
    read."""
    out = [f"{r.topic}-{r.partition}: already lost: {r.lost_records} records "
           f"(log start {r.log_start_offset}, committed {r.current_offset}"
           f"{', member ' + r.consumer_id if r.consumer_id else ''})"
           for r in rows if r.lost_records]
    pending = [r for r in rows if not r.lost_records and r.loss_seconds is not None]
    if pending:
        r = min(pending, key=lambda x: x.loss_seconds or 0.0)
        out.append(f"{r.topic}-{r.partition}: loses records in {r.loss_seconds:.0f} s at current "
                   f"rates (headroom {r.retention_headroom} records above log start "
                   f"{r.log_start_offset})")
    return out


def hot_says(found: Sequence[hot.HotPartition]) -> list[str]:
    """What describe says of the hot partitions (with the note that no assignment splits one)."""
    if not found:
        return []
    named = ", ".join(f"{h.topic}-{h.partition} ({h.records_per_s:.1f}/s, "
                      f"{100 * h.share:.0f}% of {h.topic}, median {h.topic_median_per_s:.1f}/s)"
                      for h in found)
    return [f"hot: {named}: {hot.NOTE}"]


def consumers_says(c: Consumers) -> str:
    """What ``describe --members`` says of the consumers the group needs."""
    if not c.known:
        return (f"{c.consumers} to run (as now: capacity or rates not known yet); "
                f"at most {c.most} get work")
    if c.fewest is None:
        return (f"{c.consumers} to run: one partition alone exceeds a consumer of "
                f"{c.capacity_records_per_s:.1f}/s with {100 * c.headroom:.0f}% headroom, so no "
                f"count keeps up with it (see hot partitions); at most {c.most} get work")
    return (f"{c.consumers} to run: the fewest that keep each under "
            f"{c.capacity_records_per_s:.1f}/s with {100 * c.headroom:.0f}% headroom; "
            f"at most {c.most} get work")


def slow_members(rec: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The members a recommendations row names over their capacity (``slow_members`` of its
    ``lag_skew`` trigger details, :mod:`streaming.policy.slow_members`)."""
    details = (rec or {}).get("trigger_details")
    if isinstance(details, str):
        details = json.loads(details or "{}")
    return list(((details or {}).get(LAG_SKEW) or {}).get(SLOW_MEMBERS) or ())


def slow_says(rec: Mapping[str, Any] | None) -> list[str]:
    """What describe says of each member the latest recommendation names slow."""
    out = []
    for m in slow_members(rec):
        peers = m.get("peers_records_per_s")
        against = f"its peers {peers:.1f}/s" if peers else "no peer measured"
        out.append(f"{m['member_id']}{' (' + m['client_id'] + ')' if m.get('client_id') else ''} "
                   f"read {m['records_per_s']:.1f}/s, {against}: over its capacity when "
                   f"recommendation v{rec['version'] if rec else '?'} gave it less to read")
    return out

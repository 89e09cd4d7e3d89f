"""What ``rebalancer describe`` says of a group in sentences, from the rows and figures of
:mod:`streaming.operator_view.groups`: its data-loss risk, its hot partitions and the consumers it
needs."""

from __future__ import annotations

from collections.abc import Sequence

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

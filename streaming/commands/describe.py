"""``rebalancer describe``: consumer groups as ``kafka-consumer-groups --describe`` shows them, with racks.

One live read with the collector's code (:mod:`streaming.commands.live`): per partition the tool's columns
(GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID), then the owner's RACK,
the partition's REPLICA-RACKS, CROSS-RACK (``yes`` when the owner's rack holds no replica) and
LAG-SECONDS, the age of the oldest unconsumed record (now minus the timestamp of the record at the committed
offset, read once per lagging partition within ``--lag-seconds-timeout``; ``-`` when not read), and
RECOMMENDED-OWNER, the member id the group's latest recommendation gives the partition to. ``--members``
gives one line per member instead (its LAG-SECONDS: the max over its partitions; CAPACITY, the records/s the
latest recommendation took it at, and CONFIDENCE-S, the seconds of backlog that rests on, 0 for the
group's median). Under each group's header, whether rack-aware placement saves anything there
(:mod:`assignors.racks`, with follower fetching read from the brokers' ``replica.selector.class``).

Data-loss risk (:mod:`streaming.lag.retention`): LOG-START-OFFSET, HEADROOM (committed - log start, the records
retention may still delete before the group loses any) and LOST (records deleted before the group read them,
"already lost"), per member too. With ``--rate-window S`` the cluster is read twice, S seconds apart, for rates:
then LOSS-IN-S (seconds until the committed offset falls below the log start at current rates) and the group's
hot partitions (:mod:`streaming.lag.hot`) too; a line under the header says what is at risk. ``--members`` then
also says how many consumers the group needs (:mod:`streaming.lag.sizing`, at the capacities of its latest
recommendation and ``policy.capacity_headroom``).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from streaming.commands._common import add_config_args, load_config

if TYPE_CHECKING:
    from streaming.collector.poll import ClusterSnapshot
    from streaming.config import Config
    from streaming.exporter import view

PARTITION_COLUMNS = ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID",
                     "HOST", "CLIENT-ID", "RACK", "REPLICA-RACKS", "CROSS-RACK", "LAG-SECONDS", "RECOMMENDED-OWNER",
                     "LOG-START-OFFSET", "HEADROOM", "LOST", "LOSS-IN-S")
MEMBER_COLUMNS = ("GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "LAG",
                  "LAG-SECONDS", "RACK", "CROSS-RACK", "CAPACITY", "CONFIDENCE-S", "LOST", "LOSS-IN-S")


def register(sub: argparse._SubParsersAction) -> None:
    from streaming.commands.live import add_read_args

    p = sub.add_parser("describe", help="consumer groups as kafka-consumer-groups --describe shows them, with racks",
                       description=__doc__.split("\n\n")[1].replace("\n", " "))
    add_config_args(p)
    add_read_args(p)
    which = p.add_mutually_exclusive_group()
    which.add_argument("--group", help="this consumer group only")
    which.add_argument("--groups", metavar="REGEX", help="the groups whose id matches (re.search); default every "
                                                         "group but the rebalancer's own")
    p.add_argument("--members", action="store_true", help="one line per member")
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.add_argument("--lag-seconds-timeout", type=float, default=5.0, metavar="S",
                   help="time to read the record at each lagging partition's committed offset, for LAG-SECONDS "
                        "(default 5; 0: do not read, LAG-SECONDS shows -)")
    p.add_argument("--rate-window", type=float, default=0.0, metavar="S",
                   help="read the cluster twice, S seconds apart, for rates: seconds until records are lost to "
                        "retention (LOSS-IN-S) and hot partitions (default 0: one read, neither shown)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from streaming.commands import live
    from streaming.errors import UsageError
    from streaming.exporter import view

    cfg = live.live_config(load_config(args), args.bootstrap)
    snap, lives, produce = live.read_with_rates(cfg, args, args.rate_window, group=args.group, groups=args.groups)
    if args.group and args.group not in snap.groups:
        raise UsageError(f"consumer group {args.group} does not exist" +
                         (f" ({'; '.join(snap.warnings)})" if snap.warnings else ""))
    recs = live.latest_recommendations(cfg, args.group)
    seconds = lag_seconds(cfg, snap, args.lag_seconds_timeout)
    follower_fetching = live.follower_fetching(cfg, snap.broker_racks) if snap.groups else None
    out = []
    for g in sorted(snap.groups):
        info, rec = snap.groups[g], recs.get(g)
        loss = lives[g].loss_s if g in lives else None
        rows = view.partition_rows(snap, g, view.recommended_owners(rec), seconds.get(g), loss)
        members = view.member_rows(snap, g, rows, view.recommended_capacity(rec))
        hot = view.hot_partitions(snap, g, produce)
        capacities = {m: rate for m, (rate, _) in view.recommended_capacity(rec).items()
                      if not m.startswith("client:")} or None  # one entry a member (not its client-id alias)
        needed = view.consumers(snap, g, rows, capacities, produce, cfg.policy.capacity_headroom)
        out.append({"group": g, "state": info.state, "group_protocol": info.group_protocol,
                    "assignor": info.protocol, "recommendation_version": rec["version"] if rec else None,
                    "rack_placement": rack_placement(rows, members, follower_fetching),
                    "retention": view.retention_says(rows), "hot_partitions": [h.as_dict() for h in hot],
                    "says": view.hot_says(hot), "consumers": needed.as_dict(),
                    "consumers_says": view.consumers_says(needed),
                    "partitions": [r.as_dict() for r in rows], "members": [m.as_dict() for m in members]})
    if args.format == "json":
        print(json.dumps({"groups": out, "warnings": snap.warnings}, indent=2))
    else:
        print(render(out, args.members) if out else "no consumer groups")
    return 0


def lag_seconds(cfg: Config, snap: ClusterSnapshot, timeout_s: float) -> dict[str, dict[tuple[str, int], float]]:
    """group -> partition -> age (s) of the record at its committed offset, for the lagging partitions read."""
    from streaming.commands import live
    from streaming.lag.rules import MIN_AGE_S

    lagging = {(g, tp): c for g in snap.groups for tp, c in snap.committed.get(g, {}).items()
               if tp in snap.end and snap.end[tp] > c}
    times = live.record_times(cfg, ((tp, c) for (_, tp), c in lagging.items()), timeout_s)
    now_ms = time.time() * 1000
    out: dict[str, dict[tuple[str, int], float]] = {}
    for (g, tp), c in lagging.items():
        if (tp, c) in times:
            # at least a millisecond: a producer's clock ahead of this one must not read as no lag
            out.setdefault(g, {})[tp] = round(max((now_ms - times[(tp, c)]) / 1000.0, MIN_AGE_S), 3)
    return out


def rack_placement(rows: Sequence[view.PartitionRow], members: Sequence[view.MemberRow],
                   follower_fetching: bool | None) -> dict[str, object]:
    """The group's :class:`assignors.racks.RackPlacement` as describe shows it."""
    from assignors import racks

    found = racks.placement((r.replica_racks for r in rows), (m.rack for m in members), follower_fetching)
    return {"verdict": found.verdict, "decided": found.decided, "partitions": found.partitions,
            "follower_fetching": follower_fetching, "says": found.sentence()}


def _cell(v: object) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.1f}" if v >= 0.1 or v == 0 else f"{v:.3f}"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (list, tuple)):
        return ",".join("-" if r is None else str(r) for r in v) or "-"
    return str(v)


def table(head: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    cells = [list(head)] + [[_cell(v) for v in r] for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(head))]
    return [" ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in cells]


def render(groups: list[dict], members: bool) -> str:
    """kafka-consumer-groups' layout: a header per group, padded columns, ``-`` for an unknown value."""
    blocks = []
    for g in groups:
        title = (f"Consumer group '{g['group']}' ({g['state'] or 'unknown'}, {g['group_protocol']}"
                 f"{', ' + g['assignor'] if g['assignor'] else ''}"
                 f"{', recommendation v' + str(g['recommendation_version']) if g['recommendation_version'] else ''})")
        if members:
            rows = [[m["group"], m["consumer_id"], m["instance_id"], m["host"], m["client_id"], m["partitions"],
                     m["lag"], m["lag_seconds"], m["rack"], m["cross_rack"], m["capacity"], m["capacity_confidence_s"],
                     m.get("lost_records"), m.get("loss_seconds")] for m in g["members"]]
            lines = table(MEMBER_COLUMNS, rows) if rows else ["(no active members)"]
            if g.get("consumers_says"):
                lines.append(f"Consumers: {g['consumers_says']}")
        else:
            rows = [[p["group"], p["topic"], p["partition"], p["current_offset"], p["log_end_offset"], p["lag"],
                     p["consumer_id"], p["host"], p["client_id"], p["rack"], p["replica_racks"], p["cross_rack"],
                     p["lag_seconds"], p["recommended_owner"], p.get("log_start_offset"), p.get("retention_headroom"),
                     p.get("lost_records"), p.get("loss_seconds")] for p in g["partitions"]]
            lines = table(PARTITION_COLUMNS, rows) if rows else ["(no partitions owned or committed)"]
        placement = g.get("rack_placement")
        head = [title, f"Rack placement: {placement['says']}"] if placement else [title]
        head += [f"Retention: {line}" for line in g.get("retention") or ()]
        head += [f"Partitions: {line}" for line in g.get("says") or ()]
        blocks.append("\n".join([*head, *lines]))
    return "\n\n".join(blocks)

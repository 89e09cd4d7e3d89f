"""``rebalancer describe``: consumer groups as ``kafka-consumer-groups --describe`` shows them, with
racks.

One live read with the collector's code (:mod:`streaming.commands.live_read`): per partition the
tool's columns (GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID),
then the owner's RACK, the partition's REPLICA-RACKS, CROSS-RACK (``yes`` when the owner's rack
holds no replica) and LAG-SECONDS, the age of the oldest unconsumed record (now minus the timestamp
of the record at the committed offset, read once per lagging partition within
``--lag-seconds-timeout``; ``-`` when not read), and RECOMMENDED-OWNER, the member id the group's
latest recommendation gives the partition to. ``--members`` gives one line per member instead (its
LAG-SECONDS: the max over its partitions; CAPACITY, the records/s the latest recommendation took it
at, and CONFIDENCE-S, the seconds of backlog that rests on, 0 if never measured). Under each
group's header, whether rack-aware placement saves anything there (:mod:`assignors.rack_placement`,
with follower fetching read from the brokers' ``replica.selector.class``), and whether its members
can take a recommendation, and why not (:mod:`streaming.contracts.serving`). A share group (KIP-932)
is shown as ``kafka-share-groups --describe`` shows it: per share-partition GROUP TOPIC PARTITION
LEADER-EPOCH START-OFFSET LAG (the broker's share-partition lag, KIP-1226), then LOG-END-OFFSET;
with ``--members`` GROUP CONSUMER-ID HOST CLIENT-ID #PARTITIONS MEMBER-EPOCH ASSIGNMENT, then RACK.
Groups the collector does not read (Kafka Connect workers, ...) are listed last with the reason.

A consumer-protocol group (KIP-848) also shows, as KIP-1099 has
``kafka-consumer-groups --describe --verbose`` show them, its group epoch and target assignment
epoch in the header, and with ``--members`` each member's CURRENT-EPOCH, the TARGET-EPOCH and
CONVERGING: ``yes`` while the member is still on its way to the target assignment
(:func:`streaming.collector.kip848.converging`); the header counts those members.

Data-loss risk (:mod:`streaming.lag.loss_risk`): LOG-START-OFFSET, HEADROOM (committed - log start,
the records retention may still delete before the group loses any) and LOST (records deleted before
the group read them, "already lost"), per member too. With ``--rate-window S`` the cluster is read
twice, S seconds apart, for rates: then LOSS-IN-S (seconds until the committed offset falls below
the log start at current rates) and the group's hot partitions (:mod:`streaming.lag.hot`) too; a
line under the header says what is at risk. ``--members`` then also says how many consumers the
group needs (:mod:`streaming.lag.sizing`, at the capacities of its latest recommendation and
``policy.capacity_headroom``).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from streaming.commands._common import add_config_args, load_config
from streaming.contracts.serving import SHARE

if TYPE_CHECKING:
    from streaming.collector.cluster_snapshot import ClusterSnapshot
    from streaming.config import Config
    from streaming.operator_view import groups as view

PARTITION_COLUMNS = ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                     "CONSUMER-ID", "HOST", "CLIENT-ID", "RACK", "REPLICA-RACKS", "CROSS-RACK",
                     "LAG-SECONDS", "RECOMMENDED-OWNER", "LOG-START-OFFSET", "HEADROOM", "LOST",
                     "LOSS-IN-S")
MEMBER_COLUMNS = ("GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS",
                  "LAG", "LAG-SECONDS", "RACK", "CROSS-RACK", "CAPACITY", "CONFIDENCE-S", "LOST",
                  "LOSS-IN-S")
SHARE_PARTITION_COLUMNS = ("GROUP", "TOPIC", "PARTITION", "LEADER-EPOCH", "START-OFFSET", "LAG",
                           "LOG-END-OFFSET")
SHARE_MEMBER_COLUMNS = ("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "MEMBER-EPOCH",
                        "ASSIGNMENT", "RACK")
EPOCH_COLUMNS = ("CURRENT-EPOCH", "TARGET-EPOCH", "CONVERGING")
"""Members of a consumer-protocol group (KIP-848) only."""


def register(sub: argparse._SubParsersAction) -> None:
    from streaming.commands.live_read import add_read_args
    from streaming.commands.recommendations import add_table_arg

    p = sub.add_parser("describe",
                       help="consumer groups as kafka-consumer-groups --describe shows them, with "
                            "racks",
                       description=__doc__.split("\n\n")[1].replace("\n", " "))
    add_config_args(p)
    add_read_args(p)
    which = p.add_mutually_exclusive_group()
    which.add_argument("--group", help="this consumer group only")
    which.add_argument("--groups", metavar="REGEX",
                       help="the groups whose id matches (re.search); default every group but the "
                            "rebalancer's own")
    p.add_argument("--members", action="store_true", help="one line per member")
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.add_argument("--lag-seconds-timeout", type=float, default=5.0, metavar="S",
                   help="time to read the record at each lagging partition's committed offset, for "
                        "LAG-SECONDS (default 5; 0: do not read, LAG-SECONDS shows -)")
    p.add_argument("--rate-window", type=float, default=0.0, metavar="S",
                   help="read the cluster twice, S seconds apart, for rates: seconds until records "
                        "are lost to retention (LOSS-IN-S) and hot partitions (default 0: one "
                        "read, neither shown)")
    add_table_arg(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from streaming.commands import live_read
    from streaming.errors import UsageError

    cfg = live_read.live_config(load_config(args), args.bootstrap)
    snap, lives, produce = live_read.read_with_rates(cfg, args, args.rate_window, group=args.group,
                                                     groups=args.groups)
    if args.group and args.group not in snap.groups and args.group not in snap.skipped:
        raise UsageError(f"consumer group {args.group} does not exist" +
                         (f" ({'; '.join(snap.warnings)})" if snap.warnings else ""))
    recs = live_read.latest_recommendations(cfg, args.group, args.table)
    seconds = lag_seconds(cfg, snap, args.lag_seconds_timeout)
    follower_fetching = live_read.follower_fetching(cfg, snap.broker_racks) if snap.groups else None
    out = [share_group(snap, g) if snap.groups[g].share
           else consumer_group(cfg, snap, g, recs.get(g), lives, seconds, produce,
                               follower_fetching)
           for g in sorted(snap.groups)]
    skipped = [{"group": g, "kind": v.kind, "reason": v.reason}
               for g, v in sorted(snap.skipped.items())]
    if args.format == "json":
        print(json.dumps({"groups": out, "skipped": skipped, "warnings": snap.warnings}, indent=2))
    else:
        text = render(out, args.members) if out else "no consumer groups"
        print("\n\n".join([text, *render_skipped(skipped)]))
    return 0


def consumer_group(cfg: Config, snap: ClusterSnapshot, g: str, rec: dict | None, lives: dict,
                   seconds: dict, produce: dict, follower_fetching: bool | None) -> dict:
    """A consumer group as describe shows it: its partitions and members, with what its latest
    recommendation (``rec``) says of them, its hot partitions and the consumers it needs."""
    from streaming.operator_view import groups as view
    from streaming.operator_view import sentences

    info = snap.groups[g]
    loss = lives[g].loss_s if g in lives else None
    rows = view.partition_rows(snap, g, view.recommended_owners(rec), seconds.get(g), loss)
    members = view.member_rows(snap, g, rows, view.recommended_capacity(rec))
    found = info.serving
    hot = view.hot_partitions(snap, g, produce)
    # one entry a member (not its client-id alias)
    capacities = {m: rate for m, (rate, _) in view.recommended_capacity(rec).items()
                  if not m.startswith("client:")} or None
    needed = view.consumers(snap, g, rows, capacities, produce, cfg.policy.capacity_headroom)
    return {"group": g, "state": info.state, "group_protocol": info.group_protocol,
            "assignor": info.protocol,
            "recommendation_version": rec["version"] if rec else None,
            "serving": {"kind": found.kind, "published": found.published,
                        "reason": found.reason},
            "group_epoch": info.epoch, "target_assignment_epoch": info.assignment_epoch,
            "rack_placement": rack_placement(rows, members, follower_fetching),
            "retention": sentences.retention_says(rows),
            "hot_partitions": [h.as_dict() for h in hot],
            "says": sentences.hot_says(hot), "consumers": needed.as_dict(),
            "slow_members": sentences.slow_members(rec), "slow_says": sentences.slow_says(rec),
            "consumers_says": sentences.consumers_says(needed),
            "partitions": [r.as_dict() for r in rows],
            "members": [m.as_dict() for m in members]}


def share_group(snap: ClusterSnapshot, g: str) -> dict:
    """A share group as describe shows it (no recommendation:
    :data:`streaming.contracts.serving.LAG_ONLY`)."""
    from streaming.operator_view import share_groups

    info = snap.groups[g]
    found = info.serving
    return {"group": g, "state": info.state, "group_protocol": info.group_protocol,
            "assignor": info.protocol, "recommendation_version": None,
            "serving": {"kind": found.kind, "published": found.published, "reason": found.reason},
            "partitions": [r.as_dict() for r in share_groups.share_partition_rows(snap, g)],
            "members": [m.as_dict() for m in share_groups.share_member_rows(snap, g)]}


def render_skipped(skipped: Sequence[dict]) -> list[str]:
    """The groups the collector does not read, one line each with the reason (nothing when there are
    none)."""
    if not skipped:
        return []
    return ["\n".join(["Groups not read:", *(f"  {s['group']}: {s['reason']}" for s in skipped)])]


def lag_seconds(cfg: Config, snap: ClusterSnapshot,
                timeout_s: float) -> dict[str, dict[tuple[str, int], float]]:
    """group -> partition -> age (s) of the record at its committed offset, for the lagging
    partitions read."""
    from streaming.commands import live_read
    from streaming.lag.rules import MIN_AGE_S

    # a share group's positions are its lag, not a record its members stand at
    lagging = {(g, tp): c for g in snap.groups if not snap.groups[g].share
               for tp, c in snap.committed.get(g, {}).items()
               if tp in snap.end and snap.end[tp] > c}
    times = live_read.record_times(cfg, ((tp, c) for (_, tp), c in lagging.items()), timeout_s)
    now_ms = time.time() * 1000
    out: dict[str, dict[tuple[str, int], float]] = {}
    for (g, tp), c in lagging.items():
        if (tp, c) in times:
            # at least a millisecond: a producer's clock ahead of this one must not read as no lag
            out.setdefault(g, {})[tp] = round(max((now_ms - times[(tp, c)]) / 1000.0, MIN_AGE_S), 3)
    return out


def rack_placement(rows: Sequence[view.PartitionRow], members: Sequence[view.MemberRow],
                   follower_fetching: bool | None) -> dict[str, object]:
    """The group's :class:`assignors.rack_placement.RackPlacement` as describe shows it."""
    from assignors.rack_placement import placement

    found = placement((r.replica_racks for r in rows), (m.rack for m in members), follower_fetching)
    return {"verdict": found.verdict, "decided": found.decided, "partitions": found.partitions,
            "follower_fetching": follower_fetching, "says": found.sentence()}


def epochs(g: dict) -> str:
    """A KIP-848 group's epochs for its header, and how many members are still converging."""
    moving = sum(1 for m in g["members"] if m["converging"])
    return (f", group epoch {g['group_epoch']}, "
            f"target assignment epoch {_cell(g['target_assignment_epoch'])}, "
            f"{moving} of {len(g['members'])} members converging")


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
    return [" ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip()
            for line in cells]


def render(groups: list[dict], members: bool) -> str:
    """kafka-consumer-groups' layout: a header per group, padded columns, ``-`` for an unknown
    value."""
    blocks = []
    for g in groups:
        if g["group_protocol"] == SHARE:
            blocks.append(render_share(g, members))
            continue
        kip848 = g.get("group_epoch") is not None
        version = g["recommendation_version"]
        title = (f"Consumer group '{g['group']}' ({g['state'] or 'unknown'}, {g['group_protocol']}"
                 f"{', ' + g['assignor'] if g['assignor'] else ''}"
                 f"{', recommendation v' + str(version) if version else ''}"
                 f"{epochs(g) if kip848 else ''})")
        if members:
            rows = [[m["group"], m["consumer_id"], m["instance_id"], m["host"], m["client_id"],
                     m["partitions"], m["lag"], m["lag_seconds"], m["rack"], m["cross_rack"],
                     m["capacity"], m["capacity_confidence_s"], m.get("lost_records"),
                     m.get("loss_seconds"),
                     *([m["member_epoch"], g["target_assignment_epoch"], m["converging"]]
                       if kip848 else [])]
                    for m in g["members"]]
            columns = MEMBER_COLUMNS + (EPOCH_COLUMNS if kip848 else ())
            lines = table(columns, rows) if rows else ["(no active members)"]
        else:
            rows = [[p["group"], p["topic"], p["partition"], p["current_offset"],
                     p["log_end_offset"], p["lag"], p["consumer_id"], p["host"], p["client_id"],
                     p["rack"], p["replica_racks"], p["cross_rack"], p["lag_seconds"],
                     p["recommended_owner"], p.get("log_start_offset"), p.get("retention_headroom"),
                     p.get("lost_records"), p.get("loss_seconds")] for p in g["partitions"]]
            lines = (table(PARTITION_COLUMNS, rows) if rows
                     else ["(no partitions owned or committed)"])
        placement = g.get("rack_placement")
        head = [title, f"Rack placement: {placement['says']}"] if placement else [title]
        head += [f"Retention: {line}" for line in g.get("retention") or ()]
        head += [f"Partitions: {line}" for line in g.get("says") or ()]
        head += [f"Slow member: {line}" for line in g.get("slow_says") or ()]
        # above the table, as the other lines: the table stays Kafka's
        if members and g.get("consumers_says"):
            head.append(f"Consumers: {g['consumers_says']}")
        found = g.get("serving")
        if found and found["reason"]:
            head.append(f"Recommendations: {found['kind'].replace('_', '-')}: {found['reason']}")
        blocks.append("\n".join([*head, *lines]))
    return "\n\n".join(blocks)


def render_share(g: dict, members: bool) -> str:
    """A share group in kafka-share-groups' layout, with the reason it gets no recommendation."""
    if members:
        rows = [[m["group"], m["consumer_id"], m["host"], m["client_id"], m["partitions"],
                 m["member_epoch"], assignment_cell(m["assignment"]), m["rack"]]
                for m in g["members"]]
        lines = table(SHARE_MEMBER_COLUMNS, rows) if rows else ["(no active members)"]
    else:
        rows = [[p["group"], p["topic"], p["partition"], p["leader_epoch"], p["start_offset"],
                 p["lag"], p["log_end_offset"]] for p in g["partitions"]]
        lines = table(SHARE_PARTITION_COLUMNS, rows) if rows else ["(no share-partitions)"]
    title = (f"Share group '{g['group']}' ({g['state'] or 'unknown'}, {g['group_protocol']}"
             f"{', ' + g['assignor'] if g['assignor'] else ''})")
    found = g["serving"]
    return "\n".join([title,
                      f"Recommendations: {found['kind'].replace('_', '-')}: {found['reason']}",
                      *lines])


def assignment_cell(assignment: Sequence[Sequence]) -> str:
    """``[[t, 0], [t, 2], [u, 1]]`` as the Kafka tools print an assignment: ``t:0,2;u:1`` (``-``:
    none)."""
    by_topic: dict[str, list[int]] = {}
    for t, p in assignment:
        by_topic.setdefault(t, []).append(int(p))
    return ";".join(f"{t}:{','.join(map(str, sorted(ps)))}"
                    for t, ps in sorted(by_topic.items())) or "-"

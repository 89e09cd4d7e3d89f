"""``rebalancer verify GROUP``: is the group's latest recommendation what the group runs now?

Like ``kafka-reassign-partitions --verify``: one live read of the group (the collector's code), compared
with the latest row of the recommendations table. The recommended members are found among the current
ones as the apply helpers find them (:func:`streaming.apply.plan.recommended_assignment`: instance id, member
id, then client id). The answer, and the exit status:

- ``applied`` (0): every partition is owned by the member the recommendation names;
- ``pending`` (3): it still fits the group but is not in place yet: the group is rebalancing, or (KIP-848)
  its epoch has not moved past the recommendation's, or the recommendation is younger than ``--pending-for``;
- ``diverged`` (4): it fits, the group settled on something else (the differences are listed);
- ``superseded`` (5): it no longer fits the group (a member left or joined, a partition was added): a new
  recommendation is due, and the apply helpers would not use this one;
- no recommendation for the group (6);
- not applied and not to be: ``awaiting approval`` (7, made in ``approve`` mode, not approved yet with
  ``rebalancer approve``), ``rejected`` (8, ``rebalancer reject``), ``observed`` (9, made in ``observe`` mode:
  never published for application). The status of an ``approve`` recommendation is read from the trigger
  feed, where approvals live; an approved one is pending or diverged as above, counted from its approval.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import time
from typing import Any

from streaming.commands._common import add_config_args, load_config
from streaming.config import APPROVE, AUTO, OBSERVE
from streaming.contracts.recommendation import APPROVED

APPLIED, PENDING, DIVERGED, SUPERSEDED, NO_RECOMMENDATION = "applied", "pending", "diverged", "superseded", "none"
AWAITING_APPROVAL, REJECTED, OBSERVED = "awaiting approval", "rejected", "observed"
EXIT = {APPLIED: 0, PENDING: 3, DIVERGED: 4, SUPERSEDED: 5, NO_RECOMMENDATION: 6, AWAITING_APPROVAL: 7, REJECTED: 8,
        OBSERVED: 9}
FEED_WAIT_S = 30.0
SETTLED = ("Stable", "Empty")


def register(sub: argparse._SubParsersAction) -> None:
    from streaming.commands.live import add_read_args

    p = sub.add_parser("verify", help="compare a group's live assignment with its latest recommendation",
                       description=__doc__.split("\n\n")[1].replace("\n", " "),
                       epilog="exit status: 0 applied, 3 pending, 4 diverged, 5 superseded, 6 no recommendation, "
                              "7 awaiting approval, 8 rejected, 9 observed (observe mode)")
    add_config_args(p)
    add_read_args(p)
    p.add_argument("group", metavar="GROUP")
    p.add_argument("--pending-for", type=float, default=120.0, metavar="SECONDS",
                   help="a classic group's recommendation younger than this (event time) that is not in place "
                        "yet is pending, older it has diverged (120)")
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from streaming.commands import live
    from streaming.errors import UsageError

    cfg = live.live_config(load_config(args), args.bootstrap)
    snap = live.read(cfg, args, group=args.group)
    if args.group not in snap.groups:
        raise UsageError(f"consumer group {args.group} does not exist" +
                         (f" ({'; '.join(snap.warnings)})" if snap.warnings else ""))
    rec = live.latest_recommendations(cfg, args.group).get(args.group)
    decision = feed_record(cfg, args.group) if rec is not None and rec.get("mode") == APPROVE else None
    result = verify(snap, args.group, rec, args.pending_for, time.time(), decision)
    if args.format == "json":
        print(json.dumps(result, indent=2, default=str))
    else:
        print(render(result))
    return EXIT[result["status"]]


def feed_record(cfg, group: str) -> dict[str, Any] | None:
    """The group's latest trigger-feed record (where approvals and rejections are)."""
    from streaming.apply.feed import RecommendationFeed
    from streaming.errors import RebalancerError

    with RecommendationFeed(cfg) as feed:
        if not feed.wait_ready(FEED_WAIT_S) or feed.failure is not None:
            raise RebalancerError(f"could not read the trigger feed {cfg.kafka.trigger_topic}: "
                                  f"{feed.failure or 'timed out'}")
        return feed.latest(group)


def _feed_form(rec: dict[str, Any]) -> dict[str, Any]:
    """A recommendations row's assignment as the apply helpers take it (partitions as pairs)."""
    return {**rec, "assignment": [{**e, "partitions": [[p["topic"], int(p["partition"])] for p in e["partitions"]]}
                                  for e in rec["assignment"]]}


def _event_seconds(rec: dict[str, Any]) -> float:
    t = rec["event_time"]
    if isinstance(t, dt.datetime):
        return (t if t.tzinfo else t.astimezone()).timestamp()
    return float(t) / 1000.0


def verify(snap, group: str, rec: dict[str, Any] | None, pending_for_s: float, now_s: float,
           feed_rec: dict[str, Any] | None = None) -> dict[str, Any]:
    """The comparison as a plain dict: ``status``, ``reason``, ``differences`` (partition, now, recommended).

    ``feed_rec``: for a recommendation of mode ``approve``, the group's latest trigger-feed record (its
    status says whether it was approved)."""
    from assignors.model import Member
    from streaming.apply import plan

    info = snap.groups[group]
    out: dict[str, Any] = {"group": group, "state": info.state, "status": NO_RECOMMENDATION, "reason": "",
                           "differences": [], "version": None}
    if rec is None:
        out["reason"] = "no recommendation for this group in the recommendations table"
        return out
    out |= {"version": rec["version"], "recommendation_id": rec["recommendation_id"],
            "event_time": rec["event_time"], "triggers": list(rec["triggers"] or ())}
    members = [Member(m.member_id, m.topics, m.instance_id, m.rack, client_id=m.client_id) for m in info.members]
    labels = {m.member_id: m.label for m in members}
    topics = {t: len(snap.topics[t]) for m in members for t in m.topics if t in snap.topics}
    try:
        wanted = plan.recommended_assignment(_feed_form(rec), members, topics)
    except plan.DoesNotFit as e:
        out |= {"status": SUPERSEDED, "reason": f"the recommendation no longer fits the group: {e}"}
        return out
    owner_now = {tp: m.member_id for m in info.members for tp in m.assigned}
    diffs = []
    for member_id, tps in sorted(wanted.items()):
        for tp in tps:
            if owner_now.get(tp) != member_id:
                now = owner_now.get(tp)
                diffs.append({"partition": f"{tp[0]}-{tp[1]}", "now": labels.get(now) if now else None,
                              "recommended": labels[member_id]})
    out["differences"] = sorted(diffs, key=lambda d: d["partition"])
    total = sum(len(v) for v in wanted.values())
    if not diffs:
        out |= {"status": APPLIED, "reason": f"all {total} partitions are where the recommendation puts them"}
        return out
    moved = f"{len(diffs)} of {total} partitions are not where the recommendation puts them"
    age = now_s - _event_seconds(rec)
    mode = rec.get("mode") or AUTO
    out["mode"] = mode
    if mode == OBSERVE:
        out |= {"status": OBSERVED, "reason": f"{moved}; made in observe mode, never published for application"}
        return out
    if mode == APPROVE:
        same = feed_rec is not None and feed_rec.get("version") == rec["version"]
        status = feed_rec.get("status") if same and feed_rec is not None else None
        if status == REJECTED:
            out |= {"status": REJECTED, "reason": f"{moved}; rejected (rebalancer reject)"}
            return out
        if status != APPROVED:
            out |= {"status": AWAITING_APPROVAL, "reason": f"{moved}; awaiting approval "
                                                           f"(rebalancer approve {group} --version {rec['version']})"}
            return out
        if feed_rec is not None and isinstance(feed_rec.get("decided_at"), int):
            age = now_s - feed_rec["decided_at"] / 1000.0  # it could not be applied before its approval
    if info.state not in SETTLED:
        out |= {"status": PENDING, "reason": f"{moved}; the group is rebalancing ({info.state})"}
    elif info.epoch is not None and rec.get("generation") is not None:
        if info.epoch <= rec["generation"]:
            out |= {"status": PENDING, "reason": f"{moved}; group epoch {info.epoch} not past the recommendation's"}
        else:
            out |= {"status": DIVERGED, "reason": f"{moved}; group epoch {info.epoch} moved past the "
                                                  f"recommendation's {rec['generation']} without it"}
    elif age < pending_for_s:
        out |= {"status": PENDING, "reason": f"{moved}; made {age:.0f}s ago (--pending-for {pending_for_s:g})"}
    else:
        out |= {"status": DIVERGED, "reason": f"{moved}; made {age:.0f}s ago and the group settled on another "
                                              "assignment"}
    return out


def render(r: dict[str, Any]) -> str:
    if r["version"] is None:
        return f"Group {r['group']}: {r['reason']}."
    lines = [f"Recommendation v{r['version']} ({r['recommendation_id']}) of group {r['group']}, "
             f"{str(r['event_time'])[:19]}, triggers {','.join(r['triggers']) or '-'}:",
             f"{r['status']}: {r['reason']}."]
    if r["differences"]:
        width = max(len(d["partition"]) for d in r["differences"])
        lines += [f"  {d['partition'].ljust(width)}  on {d['now'] or '(nobody)'}, recommended {d['recommended']}"
                  for d in r["differences"]]
    return "\n".join(lines)

"""``rebalancer verify GROUP``: is the group's latest recommendation what the group runs now?

This module reads (the group live, with the collector's code; the latest row of the recommendations
table; for ``approve`` mode, the trigger feed) and renders; the verdicts and how they are reached
are :mod:`streaming.apply.verification`'s.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from streaming.apply import verification
from streaming.apply.verification import LiveGroup, Verdict
from streaming.commands._common import add_config_args, load_config
from streaming.config import APPROVE

EXIT = {v.label: v.exit_status for v in Verdict}
FEED_WAIT_S = 30.0


def register(sub: argparse._SubParsersAction) -> None:
    from streaming.commands.live_read import add_read_args

    p = sub.add_parser("verify",
                       help="compare a group's live assignment with its latest recommendation",
                       description=verification.__doc__.split("\n\n")[1].replace("\n", " "),
                       epilog="exit status: 0 applied, 3 pending, 4 diverged, 5 superseded, 6 no "
                              "recommendation, 7 awaiting approval, 8 rejected, 9 observed "
                              "(observe mode), 10 expired (a proposal whose group changed since, "
                              "or past policy.proposal_expiry_s)")
    add_config_args(p)
    add_read_args(p)
    p.add_argument("group", metavar="GROUP")
    p.add_argument("--pending-for", type=float, default=120.0, metavar="SECONDS",
                   help="a classic group's recommendation younger than this (event time) that is "
                        "not in place yet is pending, older it has diverged (120)")
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from streaming.commands import live_read
    from streaming.errors import UsageError

    cfg = live_read.live_config(load_config(args), args.bootstrap)
    snap = live_read.read(cfg, args, group=args.group)
    if args.group in snap.skipped:
        result = verification.not_read(args.group, snap.skipped[args.group].reason).as_dict()
    elif args.group not in snap.groups:
        raise UsageError(f"consumer group {args.group} does not exist" +
                         (f" ({'; '.join(snap.warnings)})" if snap.warnings else ""))
    else:
        rec = live_read.latest_recommendations(cfg, args.group).get(args.group)
        proposed = rec is not None and rec.get("mode") == APPROVE
        decision = feed_record(cfg, args.group) if proposed else None
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

    with RecommendationFeed(cfg.kafka) as feed:
        if not feed.wait_ready(FEED_WAIT_S) or feed.failure is not None:
            raise RebalancerError(f"could not read the trigger feed {cfg.kafka.trigger_topic}: "
                                  f"{feed.failure or 'timed out'}")
        return feed.latest(group)


def verify(snap, group: str, rec: dict[str, Any] | None, pending_for_s: float, now_s: float,
           feed_rec: dict[str, Any] | None = None) -> dict[str, Any]:
    """:func:`streaming.apply.verification.verify` of the group in the collector's snapshot, as a
    plain dict (``status``, ``reason``, ``differences``, the recommendation's ``version`` ...) for
    rendering and JSON."""
    return verification.verify(LiveGroup.of_snapshot(snap, group), rec, pending_for_s, now_s,
                               feed_rec).as_dict()


def render(r: dict[str, Any]) -> str:
    if r["version"] is None:
        return f"Group {r['group']}: {r['reason']}."
    lines = [f"Recommendation v{r['version']} ({r['recommendation_id']}) of group {r['group']}, "
             f"{str(r['event_time'])[:19]}, triggers {','.join(r['triggers']) or '-'}:",
             f"{r['status']}: {r['reason']}."]
    if r["differences"]:
        width = max(len(d["partition"]) for d in r["differences"])
        lines += [
            f"  {d['partition'].ljust(width)}  on {d['now'] or '(nobody)'}, recommended "
            f"{d['recommended']}" for d in r["differences"]]
    return "\n".join(lines)

"""``rebalancer approve GROUP [--version N]`` and ``rebalancer reject GROUP [--version N]``: decide
on a group's proposed recommendation (``policy.mode = approve``).

The decision goes to the trigger feed as the same recommendation with ``status`` ``approved`` or
``rejected`` and ``decided_at`` (epoch ms), under the same key (the group): the compacted topic
keeps it as the group's latest record, and the apply helpers act on an approved one as on an
``auto`` one. The recommendation is the group's latest record in the feed; ``--version`` makes sure
it is the one reviewed (a newer proposal since then is refused: review that one). A proposal that
has expired (the group's members or partitions changed since, or it is older than
``policy.proposal_expiry_s``: :mod:`streaming.proposals.expiry`, against the group as read live now)
is refused too, with the reason. Deciding again is allowed (the later decision wins); deciding what
is already so changes nothing.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from streaming.commands._common import add_config_args, load_config
from streaming.contracts.recommendation import APPROVED, PROPOSED, REJECTED
from streaming.errors import UsageError

DECISIONS = {"approve": APPROVED, "reject": REJECTED}
FEED_WAIT_S = 30.0


def register(sub: argparse._SubParsersAction, command: str = "approve") -> None:
    """Adds ``approve`` (``rebalancer reject`` is registered by streaming/commands/reject.py)."""
    p = sub.add_parser(command,
                       help=f"{command} a group's proposed recommendation (policy.mode = approve)",
                       description=__doc__.split("\n\n")[1].replace("\n", " "))
    add_config_args(p)
    p.add_argument("--bootstrap", metavar="HOST:PORT[,...]",
                   help="overrides kafka.bootstrap_servers")
    p.add_argument("group", metavar="GROUP")
    p.add_argument("--version", type=int, default=None, metavar="N",
                   help="the version reviewed (default: the group's latest); refused when it is "
                        "not the latest")
    p.set_defaults(func=run, decision=DECISIONS[command])


class Refused(UsageError):
    """Nothing to decide on: why, for the operator."""


def decided(rec: dict[str, Any] | None, group: str, decision: str, version: int | None,
            now_ms: int, expired: str | None = None) -> dict[str, Any] | None:
    """The feed record to publish for ``decision`` on ``rec`` (the group's latest feed record), None
    when it is already so; :class:`Refused` when there is nothing to decide on, or when approving a
    proposal that has ``expired`` (why, :func:`streaming.proposals.expiry.reason`)."""
    from streaming.apply.plan import status_of

    if rec is None:
        raise Refused(f"no recommendation of group {group} in the trigger feed")
    latest = int(rec["version"])
    if version is not None and version != latest:
        raise Refused(f"v{version} is not group {group}'s latest recommendation (v{latest} is); "
                      f"review v{latest}" if version < latest else
                      f"group {group} has no recommendation v{version} yet "
                      f"(the latest is v{latest})")
    status = status_of(rec)
    if status not in (PROPOSED, APPROVED, REJECTED):
        raise Refused(f"recommendation v{latest} of group {group} was published with status "
                      f"{status}, not as a proposal (the group is not in approve mode)")
    if status == decision:
        return None
    # a rejected one too: approving it now would apply stale facts
    if decision == APPROVED and expired:
        raise Refused(f"recommendation v{latest} of group {group} has expired: {expired}. The job "
                      "proposes again when the group next needs it")
    return {**rec, "status": decision, "decided_at": now_ms}


def expiry_reason(cfg, rec: dict[str, Any] | None, group: str, now_ms: int) -> str | None:
    """Why ``rec``, a proposal not approved yet, has expired for the group as read live now (None:
    it has not)."""
    from streaming.apply.plan import status_of
    from streaming.apply.verification import LiveGroup
    from streaming.commands import live_read
    from streaming.proposals import expiry

    if rec is None or status_of(rec) not in (PROPOSED, REJECTED):
        return None
    # racks play no part in expiry: the collector's default rack rules will do
    snap = live_read.read(cfg, argparse.Namespace(rack_map=[], client_rack_pattern=None),
                          group=group)
    now = (LiveGroup.of_snapshot(snap, group) if group in snap.groups
           else LiveGroup(group, "Dead", [], {}))
    return expiry.reason(rec, now.members, now.partitions, now_ms)


def run(args: argparse.Namespace) -> int:
    from streaming.apply.feed import RecommendationFeed
    from streaming.commands import live_read
    from streaming.errors import RebalancerError
    from streaming.job.sinks import FEED_PRODUCER_DEFAULTS
    from streaming.kafka_clients.factories import producer

    cfg = live_read.live_config(load_config(args), args.bootstrap)
    with RecommendationFeed(cfg.kafka) as feed:
        if not feed.wait_ready(FEED_WAIT_S) or feed.failure is not None:
            raise RebalancerError(f"could not read the trigger feed {cfg.kafka.trigger_topic}: "
                                  f"{feed.failure or 'timed out'}")
        rec = feed.latest(args.group)
    stale = (expiry_reason(cfg, rec, args.group, int(time.time() * 1000))
             if args.decision == APPROVED else None)
    record = decided(rec, args.group, args.decision, args.version, int(time.time() * 1000), stale)
    assert rec is not None
    if record is None:
        print(f"recommendation v{rec['version']} of group {args.group} is already {args.decision}")
        return 0
    # as the job's feed sink writes (sinks.FEED_PRODUCER_DEFAULTS): a large group's recommendation
    # exceeds 1 MB
    p = producer(cfg, compression_type="gzip",
                 max_request_size=int(FEED_PRODUCER_DEFAULTS["kafka.max.request.size"]))
    try:
        value = json.dumps(record, separators=(",", ":"), sort_keys=True).encode()
        p.send(cfg.kafka.trigger_topic, key=args.group.encode(), value=value).get(timeout=30)
    finally:
        p.close(timeout=10)
    print(f"recommendation v{rec['version']} of group {args.group}: {args.decision} "
          f"(published to {cfg.kafka.trigger_topic})")
    return 0

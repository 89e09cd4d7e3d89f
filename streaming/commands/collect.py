"""``rebalancer collect``: watch every consumer group and publish lag and metadata events."""

from __future__ import annotations

import argparse

from streaming.commands._common import add_config_args, load_config


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "collect", help="read consumer-group lag and metadata with the admin API and publish events to Kafka",
        description="Every --interval seconds: list the consumer groups, describe them, read committed, end "
                    "and begin offsets and the topics' replicas and racks; publish the lag of every subscribed "
                    "partition (one event per group and topic), and members/partitions events when they change "
                    "(and at every full refresh) to the topics kafka.lag_topic and kafka.metadata_topic. Never "
                    "joins a group, never commits.")
    add_config_args(p)
    p.add_argument("--bootstrap", metavar="HOST:PORT[,...]", help="overrides kafka.bootstrap_servers")
    p.add_argument("--interval", type=float, default=10.0, metavar="SECONDS", help="seconds between polls (10)")
    p.add_argument("--groups", metavar="REGEX", help="watch only the groups whose id matches (re.search)")
    p.add_argument("--exclude", metavar="REGEX", help="skip the groups whose id matches")
    p.add_argument("--full-refresh-every", type=int, default=30, metavar="N",
                   help="re-send every members and partitions event every N polls (30; 0 = never)")
    p.add_argument("--polls", type=int, metavar="N", help="stop after N polls (default: run until Ctrl-C)")
    p.add_argument("--rack-map", action="append", default=[], metavar="CLIENT_OR_HOST=RACK",
                   help="rack of members whose subscription carries none, by exact client id, host, or glob; "
                        "repeatable")
    p.add_argument("--client-rack-pattern", default=None, metavar="REGEX",
                   help="regex whose first group, searched in a client id, is its rack when nothing else says "
                        "(default '-rack-([A-Za-z0-9_.]+)$'; '' to disable)")
    p.add_argument("--offset-reset", choices=("earliest", "latest"), default="latest",
                   help="where a group without a commit on a partition would start (lag 0 for latest)")
    p.add_argument("--group-offset-reset", action="append", default=[], metavar="GROUP=POLICY",
                   help="the same per group; repeatable")
    p.add_argument("--lag-form", choices=("dense", "partition"), default="dense",
                   help="lag as one lag_dense event per group, topic and poll (dense, the default) or one lag "
                        "event per partition (partition: what collectors before lag_dense wrote)")
    p.set_defaults(func=run)


def _options(args: argparse.Namespace):
    from streaming.collector import CollectorOptions
    from streaming.collector.member_metadata import DEFAULT_CLIENT_RACK_PATTERN
    from streaming.errors import UsageError

    per_group = {}
    for item in args.group_offset_reset:
        group, sep, policy = item.rpartition("=")
        if not sep or not group:
            raise UsageError(f"--group-offset-reset {item!r}: expected GROUP=earliest|latest")
        per_group[group] = policy
    pattern = DEFAULT_CLIENT_RACK_PATTERN if args.client_rack_pattern is None else (args.client_rack_pattern or None)
    if args.interval <= 0 or (args.polls is not None and args.polls < 1) or args.full_refresh_every < 0:
        raise UsageError("--interval must be > 0, --polls >= 1 and --full-refresh-every >= 0")
    try:
        return CollectorOptions(
            interval_s=args.interval, include=args.groups, exclude=args.exclude,
            full_refresh_every=args.full_refresh_every, offset_reset=args.offset_reset,
            group_offset_reset=per_group, rack_map=tuple(args.rack_map), client_rack_pattern=pattern,
            lag_form=args.lag_form)
    except Exception as e:  # ValueError, re.error
        raise UsageError(str(e)) from None


def run(args: argparse.Namespace) -> int:
    from streaming.collector import Collector
    from streaming.collector.member_metadata import RackResolver
    from streaming.collector.publisher import Publisher, ensure_event_topics
    from streaming.embedded.live import kafka_for
    from streaming.errors import UsageError
    from streaming.exporter import for_collector

    cfg = load_config(args)
    if args.bootstrap:
        cfg = cfg.with_overrides({"kafka.bootstrap_servers": args.bootstrap})
    options = _options(args)
    try:
        RackResolver.parse(options.rack_map, options.client_rack_pattern)
    except Exception as e:
        raise UsageError(str(e)) from None
    with kafka_for(cfg) as live:
        ensure_event_topics(live)
        extra = f", client options {live.kafka.redacted()}" if live.kafka.options else ""
        print(f"collecting from {live.kafka.bootstrap_servers} every {options.interval_s:g}s -> "
              f"{live.kafka.lag_topic}, {live.kafka.metadata_topic}{extra}", flush=True)
        collector = Collector(live, options, sink=Publisher(live), export=for_collector(live))
        try:
            published = collector.run(polls=args.polls)
        except KeyboardInterrupt:
            published = None
        finally:
            collector.close()
    if published is not None:
        print(f"collected {collector.polls} poll(s), published {published} events")
    return 0

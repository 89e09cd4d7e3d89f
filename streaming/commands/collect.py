"""``rebalancer collect``: watch every consumer group and publish lag and metadata events."""

from __future__ import annotations

import argparse
import functools

from streaming.commands._common import add_config_args, load_config


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "collect",
        help="read consumer-group lag and metadata with the admin API and publish events to Kafka",
        description="Every --interval seconds: list the consumer groups, describe them, read "
                    "committed, end and begin offsets and the topics' replicas and racks; publish "
                    "the lag of every subscribed partition (one event per group and topic), and "
                    "members/partitions events when they change (and at every full refresh) to the "
                    "topics kafka.lag_topic and kafka.metadata_topic. Never joins a watched group, "
                    "never commits. Several collectors can share the groups by shard (a group's "
                    "shard: Kafka's murmur2 of its id, modulo N): --shard i/N polls one shard; "
                    "--shards N joins the consumer group --shard-group on a coordination topic of "
                    "N partitions (created if missing), whose partitions assigned to this "
                    "collector are its shards, so Kafka hands a dead collector's shards to the "
                    "others within a session timeout. During such a rebalance a group may be "
                    "skipped for a poll; once it completes, no group is polled by two collectors "
                    "(docs/design.md, 'Sharding the collector').")
    add_config_args(p)
    _watch_options(p)
    _member_options(p)
    _sharding_options(p)
    p.set_defaults(func=run)


def _watch_options(p: argparse.ArgumentParser) -> None:
    """Which cluster, which groups, how often."""
    p.add_argument("--bootstrap", metavar="HOST:PORT[,...]",
                   help="overrides kafka.bootstrap_servers")
    p.add_argument("--interval", type=float, default=10.0, metavar="SECONDS",
                   help="seconds between polls (10)")
    p.add_argument("--groups", metavar="REGEX",
                   help="watch only the groups whose id matches (re.search)")
    p.add_argument("--exclude", metavar="REGEX", help="skip the groups whose id matches")
    p.add_argument("--full-refresh-every", type=int, default=30, metavar="N",
                   help="re-send every members and partitions event every N polls (30; 0 = never)")
    p.add_argument("--polls", type=int, metavar="N",
                   help="stop after N polls (default: run until Ctrl-C)")


def _member_options(p: argparse.ArgumentParser) -> None:
    """What a poll assumes where Kafka says nothing (racks, offsets) and the form of its lag."""
    p.add_argument("--rack-map", action="append", default=[], metavar="CLIENT_OR_HOST=RACK",
                   help="rack of members whose subscription carries none, by exact client id, "
                        "host, or glob; repeatable")
    p.add_argument("--client-rack-pattern", default=None, metavar="REGEX",
                   help="regex whose first group, searched in a client id, is its rack when "
                        "nothing else says (default '-rack-([A-Za-z0-9_.]+)$'; '' to disable)")
    p.add_argument("--offset-reset", choices=("earliest", "latest"), default="latest",
                   help="where a group without a commit on a partition would start (lag 0 for "
                        "latest)")
    p.add_argument("--group-offset-reset", action="append", default=[], metavar="GROUP=POLICY",
                   help="the same per group; repeatable")
    p.add_argument("--lag-form", choices=("dense", "partition"), default="dense",
                   help="lag as one lag_dense event per group, topic and poll (dense, the default) "
                        "or one lag event per partition (partition: what collectors before "
                        "lag_dense wrote)")


def _sharding_options(p: argparse.ArgumentParser) -> None:
    """Several collectors sharing the groups."""
    sharding = p.add_mutually_exclusive_group()
    sharding.add_argument("--shard", metavar="I/N",
                          help="poll only the groups of shard I of N (0 <= I < N)")
    sharding.add_argument("--shards", type=int, metavar="N",
                          help="share the groups with the other collectors of --shard-group, "
                               "Kafka's group protocol deciding which of the N shards each polls")
    p.add_argument("--shard-group", default=None, metavar="NAME",
                   help="with --shards: the collectors' consumer group and coordination topic "
                        "(rebalancer.collectors)")
    p.add_argument("--shard-option", action="append", default=[], metavar="KEY=VALUE",
                   help="with --shards: a setting of the coordination consumer alone, Kafka's name "
                        "(session.timeout.ms=10000, heartbeat.interval.ms, max.poll.interval.ms); "
                        "repeatable")


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
    pattern = (DEFAULT_CLIENT_RACK_PATTERN if args.client_rack_pattern is None
               else args.client_rack_pattern or None)
    if (args.interval <= 0 or (args.polls is not None and args.polls < 1)
            or args.full_refresh_every < 0):
        raise UsageError("--interval must be > 0, --polls >= 1 and --full-refresh-every >= 0")
    try:
        return CollectorOptions(
            interval_s=args.interval, include=args.groups, exclude=args.exclude,
            full_refresh_every=args.full_refresh_every, offset_reset=args.offset_reset,
            group_offset_reset=per_group, rack_map=tuple(args.rack_map),
            client_rack_pattern=pattern, lag_form=args.lag_form)
    except Exception as e:  # ValueError, re.error
        raise UsageError(str(e)) from None


def _shards(args: argparse.Namespace):
    """--shard / --shards checked: a function of the (live) configuration that makes the collector's
    shards (None: every group)."""
    from streaming.collector.coordination import COORDINATION_GROUP, DynamicShards
    from streaming.collector.errors import ShardSpecError
    from streaming.collector.shards import StaticShards
    from streaming.errors import UsageError

    if args.shards is None and (args.shard_group or args.shard_option):
        raise UsageError("--shard-group and --shard-option go with --shards")
    options = {}
    for item in args.shard_option:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--shard-option {item!r}: expected KEY=VALUE")
        options[key.strip()] = value.strip()
    try:
        if args.shard is not None:
            static = StaticShards.parse(args.shard)
            return lambda cfg: static
        if args.shards is not None:
            if args.shards < 1:
                raise UsageError(f"--shards {args.shards}: expected N >= 1")
            group = args.shard_group or COORDINATION_GROUP
            return lambda cfg: DynamicShards(cfg, args.shards, group, options).start()
    except ShardSpecError as e:
        raise UsageError(str(e)) from None
    return None


def run(args: argparse.Namespace) -> int:
    from streaming.apply.waiting import SnapshotWaiting
    from streaming.collector import Collector
    from streaming.collector.member_load import LoadReports
    from streaming.collector.member_metadata import RackResolver
    from streaming.collector.publisher import Publisher, ensure_event_topics
    from streaming.embedded.live_cluster import kafka_for
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
    make_shards = _shards(args)
    with kafka_for(cfg) as live:
        ensure_event_topics(live)
        extra = f", client options {live.kafka.redacted()}" if live.kafka.options else ""
        print(f"collecting from {live.kafka.bootstrap_servers} every {options.interval_s:g}s -> "
              f"{live.kafka.lag_topic}, {live.kafka.metadata_topic}{extra}", flush=True)
        shards = make_shards(live) if make_shards is not None else None
        export = for_collector(live, functools.partial(SnapshotWaiting, live.kafka))
        collector = Collector(live, options, sink=Publisher(live), export=export, shards=shards,
                              loads=LoadReports.of(live))
        try:
            published = collector.run(polls=args.polls)
        except KeyboardInterrupt:
            published = None
        finally:
            collector.close()
    if published is not None:
        print(f"collected {collector.polls} poll(s), published {published} events")
    return 0

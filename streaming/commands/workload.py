"""``rebalancer workload``: skewed producers and a live consumer group, for demos and tests."""

from __future__ import annotations

import argparse

from streaming.commands._common import add_config_args, load_config

ASSIGNORS = ("range", "roundrobin", "sticky", "cooperative-sticky")


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(",") if x.strip())


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "workload",
        help="produce with skewed partition rates and consume with a real consumer group",
        description="Produces --rate records/s to --topic with a Zipf (--zipf) or hot-partition "
                    "(--hot) skew and runs --consumers kafka-python consumers in group --group, "
                    "each processing --consume-rate records/s, so lag builds where the skew is. "
                    "Client ids are <group>-<i>-rack-<r>. Members can join or leave and replicas "
                    "move racks on a schedule. Runs --duration seconds or until Ctrl-C.")
    add_config_args(p)
    p.add_argument("--bootstrap", metavar="HOST:PORT[,...]",
                   help="overrides kafka.bootstrap_servers")
    p.add_argument("--topic", default="workload")
    p.add_argument("--group", default="workload-app")
    p.add_argument("--partitions", type=int, default=12)
    p.add_argument("--replication-factor", type=int, default=None,
                   help="default: up to 3, one per broker")
    p.add_argument("--rate", type=float, default=1000.0,
                   help="records/s produced over all partitions (1000)")
    skew = p.add_mutually_exclusive_group()
    skew.add_argument("--zipf", type=float, default=1.0,
                      help="Zipf exponent of the partition rates (1.0; 0 = even)")
    skew.add_argument("--hot", type=_ints, default=(), metavar="P,P,...",
                      help="hot partitions instead of Zipf")
    p.add_argument("--hot-factor", type=float, default=10.0,
                   help="rate of a hot partition over a cold one (10)")
    p.add_argument("--consumers", type=int, default=3)
    p.add_argument("--consume-rate", type=float, default=100.0,
                   help="records/s each consumer processes (100)")
    p.add_argument("--racks", default="a,b,c",
                   help="racks of the consumers, round robin ('' = none)")
    p.add_argument("--assignor", choices=ASSIGNORS, default="range")
    p.add_argument("--offset-reset", choices=("earliest", "latest"), default="earliest")
    p.add_argument("--duration", type=float, default=None, metavar="SECONDS",
                   help="default: until Ctrl-C")
    p.add_argument("--add-consumer-at", type=float, action="append", default=[], metavar="SECONDS",
                   help="a consumer joins at this time; repeatable")
    p.add_argument("--stop-consumer-at", type=float, action="append", default=[], metavar="SECONDS",
                   help="the newest consumer leaves at this time; repeatable")
    p.add_argument("--move-replicas-at", type=float, action="append", default=[], metavar="SECONDS",
                   help="every replica moves to the next broker (another rack) at this time; "
                        "repeatable")
    p.add_argument("--status-every", type=float, default=5.0, metavar="SECONDS")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import time

    from streaming.dev.workload import Workload, WorkloadOptions
    from streaming.embedded.live_cluster import kafka_for
    from streaming.errors import UsageError

    cfg = load_config(args)
    if args.bootstrap:
        cfg = cfg.with_overrides({"kafka.bootstrap_servers": args.bootstrap})
    try:
        options = WorkloadOptions(
            topic=args.topic, group=args.group, partitions=args.partitions,
            replication_factor=args.replication_factor, produce_rate=args.rate,
            zipf=None if args.hot else args.zipf, hot=args.hot, hot_factor=args.hot_factor,
            consumers=args.consumers, consume_rate=args.consume_rate,
            racks=tuple(r.strip() for r in args.racks.split(",") if r.strip()),
            assignor=args.assignor, offset_reset=args.offset_reset)
        workload = Workload(cfg, options)
    except ValueError as e:
        raise UsageError(str(e)) from None
    events = sorted([(t, "add") for t in args.add_consumer_at] +
                    [(t, "stop") for t in args.stop_consumer_at]
                    + [(t, "move") for t in args.move_replicas_at])
    with kafka_for(cfg) as live:
        workload.cfg = live
        workload.start()
        started = time.monotonic()
        next_status = started + args.status_every
        try:
            while args.duration is None or time.monotonic() - started < args.duration:
                now = time.monotonic() - started
                while events and events[0][0] <= now:
                    _, what = events.pop(0)
                    if what == "add":
                        workload.add_consumer()
                    elif what == "stop":
                        workload.stop_consumer()
                    else:
                        workload.move_replicas()
                if time.monotonic() >= next_status:
                    print(f"[{now:6.1f}s] {workload.status()}", flush=True)
                    next_status += args.status_every
                time.sleep(0.1)
        except KeyboardInterrupt:
            print("workload: interrupted, stopping ...", flush=True)
        finally:
            workload.stop()
    return 0

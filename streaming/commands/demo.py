"""``rebalancer demo``: the whole loop on the embedded default, live, with a summary and a plot."""

from __future__ import annotations

import argparse

from streaming.commands._common import add_config_args, load_config


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo", help="the closed loop on one machine: workload, collector, streaming job, "
                     "consumers applying the recommendations; live display, summary and plot",
        description="Starts a three-broker Kafka cluster on racks a, b, c (unless "
                    "kafka.bootstrap_servers names one), the streaming job in local Spark, a "
                    "skewed workload whose consumer group uses RecommendationAssignor (Kafka's "
                    "range until a recommendation lands) and the collector. Shows per-consumer "
                    "lag, each recommendation and each rebalance as they happen; midway moves "
                    "every replica to another rack. Stops after --duration seconds or on Ctrl-C, "
                    "stops everything it started and prints a summary; the plot and the Delta "
                    "tables go under data/demo/<time>/. With --consumers java: two groups of three "
                    "Java consumers (kafka-clients) on the same skewed topic, one on the project's "
                    "Java RecommendationAssignor (clients/java, built by `make java-assignor`), "
                    "one on Kafka's range; 30 s before the end a member of the first leaves and "
                    "its leader falls back; the summary compares the two groups' lag.")
    add_config_args(p)
    p.add_argument("--duration", type=float, default=180.0, metavar="SECONDS",
                   help="how long to run (180)")
    p.add_argument("--consumers", choices=("python", "java"), default="python",
                   help="the consumer group's clients: kafka-python (default), or Java consumers "
                        "beside a Java range group (needs `make java-assignor`)")
    p.add_argument("--leave-at", type=float, default=None, metavar="SECONDS",
                   help="--consumers java: when a member of the Java group leaves (default: 30 s "
                        "before the end; negative: never)")
    p.add_argument("--move-replicas-at", type=float, default=None, metavar="SECONDS",
                   help="when the replicas move racks (default: half the duration; negative: "
                        "never; python consumers only)")
    p.add_argument("--interval", type=float, default=2.5, metavar="SECONDS",
                   help="collector poll interval (2.5)")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="output folder (default data/demo/<time>)")
    p.set_defaults(func=run, log_file="demo")


def run(args: argparse.Namespace) -> int:
    import logging
    from pathlib import Path

    from streaming.dev.demo.runner import DemoOptions
    from streaming.dev.demo.runner import run as run_demo
    from streaming.errors import UsageError

    if not args.verbose:
        # the display says what happens; keep kafka-python's retries during replica moves and the
        # assignors' per-rebalance lines out of it (a recommendation that does not fit still shows)
        for name, level in (("kafka", logging.ERROR), ("streaming.apply", logging.WARNING),
                            ("streaming.dev.workload", logging.WARNING)):
            logging.getLogger(name).setLevel(level)
    if args.duration <= 0 or args.interval <= 0:
        raise UsageError("--duration and --interval must be > 0")
    if args.consumers == "java":
        return _run_java(args)
    if args.leave_at is not None:
        raise UsageError("--leave-at is for --consumers java")
    move = args.move_replicas_at
    options = DemoOptions(duration_s=args.duration, collector_interval_s=args.interval,
                          move_replicas_at_s=(float("inf") if move is not None and move < 0
                                              else move),
                          out_dir=Path(args.out) if args.out else None)
    result = run_demo(load_config(args), options, out=lambda text: print(text, flush=True))
    print("\n".join(result.lines), flush=True)
    return 0


def _run_java(args: argparse.Namespace) -> int:
    from pathlib import Path

    from streaming.dev.demo.java import JavaDemoOptions
    from streaming.dev.demo.java import run as run_java
    from streaming.errors import UsageError

    if args.move_replicas_at is not None:
        raise UsageError(
            "--move-replicas-at is for the python consumers; the java variant moves no replicas")
    leave = args.leave_at
    options = JavaDemoOptions(duration_s=args.duration, collector_interval_s=args.interval,
                              leave_at_s=float("inf") if leave is not None and leave < 0 else leave,
                              out_dir=Path(args.out) if args.out else None)
    result = run_java(load_config(args), options, out=lambda text: print(text, flush=True))
    print("\n".join(result.lines), flush=True)
    return 0

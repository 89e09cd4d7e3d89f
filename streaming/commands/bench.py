"""``rebalancer bench``: the benchmarks, from the command line.

    rebalancer bench quality [--seed N] [--cases N] [--suites a,b] [--save] rebalancer bench speed
    [--quick] [--assignors a,b] [--cases a,b] [--no-java] [--timeout S] [--save]

``quality`` compares every assignor on generated, seeded groups (:mod:`benchmarks.quality`);
``speed`` times ours beside Kafka's Java assignors (:mod:`benchmarks.speed`). Both are imported only
when run, so ``rebalancer --help`` stays instant. The benchmarks live in the repository, not in the
wheel: installed from the wheel, ``bench`` says so.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from types import ModuleType


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench",
                       help="benchmarks: assignment quality against every assignor, or speed")
    which = p.add_subparsers(dest="bench", metavar="BENCHMARK", required=True)

    q = which.add_parser("quality",
                         help="max load / lower bound, cross-rack, movement of every assignor")
    q.add_argument("--seed", type=int, default=1,
                   help="seed of the generated groups (default %(default)s)")
    q.add_argument("--cases", type=int, default=10, help="cases per suite (default %(default)s)")
    q.add_argument("--suites", help="comma-separated subset of the suites (default: all)")
    q.add_argument("--save", action="store_true", help="also write benchmarks/results/quality.txt")
    q.set_defaults(func=run_quality)

    s = which.add_parser("speed", help="speed and memory of ours beside Kafka's Java assignors")
    s.add_argument("--quick", action="store_true", help="small sizes (a minute)")
    s.add_argument("--assignors", help="comma-separated subset (range,roundrobin,lag,sticky,"
                                       "cooperative-sticky,balanced)")
    s.add_argument("--cases", help="comma-separated subset of case names")
    s.add_argument("--no-java", action="store_true", help="ours only")
    s.add_argument("--timeout", type=float, help="per run, seconds")
    s.add_argument("--save", action="store_true", help="also write benchmarks/results/speed.txt")
    s.set_defaults(func=run_speed)


def _benchmark(name: str) -> ModuleType:
    from streaming.errors import UsageError
    from streaming.paths import FROM_CHECKOUT, SOURCE_ROOT

    # from a checkout benchmarks/ sits beside the package, but the editable install maps only the
    # packages of the wheel, and the `rebalancer` script does not put the working directory on
    # sys.path
    if FROM_CHECKOUT and str(SOURCE_ROOT) not in sys.path:
        sys.path.append(str(SOURCE_ROOT))
    try:
        return importlib.import_module(f"benchmarks.{name}")
    except ModuleNotFoundError as e:
        if e.name not in ("benchmarks", f"benchmarks.{name}"):
            raise
        raise UsageError("the benchmarks are not installed (they are not part of the wheel): run "
                         "`rebalancer bench` from a checkout of the repository "
                         "(`make setup`)") from None


def run_quality(args: argparse.Namespace) -> int:
    quality = _benchmark("quality")

    argv = ["--seed", str(args.seed), "--cases", str(args.cases)]
    if args.suites:
        argv += ["--suites", args.suites]
    if args.save:
        argv.append("--save")
    return quality.main(argv)


def run_speed(args: argparse.Namespace) -> int:
    speed = _benchmark("speed")

    argv: list[str] = []
    for flag in ("quick", "no_java", "save"):
        if getattr(args, flag):
            argv.append("--" + flag.replace("_", "-"))
    for opt in ("assignors", "cases", "timeout"):
        value = getattr(args, opt)
        if value is not None:
            argv += ["--" + opt, str(value)]
    return speed.main(argv)

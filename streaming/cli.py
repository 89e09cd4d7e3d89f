"""The ``rebalancer`` command line.

Each subcommand lives in ``streaming/commands/<name>.py`` and exposes ``register(subparsers)``,
which adds its parser and sets ``func`` (``args -> exit status``). Command modules import heavy
libraries (pyspark, kafka-python) inside ``func`` only, so ``rebalancer --help`` stays instant.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import importlib.util
import logging
import os
import sys
import time

from streaming.errors import RebalancerError

DISTRIBUTION = "kafka-rebalancer"  # the name in pyproject.toml
# Order is the order of --help.
COMMANDS = ("setup", "kafka", "smoke", "demo", "collect", "workload", "run", "recommendations",
            "describe", "verify", "approve", "reject", "maintain", "assign", "bench")


def version() -> str:
    """The installed package's version (``unknown`` when run from a tree that was never
    installed)."""
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rebalancer",
        description="Lag- and rack-aware rebalancing recommendations for Kafka consumer groups.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        module = f"streaming.commands.{name}"
        if importlib.util.find_spec(module) is not None:
            importlib.import_module(module).register(sub)
    return parser


def setup_logging(args: argparse.Namespace) -> None:
    """Commands print their answer; the log says how they got there. A command with a live display
    (``set_defaults(log_file=NAME)``) logs to a file whose path it prints, so the display does not
    scroll away; ``-v`` brings every log line back to the terminal, at DEBUG. Without ``-v``,
    kafka-python and py4j say only their errors (their warnings, e.g. kafka-python's "Task ... ran
    for 0.109s ... blocking the event loop" under load, are noise to someone who asked for a
    verdict)."""
    handler: logging.Handler | None = None
    name = getattr(args, "log_file", None)
    if name and not args.verbose:
        from streaming.paths import LOG_DIR

        LOG_DIR.mkdir(parents=True, exist_ok=True)
        path = LOG_DIR / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}.log"
        handler = logging.FileHandler(path)
        print(f"logs: {path} (-v shows them here)", flush=True)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                        datefmt="%H:%M:%S", handlers=[handler] if handler else None, force=True)
    for noisy in ("kafka", "py4j"):
        logging.getLogger(noisy).setLevel(logging.DEBUG if args.verbose else logging.ERROR)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    setup_logging(args)
    try:
        return int(args.func(args) or 0)
    except RebalancerError as e:
        print(f"rebalancer {args.command}: error: {e}", file=sys.stderr)
        return e.exit_status
    except KeyboardInterrupt:
        print(f"rebalancer {args.command}: interrupted", file=sys.stderr)
        return 130


def console_main() -> None:
    """The ``rebalancer`` command: :func:`main`, then exit. Once ``deltalake`` has been used (a
    table read, the job's driver-side appends) the process leaves without interpreter finalization:
    delta-rs' native threads can still be winding down then, and the process aborted (SIGABRT,
    "terminate called without an active exception", delta-io/delta-rs#2184) after its output was
    complete (seen twice in this project's test runs)."""
    code = main()
    if "deltalake" in sys.modules:
        sys.stdout.flush()
        sys.stderr.flush()
        logging.shutdown()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    console_main()

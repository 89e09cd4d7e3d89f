"""The ``rebalancer`` command line.

Each subcommand lives in ``streaming/commands/<name>.py`` and exposes ``register(subparsers)``, which
adds its parser and sets ``func`` (``args -> exit status``). Command modules import heavy libraries
(pyspark, kafka-python) inside ``func`` only, so ``rebalancer --help`` stays instant.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import importlib.util
import logging
import os
import sys

from streaming.errors import RebalancerError

DISTRIBUTION = "kafka-rebalancer"  # the name in pyproject.toml
# Order is the order of --help.
COMMANDS = ("setup", "kafka", "smoke", "demo", "collect", "workload", "run", "recommendations", "describe", "verify",
            "approve", "reject", "maintain", "assign", "bench")


def version() -> str:
    """The installed package's version (``unknown`` when run from a tree that was never installed)."""
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


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
    )
    # kafka-python logs every connection attempt at INFO
    for noisy in ("kafka", "py4j"):
        logging.getLogger(noisy).setLevel(logging.DEBUG if args.verbose else logging.WARNING)
    try:
        return int(args.func(args) or 0)
    except RebalancerError as e:
        print(f"rebalancer {args.command}: error: {e}", file=sys.stderr)
        return e.exit_status
    except KeyboardInterrupt:
        print(f"rebalancer {args.command}: interrupted", file=sys.stderr)
        return 130


def console_main() -> None:
    """The ``rebalancer`` command: :func:`main`, then exit. Once ``deltalake`` has been used (a table read, the
    job's driver-side appends) the process leaves without interpreter finalization: delta-rs' native threads
    can still be winding down then, and the process aborted (SIGABRT, "terminate called without an active
    exception", delta-io/delta-rs#2184) after its output was complete (seen twice in this project's test runs)."""
    code = main()
    if "deltalake" in sys.modules:
        sys.stdout.flush()
        sys.stderr.flush()
        logging.shutdown()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    console_main()

"""``python -m benchmarks.javaref``: check the conformance scenarios against Java, or write the
overrides."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import benchmarks.javaref

from .build import ROOT, JavaRefError, kafka_clients_version
from .conformance import CONFORMANCE, OVERRIDES, check_conformance, write_overrides


def _parser() -> argparse.ArgumentParser:
    """The script's options."""
    description = (benchmarks.javaref.__doc__ or "").split("\n\n")[0]
    ap = argparse.ArgumentParser(prog="python -m benchmarks.javaref", description=description)
    ap.add_argument("--conformance", type=Path, default=CONFORMANCE,
                    help="scenario file (default: %(default)s)")
    ap.add_argument("--check", action="store_true",
                    help="run the conformance scenarios through Java, print diffs")
    ap.add_argument("--write-overrides", action="store_true",
                    help=f"also write {OVERRIDES.relative_to(ROOT)}")
    ap.add_argument("--out", type=Path, default=OVERRIDES,
                    help="overrides file (default: %(default)s)")
    return ap


def _print_report(disagreements: list[dict[str, Any]], checked: int) -> None:
    """How many pairs were checked, and each disagreement with the file's and Java's answers."""
    print(
        f"kafka-clients {kafka_clients_version()}: {checked} (scenario, assignor) pairs checked, "
        f"{len(disagreements)} disagree with the file"
    )
    for d in disagreements:
        print(f"- [{d['assignor']}] {d['name']}: {'; '.join(d['problems'])}")
        print(f"    file: {json.dumps(d['expected'])}")
        print(f"    java: {json.dumps(d['java'])}  "
              f"transferring={json.dumps(d['java_transferring'])}")


def main(argv: Sequence[str] | None = None) -> int:
    """Check (and with ``--write-overrides`` record) the conformance scenarios against Java; print
    the diffs."""
    args = _parser().parse_args(argv)
    try:
        if args.write_overrides:
            doc = write_overrides(args.conformance, args.out)
            disagreements, checked = doc["overrides"], doc["scenarios_checked"]
            print(f"wrote {args.out} ({len(disagreements)} override(s))")
        else:
            disagreements, checked = check_conformance(args.conformance)
    except JavaRefError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    _print_report(disagreements, checked)
    return 0


if __name__ == "__main__":
    sys.exit(main())

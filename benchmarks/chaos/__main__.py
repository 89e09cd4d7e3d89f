"""``python -m benchmarks.chaos``: runs :func:`benchmarks.chaos.cli.main`."""

import sys

from benchmarks.chaos.cli import main

if __name__ == "__main__":
    sys.exit(main())

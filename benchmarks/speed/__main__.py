"""``python -m benchmarks.speed``: runs :func:`benchmarks.speed.command.main`."""

import sys

from benchmarks.speed.command import main

if __name__ == "__main__":
    sys.exit(main())

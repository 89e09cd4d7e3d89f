"""``python -m benchmarks.soak``: runs :func:`benchmarks.soak.command.main`."""

import sys

from benchmarks.soak.command import main

if __name__ == "__main__":
    sys.exit(main())

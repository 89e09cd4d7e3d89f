"""The daemon Spark forks the job's Python workers from (``spark.python.daemon.module``): PySpark's
own, started after one change to the module search path.

Spark starts the daemon with ``$SPARK_HOME/python/lib/pyspark.zip`` and py4j's zip at the head of
PYTHONPATH. With PySpark installed by pip, SPARK_HOME is the installed ``pyspark`` package, and
those zips hold the same modules as the package beside them, without their compiled bytecode: the
daemon, and each worker it forks (they import ``pyspark.worker`` after the fork), compiled
PySpark's modules from source at every job start (py-spy: ``_compile_source`` and zipimport in
the daemon's tree; ``python -m benchmarks.cold_run`` measures a cold run with and without). Here
a zip that is the installed package's own leaves the path, so the package's modules load with
their bytecode. A zip of any other Spark (a cluster's SPARK_HOME, whose version the installed
package may not match) stays where Spark put it.

Nothing is imported before the fork beyond what PySpark's daemon imports itself: pandas and pyarrow
start threads, and the daemon must have none when it forks.
"""

from __future__ import annotations

import os
import re
import sys

_PY4J_ZIP = re.compile(r"py4j-(.+)-src\.zip")


def installed_zips(path: list[str]) -> list[str]:
    """The entries of ``path`` that are zips of the PySpark installed in a later entry of ``path``:
    ``<site>/pyspark/python/lib/pyspark.zip`` with ``<site>`` on the path after it, and py4j's zip
    beside it when ``<site>`` holds that same py4j version."""
    found = []
    for i, entry in enumerate(path):
        # real paths: SPARK_HOME may reach site-packages through a link the path does not use
        lib = os.path.dirname(os.path.realpath(entry))
        package = os.path.dirname(os.path.dirname(lib))
        site = os.path.dirname(package)
        later = {os.path.realpath(p) for p in path[i + 1:] if not p.endswith(".zip")}
        if (os.path.basename(package) != "pyspark" or site not in later
                or not os.path.isfile(os.path.join(package, "__init__.py"))):
            continue
        name = os.path.basename(entry)
        py4j = _PY4J_ZIP.fullmatch(name)
        if name == "pyspark.zip" or (
                py4j and os.path.isdir(os.path.join(site, f"py4j-{py4j.group(1)}.dist-info"))):
            found.append(entry)
    return found


def drop_installed_zips() -> None:
    """Take :func:`installed_zips` off ``sys.path`` (before anything imports from them)."""
    zips = set(installed_zips(sys.path))
    sys.path[:] = [p for p in sys.path if p not in zips]
    for entry in zips:
        sys.path_importer_cache.pop(entry, None)


def main() -> None:
    """Drop the installed package's zips from the path, then run PySpark's daemon."""
    drop_installed_zips()
    from pyspark import daemon

    daemon.manager()


if __name__ == "__main__":
    main()

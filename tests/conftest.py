"""Test layout: tests/unit runs in seconds without a JVM; tests/integration uses the real Kafka
broker, Spark and Delta (one cluster and one SparkSession per test session). Select with -m
integration / -m java."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from hypothesis import settings

from streaming.dev import QUICK_JVM

INTEGRATION = Path(__file__).parent / "integration"

# Every JVM the tests start (Spark drivers, the job's child processes, Java clients, brokers)
# compiles with C1 only, in a code cache of tiered compilation's size
# (:data:`streaming.dev.QUICK_JVM`).
os.environ.setdefault("JDK_JAVA_OPTIONS", QUICK_JVM)

# Hypothesis's per-example deadline (200 ms by default) times the machine, not the code: beside the
# suite's JVMs on two cores an example can wait longer than that, and the miss fails a correct
# property (60 tests had turned it off one by one; test_loss_risk had not). Off for every test: a
# property asserts outcomes, and speed is for benchmarks/ to measure.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")


def pytest_report_header(config: pytest.Config) -> str:
    """How fast the machine runs plain Python at the start, and how loaded it is: the same suite
    took 22 minutes on one day and 48 on another on this machine, and a run's time reads only
    beside these (``benchmarks/results/suite.txt``)."""
    t0 = time.perf_counter()
    total = 0
    for i in range(MACHINE_PROBE):
        total += i
    rate = MACHINE_PROBE / (time.perf_counter() - t0) / 1e6
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"machine: {rate:.1f} M Python additions/s, {os.cpu_count()} CPUs, load average {load}"


MACHINE_PROBE = 3_000_000
"""Additions the header's speed probe times (about half a second on the slow days)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--long", action="store_true",
                     help="run the long proofs (marked long) alone: `make test-long`; "
                          "without it they are deselected")


HEAVIEST = ("test_chaos.py", "test_capacity_live.py", "test_loop.py", "test_faults.py",
            "test_side_files.py", "test_zoo.py", "test_demo_java.py", "test_served.py",
            "test_cli_invocations.py", "test_maintain.py", "test_migration.py", "test_stop.py",
            "test_java_consumers.py", "test_spark_cluster.py", "test_driver_delta.py",
            "test_security.py", "test_loop_benchmark.py", "test_state_layout.py",
            "test_wheel_install.py", "test_whole_record.py")
"""The files that take longest (minutes each), longest first, as ``make test`` measured them
(``benchmarks/results/suite.txt``)."""


def _heaviest_first(item: pytest.Item) -> tuple[int, int]:
    """Longest work first, so that the two workers of ``make test`` end together: the longest file
    of :data:`HEAVIEST`, then the unit tests, then the rest of :data:`HEAVIEST` in its order, then
    the other integration files. ``--dist loadfile --no-loadscope-reorder`` hands files out in this
    order (xdist's own reorder puts files with one test, the longest here, last), two to each worker
    at first: the first worker makes the class archive (``integration/class_archive.py``, about a
    minute) before its first file, and the other, whose integration files would wait for it, runs
    unit tests meanwhile (they need no cluster)."""
    path = Path(item.fspath)
    if path.name in HEAVIEST:
        rank = HEAVIEST.index(path.name)
        return (0 if rank == 0 else 2), rank
    return (3 if INTEGRATION in path.parents else 1), 0


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=_heaviest_first)  # stable: each file's tests keep their order
    for item in items:
        if INTEGRATION in Path(item.fspath).parents and "java" not in item.keywords:
            item.add_marker(pytest.mark.integration)
    # Two tiers: `make test` (CI) runs everything but the long proofs, each of which has a shorter
    # form there; `make test-long` runs those alone. Deselected, not skipped: a skip would read as a
    # proof not made.
    long = config.getoption("--long")
    other_tier = [item for item in items if ("long" in item.keywords) != long]
    if other_tier:
        config.hook.pytest_deselected(items=other_tier)
        items[:] = [item for item in items if ("long" in item.keywords) == long]


@pytest.fixture(autouse=True)
def _logging_as_it_was():
    """Each test leaves logging as it found it. ``rebalancer`` commands called in-process
    (``streaming.cli.main``) set up logging as a command line does (``basicConfig(force=True)``: a
    root handler on the ``sys.stderr`` of the moment, pytest's capture, closed after that test);
    left behind, a later test's records go to a closed stream, and when one is py4j's own DEBUG
    record of a Java error, printing that error calls Java, which logs again: the callback thread
    never returns (test_security's loop hung in its foreachBatch so)."""
    import logging

    root, named = logging.getLogger(), ("kafka", "py4j", "streaming")
    before, level = set(root.handlers), root.level
    levels = {n: logging.getLogger(n).level for n in named}
    yield
    # only what a command added: pytest's own capture handlers come and go with each phase of a test
    for h in root.handlers[:]:
        if h not in before and type(h) in (logging.StreamHandler, logging.FileHandler):
            root.removeHandler(h)
            h.close()
    root.setLevel(level)
    for n, lv in levels.items():
        logging.getLogger(n).setLevel(lv)

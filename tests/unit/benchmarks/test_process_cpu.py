"""The CPU sampler's kinds of process, from the command lines the suite's processes have."""

from __future__ import annotations

import os
import threading

from benchmarks.process_cpu import ThreadTotals, kind, read, threads


def test_each_process_of_the_suite_has_its_kind() -> None:
    java = "/usr/lib/jvm/java-17-openjdk-amd64/bin/java -cp /x/jars/*"
    assert kind(f"{java} -Xmx512m kafka.Kafka /tmp/server.properties") == "broker"
    assert kind(f"{java} org.apache.spark.deploy.SparkSubmit pyspark-shell") == "spark-driver"
    assert kind(f"{java} -cp a.jar org.example.Member") == "java-other"
    assert kind("/v/bin/python -u -c import sys;exec(eval(sys.stdin.readline()))") == "xdist-worker"
    assert kind("/v/bin/python -m streaming.cli run --available-now") == "rebalancer-cli"
    assert kind("/v/bin/python -m pyspark.daemon") == "py-spark-worker"
    assert kind("/v/bin/python -m pytest tests -n 2") == "pytest"
    assert kind("/usr/bin/bash -c make test") == "bash"


def test_this_process_is_read_with_its_cpu() -> None:
    mine = [v for (pid, _), v in read().items() if pid == str(os.getpid())]
    assert len(mine) == 1 and mine[0][0] > 0 and "python" in mine[0][1]


def test_this_process_threads_are_read_by_name_and_added_once() -> None:
    mine = threads(str(os.getpid()))
    assert str(threading.get_native_id()) in mine
    assert not any(ch.isdigit() for _, name in mine.values() for ch in name)
    key = (str(os.getpid()), "0")
    before = ThreadTotals()
    before.add(key, count=False)  # running before the sampler: its past is not counted
    assert not before.by_name
    before.add(key)
    assert sum(before.by_name.values()) < 1.0
    totals = ThreadTotals()
    totals.add(key)
    first = sum(totals.by_name.values())
    totals.add(key)  # a second reading adds only what was used since the first
    assert first > 0 and sum(totals.by_name.values()) - first < first

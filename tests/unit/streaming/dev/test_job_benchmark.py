"""benchmarks.job's own arithmetic: the CPU busy between two times, a progress line's start, the
latency line's load in either lag form."""

from __future__ import annotations

import datetime as dt

import pytest

from benchmarks.job import sampling
from benchmarks.job.configuration import Scale
from benchmarks.job.report import latency_line


def test_busy_between_interpolates_the_samples():
    cpu = sampling.CpuSampler()
    cpu.samples = [(100.0, 10.0, 5.0), (101.0, 11.5, 5.5), (102.0, 13.5, 6.5)]
    assert cpu.busy_between(100.0, 102.0) == pytest.approx(3.5)
    # half of each second's busy time
    assert cpu.busy_between(100.5, 101.5) == pytest.approx(0.75 + 1.0)
    assert cpu.busy_between(101.0, 101.0) == 0.0
    # this process tree's alone
    assert cpu.busy_between(100.5, 101.5, own=True) == pytest.approx(0.25 + 0.5)


def test_the_own_counter_counts_this_process_and_only_grows():
    cpu = sampling.CpuSampler()
    first = cpu.tree_s()
    sum(i * i for i in range(2_000_000))  # some CPU of this process
    assert cpu.tree_s() > first >= 0


def test_the_own_cpu_by_kind_interpolates_each_kind():
    cpu = sampling.CpuSampler()
    cpu.samples = [(100.0, 0.0, 0.0), (102.0, 0.0, 0.0)]
    cpu.kinds = [{"broker": 1.0, "spark JVM": 2.0},
                 {"broker": 2.0, "spark JVM": 6.0, "driver": 1.0}]
    assert cpu.kinds_between(101.0, 102.0) == pytest.approx(
        {"broker": 0.5, "spark JVM": 2.0, "python workers": 0.0, "driver": 0.5})


def test_a_process_is_told_by_its_command_line():
    import subprocess
    import sys

    worker = subprocess.Popen([sys.executable, "-c",
                               "import time; print(1, flush=True); time.sleep(30)",
                               "pyspark.daemon"], stdout=subprocess.PIPE)
    try:
        # started: its own command line, not pytest's fork
        assert worker.stdout and worker.stdout.readline()
        assert sampling._kind(worker.pid) == "python workers"
    finally:
        worker.kill()
        worker.wait()
    import os

    assert sampling._kind(os.getpid()) == "driver"
    by_kind = sampling._tree_cpu_by_kind(os.getpid(), set(), {}, os.sysconf("SC_CLK_TCK"))
    assert set(by_kind) == set(sampling.KINDS) and by_kind["driver"] > 0


def test_the_machine_counter_only_grows():
    cpu = sampling.CpuSampler()
    first = cpu.busy_s()
    sum(i * i for i in range(200_000))  # some CPU
    assert cpu.busy_s() >= first > 0


def test_started_reads_sparks_progress_timestamp():
    when = dt.datetime(2026, 11, 23, 8, 45, 1, 250_000, tzinfo=dt.UTC)
    assert sampling.started_s({"started": "2026-11-23T08:45:01.250Z"}) == when.timestamp()


def _latency(dense: bool) -> dict:
    phases = {"compute": 1.0}
    return {"load_events_per_s": 1000.0, "late_polls": 0, "polls": 3, "trigger_interval_s": 10,
            "first_batch_ms": 1, "steady_batches": 2, "mean_batch_rows": 1000, "mean_batch_ms": 1,
            "median_batch_ms": 1, "mean_state_update_ms": 1, "ms_per_group": 0.1,
            "all_mean_batch_ms": 1, "recommendations": 0, "p50_ms": 1, "p95_ms": 1,
            "phases": phases, "batches_with_recs": 0, "phases_recs": phases,
            "phases_no_recs": phases, "dense": dense}


def test_a_dense_latency_run_reports_records_and_the_readings_they_carry():
    assert "1,000 lag_dense records/s (100,000 partition readings/s) written" in latency_line(
        Scale(10, 100), 64, _latency(True))
    assert "1,000 lag events/s written" in latency_line(Scale(10, 100), 64, _latency(False))


def test_the_standalone_runs_give_executors_this_checkout_and_local_modes_settings():
    import sys

    from benchmarks.job import standalone
    from streaming.spark_session import HUGE_METHODS, LOCAL_ONLY

    conf = standalone.cluster_conf(2)
    assert conf["spark.executorEnv.PYTHONPATH"] == str(standalone.CHECKOUT)
    assert (standalone.CHECKOUT / "streaming" / "__init__.py").exists()
    assert conf["spark.pyspark.python"] == sys.executable and conf["spark.executor.cores"] == "2"
    assert conf["spark.executor.extraJavaOptions"] == HUGE_METHODS
    assert LOCAL_ONLY.items() <= conf.items()

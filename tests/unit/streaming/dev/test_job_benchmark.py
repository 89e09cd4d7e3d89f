"""benchmarks.job's own arithmetic: the CPU busy between two times, a progress line's start."""

from __future__ import annotations

import datetime as dt

import pytest

from benchmarks.job import sampling


def test_busy_between_interpolates_the_samples():
    cpu = sampling.CpuSampler()
    cpu.samples = [(100.0, 10.0), (101.0, 11.5), (102.0, 13.5)]
    assert cpu.busy_between(100.0, 102.0) == pytest.approx(3.5)
    assert cpu.busy_between(100.5, 101.5) == pytest.approx(0.75 + 1.0)  # half of each second's busy time
    assert cpu.busy_between(101.0, 101.0) == 0.0


def test_the_machine_counter_only_grows():
    cpu = sampling.CpuSampler()
    first = cpu.busy_s()
    sum(i * i for i in range(200_000))  # some CPU
    assert cpu.busy_s() >= first > 0


def test_started_reads_sparks_progress_timestamp():
    when = dt.datetime(2026, 11, 23, 8, 45, 1, 250_000, tzinfo=dt.UTC)
    assert sampling.started_s({"started": "2026-11-23T08:45:01.250Z"}) == when.timestamp()

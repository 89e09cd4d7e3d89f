"""The loop report's reading of the decision delay: when ours first decided, and the job's part."""

from __future__ import annotations

from benchmarks.loop import decided
from benchmarks.loop.run import _batches, _pct


def test_the_jobs_part_is_read_from_each_recommendation_and_the_micro_batches() -> None:
    runs = [
        {"events": [], "recommendations": [{"at_s": 15.0, "observed_s": 10.0},
                                           {"at_s": 45.0, "observed_s": 41.0}],
         "job_batches": {"triggerExecution": {"p50": 2000.0, "p95": 5000.0}}},
        {"events": [], "recommendations": [{"at_s": 13.0, "observed_s": 7.0},
                                           {"at_s": 50.0}]},  # one from before observed_s
    ]
    assert decided.job_part(runs) == [
        "- the job's part: observation to feed 5.0 s (max 6.0, 3 recommendations); "
        "micro-batches p50 2.0 s, p95 5.0 s"]
    assert decided.first_decisions(runs[0]) == [15.0]
    assert decided.job_part([{"events": []}]) == []


class Query:
    def __init__(self, progress: list[dict]) -> None:
        self.recentProgress = progress
        self.lastProgress = progress[-1] if progress else None


def test_the_micro_batches_of_a_run_are_those_after_it_began() -> None:
    progress = [{"batchId": i, "numInputRows": 10 * i,
                 "durationMs": {"triggerExecution": 1000 * i, "addBatch": 500 * i}}
                for i in range(1, 6)]
    got = _batches(Query(progress), 3)
    assert got is not None and got["batches"] == 3 and got["rows_p50"] == 40.0
    assert got["triggerExecution"] == {"p50": 4000.0, "p95": 5000.0}
    assert got["walCommit"] == {"p50": 0.0, "p95": 0.0}
    assert _batches(Query(progress), 6) is None and _batches(None, 0) is None
    assert _pct([3, 1, 2], 50) == 2.0

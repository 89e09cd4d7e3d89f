"""A long run of the real job: does anything grow without bound?

    .venv/bin/python -m benchmarks.soak                           # 2,000 micro-batches, figures
                                                                  # every 100
    .venv/bin/python -m benchmarks.soak --batches 300 --every 50  # a short look
    .venv/bin/python -m benchmarks.soak --save                    # also write
                                                                  # benchmarks/results/soak.txt

Set-up: an embedded one-broker cluster; ``rebalancer run`` as a child process (short triggers); a
producer thread shaped like the collector (every ``--poll-every`` seconds one lag event per
partition of every group, each group's lag skewed by a slowly wandering factor on a wandering hot
partition, a membership change now and then, a malformed record now and then) so the job keeps
making recommendations and rejecting rows; and ``rebalancer maintain`` every ``--maintain-every``
seconds. The tables' retentions are scaled down (``--log-retention``, ``--file-retention``, rejected
rows) so that the run reaches the steady state that the defaults (30 days, 7 days) reach after
weeks.

Every ``--every`` batches one line: the driver's JVM and Python RSS, the Python workers' summed RSS,
the state store and the whole checkpoint (files, bytes), the Delta tables' data files and
``_delta_log``, and the mean batch time. At the end each figure's least-squares slope per 1,000
batches after ``--warmup`` batches and a verdict (:func:`.verdicts.verdict`): ``flat``, ``falls``,
``bounded`` (a sawtooth whose last third sets no new high), ``levelling`` or ``GROWS``. Then the job
is stopped by SIGTERM and its stop line printed.

The package: :mod:`.load` (the collector-shaped load), :mod:`.figures` (what is measured),
:mod:`.job` (the job, the maintainer, the stop), :mod:`.verdicts` (slopes, verdicts, saved lines
read back), :mod:`.command` (``python -m benchmarks.soak``).
"""

from __future__ import annotations

from .command import RESULTS, ROOT, args_of, fmt, main, run_batches, sample
from .figures import du, folders, memory
from .job import BATCH_LINE, Job, cli, job_conf, maintainer, stop_job
from .load import Load
from .verdicts import FIGURE_LINE, FIGURES, parse, slope, summary, verdict

__all__ = ["BATCH_LINE", "FIGURES", "FIGURE_LINE", "RESULTS", "ROOT", "Job", "Load", "args_of",
           "cli", "du", "fmt", "folders", "job_conf", "main", "maintainer", "memory", "parse",
           "run_batches", "sample", "slope", "stop_job", "summary", "verdict"]

"""Keep the streaming query running through faults that heal (a broker outage, a lost connection).

:func:`supervise` runs attempts (start the query from its checkpoint, wait until it ends) in a loop.
An attempt that fails with an error that can heal is logged as one line and followed, after an
exponential backoff, by a new attempt from the same checkpoint: Spark replays the unfinished batch,
Delta skips what it already committed. Errors that never heal (a table deleted or not ours, a schema
mismatch, another job on the checkpoint, bad configuration) end the job at once with their message.
So do ``max_restarts`` consecutive failures without a completed batch, so a fault that does not heal
cannot turn into a silent crash loop.

Pure Python: the attempt, the clock and the classification are passed in, and tested without Spark.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from streaming.errors import JobError, KafkaUnreachableError, RebalancerError
from streaming.kafka_clients.retry import backoff_delay
from streaming.state.errors import UNREADABLE

log = logging.getLogger(__name__)

# Text of failures that a restart cannot fix. A Python exception raised in foreachBatch
# reaches the driver as a StreamingQueryException whose message carries the Python traceback,
# hence the class names.
FATAL_MARKERS = (
    "JobError", "ConfigError", "AnalysisException",
    "org.apache.kafka.common.config.ConfigException",
    "DELTA_FAILED_TO_MERGE_FIELDS", "DELTA_SCHEMA_CHANGED", "DELTA_METADATA_MISMATCH",
    "DELTA_MISSING_DELTA_TABLE",
    "A schema mismatch detected",
    UNREADABLE,  # the job's group state: another version's, another keying, or damaged
)


@dataclass(frozen=True)
class Attempt:
    """How one run of the query ended: ``error`` None when it stopped cleanly
    (available-now drained, or stopped); ``progressed`` when at least one batch with input
    completed during the run."""

    error: BaseException | None
    progressed: bool


def one_line(error: BaseException, secrets: Iterable[str] = (), limit: int = 300) -> str:
    """The error's first meaningful line, secrets masked, at most ``limit`` characters: fit for one
    log line."""
    text = str(error).strip() or type(error).__name__
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    first = lines[0] if lines else text
    # py4j: the cause is next
    if first.startswith("An error occurred while calling") and len(lines) > 1:
        first = f"{first} {lines[1]}"
    # Spark prefixes with "[STREAM_FAILED] Query [id = ..., runId = ...] terminated with exception:"
    first = re.sub(r"Query \[id = [^\]]*\]", "Query", first)
    name = type(error).__name__
    first = f"{name}: {first}" if not first.startswith(name) else first
    return first if len(first) <= limit else first[: limit - 3] + "..."


def is_fatal(error: BaseException, first_attempt: bool) -> bool:
    """True for errors a restart cannot heal. Kafka unreachable is fatal only before the job ever
    ran (a wrong address at start is the user's to fix; an outage later is waited out)."""
    if isinstance(error, KafkaUnreachableError):
        return first_attempt
    if isinstance(error, RebalancerError):
        return True
    # pyspark raises AnalysisException itself when the query cannot even start
    text = " ".join(c.__name__ for c in type(error).__mro__) + " " + str(error)
    return any(marker in text for marker in FATAL_MARKERS)


def fatal_cause(error: BaseException) -> str:
    """For an error of ours raised inside foreachBatch or the stateful step, its own message (not
    Spark's wrapping)."""
    text = str(error)
    match = re.search(r"streaming\.(?:errors\.(?:JobError|ConfigError)"
                      r"|state\.errors\.UnreadableState): (.+)", text)
    return match.group(1).strip() if match else ""


def supervise(
    run_attempt: Callable[[], Attempt],
    *,
    max_restarts: int,
    base_s: float,
    max_s: float,
    secrets: Iterable[str] = (),
    sleep: Callable[[float], object] = time.sleep,
    classify: Callable[[BaseException, bool], bool] = is_fatal,
    stopped: Callable[[], bool] = lambda: False,
) -> int:
    """Run attempts until one ends cleanly or ``stopped()``; return how many restarts it took.

    ``run_attempt`` starts the query and waits for its end; an exception it raises (a failed
    start) counts as a failed attempt without progress. Raises :class:`JobError` (or the fatal
    error itself when it is ours) on a fatal error or after ``max_restarts`` consecutive
    failures without progress."""
    secrets = list(secrets)
    failures = 0  # consecutive, without a completed batch
    restarts = 0
    first = True
    while True:
        try:
            outcome = run_attempt()
        except Exception as e:  # a start that failed (Kafka unreachable, tables wrong ...)
            outcome = Attempt(error=e, progressed=False)
        if outcome.error is None or stopped():
            return restarts
        error = outcome.error
        if classify(error, first):
            if isinstance(error, RebalancerError):
                raise error
            cause = fatal_cause(error)
            raise JobError(cause or "the query failed and a restart cannot fix it: "
                                    f"{one_line(error, secrets)}")
        first = False
        failures = 1 if outcome.progressed else failures + 1
        if failures > max_restarts:
            raise JobError(f"the query failed {failures} times in a row without completing a "
                           f"batch; giving up. Last error: {one_line(error, secrets)}")
        wait = backoff_delay(failures, base_s, max_s)
        log.warning("query failed (%s); restarting from the checkpoint in %.0fs "
                    "(failure %d/%d without progress)",
                    one_line(error, secrets), wait, failures, max_restarts)
        sleep(wait)
        if stopped():
            return restarts
        restarts += 1

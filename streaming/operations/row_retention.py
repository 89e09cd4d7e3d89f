"""Row retention by the job itself, between its own appends.

Open-source Delta commits DELETE and MERGE as ``Serializable``: an append that lands while one runs
makes it conflict, blind or not. Beside a job that appends every second or so, the row retention of
``rebalancer maintain`` can lose every retry (the soak saw it lose six in a row). The job is the
tables' one writer, so it deletes old rows itself, after a batch's writes, every
``maintenance.expire_every_s``: none of its own appends can land in between. A conflict with another
writer (a ``maintain`` OPTIMIZE at that moment) or any other failure skips the round, never the
batch; the next round comes ``expire_every_s`` later.

What a round deletes never changes a decision: ``recommendations`` keeps each group's latest row
(what stands, and the floor its next version continues from), ``rejected_events`` is read by people
only. A round also checkpoints a local table's log, deletes the entries its log retention expired,
and the checksum files kept after their commits expired (:mod:`streaming.operations.log_orphans`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from pyspark.sql import SparkSession

from streaming.config import Config, MaintenanceSettings
from streaming.contracts.tables import RECOMMENDATIONS, REJECTED
from streaming.operations import delta_tables, faults, log_orphans
from streaming.paths import local_path

log = logging.getLogger(__name__)


def row_retention(m: MaintenanceSettings, rejected_days: float | None = None
                  ) -> tuple[tuple[str, float, Callable[[SparkSession, str, float], int]], ...]:
    """(table, retention in days, the function that deletes past it) of both tables;
    ``rejected_days`` in place of ``maintenance.rejected_retention_days``
    (``rebalancer maintain --retention-days``)."""
    rejected = m.rejected_retention_days if rejected_days is None else rejected_days
    return ((RECOMMENDATIONS, m.recommendations_retention_days,
             delta_tables.expire_recommendations),
            (REJECTED, rejected, delta_tables.expire_rejected))


class Retention:
    """Calls the row retention of both tables at most every ``maintenance.expire_every_s`` (0:
    never; then ``rebalancer maintain`` alone deletes, best while the job is stopped)."""

    def __init__(self, cfg: Config, clock: Callable[[], float] = time.monotonic) -> None:
        self.every_s = cfg.maintenance.expire_every_s
        self.clock = clock
        # not at start: a job restarted often would pay a round each time
        self.due = clock() + self.every_s
        self.steps = row_retention(cfg.maintenance)
        self.location = cfg.table_path

    def after_batch(self, spark: SparkSession, batch_id: int | None = None) -> dict[str, int]:
        """One round when it is due: table -> rows deleted (tables skipped or failed left out)."""
        if self.every_s <= 0 or self.clock() < self.due:
            return {}
        self.due = self.clock() + self.every_s
        faults.hit("retention:before", batch_id)
        deleted: dict[str, int] = {}
        for table, days, expire in self.steps:
            if days <= 0:
                continue
            try:
                deleted[table] = expire(spark, self.location(table), days)
            except Exception as e:  # the batch is written: retention waits for the next round
                if delta_tables.is_conflict(e):
                    log.info("%s: row retention met a concurrent commit; next round in %g s",
                             table, self.every_s)
                else:
                    log.warning("%s: row retention failed; next round in %g s", table,
                                self.every_s, exc_info=True)
                continue
            if deleted[table]:
                log.info("%s: %d row(s) older than %g days deleted", table, deleted[table], days)
        self.sweep_logs()
        faults.hit("retention:after", batch_id)
        return deleted

    def sweep_logs(self) -> None:
        """Checkpoint both tables' logs and delete their expired entries, then the orphan checksum
        files (local tables only; a failure is logged)."""
        for table, _, _ in self.steps:
            local = local_path(self.location(table))
            if local is None:
                continue
            try:
                log_orphans.expire_log(local)
            except Exception:
                # a concurrent checkpoint or cleanup (maintain): the next round does it
                log.warning("%s: could not checkpoint and clean up the log; next round in %g s",
                            table, self.every_s, exc_info=True)
            try:
                log_orphans.sweep(local)
            except OSError:
                log.warning("%s: could not delete orphan checksum files; next round in %g s",
                            table, self.every_s, exc_info=True)

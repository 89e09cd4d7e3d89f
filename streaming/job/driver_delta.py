"""A batch's few rows appended to a local Delta table from the driver, with delta-rs.

Why: Spark's Delta append of a handful of recommendation rows costs ~0.7-1 s whatever their number:
a write job, file statistics, a checksum, and the transaction lookup behind ``txnAppId``, which
rebuilds the table's state with a Spark job each time the table moved. delta-rs commits the same
rows in ~45 ms. At 200,000 events a batch that fixed second alone held the job under ~150,000
events/s (benchmarks/results/job.txt).

Idempotency is the one Spark's writer gives: the commit carries a ``txn`` action (app id, batch id),
and a batch whose id the table already holds for that app id is skipped, so a replay after a crash
adds nothing. Both writers read and write the same actions, so either may append to a table the
other wrote.

Used for local tables (a plain path or ``file:``: delta-rs knows nothing of the Hadoop configuration
that holds an object store's credentials) and for batches small enough to gather on the driver
(:data:`MAX_BYTES`); everything else goes through Spark. A commit delta-rs refuses goes through
Spark too, and a table it cannot write at all (a table feature it lacks) stays with Spark for the
rest of the run, said once in the log.

Spark's ``delta.autoOptimize.autoCompact`` runs only after Spark's own writes, so with
``auto_compact`` on, the appender compacts a table itself every :data:`COMPACT_EVERY` appends
(Delta's auto compaction waits for 50 small files too); ``rebalancer maintain`` does the rest.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from streaming.errors import JobError
from streaming.operations import faults

if TYPE_CHECKING:
    import pyarrow as pa
    from deltalake import DeltaTable

log = logging.getLogger(__name__)

MAX_BYTES = 64 * 1024 * 1024
"""A batch's rows for one table are gathered on the driver when their large text columns hold at
most this many characters; above it Spark writes them from the executors."""
COMPACT_EVERY = 50
UNSUPPORTED = "Unsupported table features"
"""How delta-rs begins its refusal to write a table that needs a feature it does not implement."""


class DriverAppender:
    """Appends Arrow tables to local Delta tables; one per job, keeping each table
    open between batches."""

    def __init__(self, auto_compact: bool) -> None:
        self.auto_compact = auto_compact
        self._open: dict[Path, DeltaTable] = {}
        self._appends: dict[Path, int] = {}
        self.refused: set[Path] = set()
        """Tables delta-rs could not write: Spark appends to them from then on."""

    def can_append(self, local: Path | None) -> bool:
        return local is not None and local not in self.refused

    def _table(self, local: Path) -> DeltaTable:
        from deltalake import DeltaTable
        from deltalake.exceptions import DeltaError

        table = self._open.get(local)
        if table is not None:
            try:
                table.update_incremental()
                return table
            except DeltaError:  # replaced under us (restored from a copy): read it afresh
                pass
        table = self._open[local] = DeltaTable(str(local))
        return table

    def append(self, local: Path, rows: pa.Table, app_id: str, version: int) -> bool:
        """Append ``rows`` in one commit tagged (``app_id``, ``version``) unless the table already
        holds that version; True when written. Raises :class:`Refused` when delta-rs did not commit
        (the caller writes with Spark)."""
        import pyarrow as pa
        from deltalake import CommitProperties, Transaction, write_deltalake
        from deltalake.exceptions import DeltaError

        # brought up to date once: the replay check and the write both use it
        table = self._table(local)
        done = table.transaction_version(app_id)
        if done is not None and done >= version:  # a replayed batch
            return False
        target = pa.schema(table.schema())
        try:
            data = rows.select(target.names).cast(target)
        except (KeyError, pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            # the columns are checked at start, so this is a type Arrow converts otherwise than
            # Spark: leave the table to Spark, which has always written it
            self.refused.add(local)
            log.warning("the batch's rows do not convert to table %s (%s); "
                        "Spark appends to it from now on", local, str(e)[:200])
            raise Refused(str(local)) from e
        faults.hit("delta-rs:before-commit", version)
        try:
            # blind, as Spark marks its appends (what a WriteSerializable reader of the table goes
            # by; open-source Delta's DELETE and MERGE are Serializable, where they still conflict)
            properties = CommitProperties(custom_metadata={"isBlindAppend": True},
                                          app_transactions=[Transaction(app_id, version)])
            write_deltalake(table, data, mode="append", commit_properties=properties)
        except DeltaError as e:
            # Nothing was committed (a commit is one file, written whole or not at all), so Spark
            # may write the batch, its txn tag skipping it had it landed after all. A table feature
            # delta-rs lacks (type widening, row tracking) stays with Spark; anything else (a lost
            # commit race) only this batch.
            first = str(e).splitlines()[0][:200] if str(e) else type(e).__name__
            if UNSUPPORTED in str(e):
                self.refused.add(local)
                log.warning("delta-rs cannot append to %s (%s); Spark appends to it from now on",
                            local, first)
            else:
                log.warning("delta-rs append to %s failed (%s); Spark appends this batch",
                            local, first)
            raise Refused(str(local)) from e
        faults.hit("delta-rs:after-commit", version)
        self._appends[local] = n = self._appends.get(local, 0) + 1
        if self.auto_compact and n % COMPACT_EVERY == 0:
            self._compact(local)
        return True

    def _compact(self, local: Path) -> None:
        try:
            metrics = self._table(local).optimize.compact()
            log.info("compacted %s: %s files into %s", local, metrics.get("numFilesRemoved"),
                     metrics.get("numFilesAdded"))
        except Exception:
            # the batch is written; compaction can wait for the next round or `maintain`
            log.warning("compacting %s failed", local, exc_info=True)


class Refused(JobError):
    """delta-rs did not commit; the caller appends with Spark (never leaves the batch writer)."""

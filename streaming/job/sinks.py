"""``foreachBatch``: the batch's recommendations and rejected records to Delta, recommendations to
the feed.

Delta appends are idempotent per batch: each carries ``txnAppId`` (stable per checkpoint) and
``txnVersion`` (the batch id), and Delta skips a write whose version it already committed for that
app id. A batch replayed after a crash therefore adds nothing twice. A local table's rows are
gathered on the driver and committed with delta-rs, the same way and ~20x faster (driver_delta.py;
``job.delta_writer``). The Kafka trigger feed is at-least-once (Spark's Kafka sink); a replay
re-sends the same ``recommendation_id``.

Every recommendation goes to Delta with its ``mode``; only those of mode ``auto`` (status ``auto``)
and ``approve`` (status ``proposed``) go to the feed: ``observe`` never publishes.

Each batch first checks that both tables are still Delta tables (an append would silently
create a new one) and that this job still holds the checkpoint's lease; either failing stops
the job (see supervisor.py).

Fault points for the chaos tests (``REBALANCER_FAULT``, see faults.py) at the batch's start and end,
around each Delta commit and around the feed write; unset, nothing happens.
"""

from __future__ import annotations

import logging
import time

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from streaming.config import APPROVE, AUTO, AUTO_WRITER, Config
from streaming.contracts.recommendation import (
    ASSIGNMENT_TYPE,
    CAPACITY_TYPE,
    HOT_TYPE,
    LAG_SECONDS_COLUMNS,
    MEMBER_FIGURES_TYPE,
    STUCK_TYPE,
)
from streaming.contracts.tables import RECOMMENDATIONS, REJECTED
from streaming.errors import JobError
from streaming.job import validate
from streaming.job.driver_delta import MAX_BYTES, DriverAppender, Refused
from streaming.kafka_clients.properties import spark_options
from streaming.operations import delta_tables, faults
from streaming.operations.row_retention import Retention
from streaming.paths import local_path
from streaming.state.group_state import METADATA_MISSING

log = logging.getLogger(__name__)

# Producer settings of the feed sink unless [kafka.options] says otherwise. A recommendation for a
# group of 10,000 members over 50,000 partitions is ~1.8 MB of JSON, over Kafka's 1 MB request
# default; compressed it is a few hundred KB. The feed topic is created with
# kafka_clients.FEED_MAX_MESSAGE_BYTES to match.
FEED_PRODUCER_DEFAULTS = {"kafka.compression.type": "gzip",
                          "kafka.max.request.size": str(16 * 1024 * 1024)}
MISSING_NAMED = 5
"""Groups a batch's ``metadata_missing`` warning names at most."""
PUBLISHED_MODES = (APPROVE, AUTO)
"""Modes whose recommendations go to the trigger feed (approve as proposals); observe
only to Delta."""
# recommendation columns the metrics read
# (streaming.exporter.metrics.JobMetrics.observe_recommendations)
METRIC_COLUMNS = ("group", "version", "event_ts", "triggers", "before_max_lag", "after_max_lag",
                  "before_imbalance", "after_imbalance", "before_cross_rack", "after_cross_rack",
                  "stuck_partitions", *LAG_SECONDS_COLUMNS, "member_capacity", "trigger_details")

def create_tables(spark: SparkSession, cfg: Config, checkpoint: str) -> set[str]:
    """Create the tables on a first start, else check they are the job's (see
    :mod:`streaming.operations.delta_tables`); the names of those it created."""
    return delta_tables.prepare(spark, cfg, checkpoint)


class BatchWriter:
    """The ``foreachBatch`` function. ``counts[batch_id]`` = (recommendations, rejected) for the
    progress line."""

    def __init__(self, cfg: Config, app: str, lease=None, metrics=None) -> None:
        self.cfg = cfg
        self.app = app
        self.lease = lease
        self.metrics = metrics
        """a :class:`streaming.exporter.metrics.JobMetrics`, or None (metrics off)."""
        self.counts: dict[int, tuple[int, int]] = {}
        self.spent: dict[int, dict[str, int]] = {}
        """batch id -> ms per phase of the write: ``check`` (tables and lease),
        ``compute`` (the batch itself: Kafka read, validation, the stateful step),
        ``delta`` (both appends), ``feed``."""
        self.driver = (DriverAppender(cfg.maintenance.auto_compact)
                       if cfg.job.delta_writer == AUTO_WRITER else None)
        self.retention = Retention(cfg)

    def _check(self, spark: SparkSession) -> None:
        for table in (RECOMMENDATIONS, REJECTED):
            if not delta_tables.is_delta_table(spark, self.cfg.table_path(table)):
                raise JobError(f"table {table} at {self.cfg.table_path(table)} was deleted while "
                               "the job ran; not recreating it. Restore it, or start over with a "
                               "new checkpoint")
        if self.lease is not None:
            self.lease.check()

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        faults.hit("batch:start", batch_id)
        marks = [time.monotonic()]
        self._check(batch.sparkSession)
        marks.append(time.monotonic())
        batch = batch.persist()
        try:
            # one job counts both kinds and sizes their large texts; empty outputs are not written
            # (no empty Delta commits)
            size = F.length(F.coalesce("rejected", "assignment", F.lit(""))) + F.coalesce(
                F.length("member_figures"), F.lit(0))
            counted = batch.groupBy("kind").agg(F.count("*").alias("n"), F.sum(size).alias("chars"))
            kinds = {r["kind"]: (r["n"], r["chars"] or 0) for r in counted.collect()}
            marks.append(time.monotonic())
            n_recs, rec_chars = kinds.get("recommendation", (0, 0))
            n_rejected, rejected_chars = kinds.get("rejected", (0, 0))
            if METADATA_MISSING in kinds:
                self._say_missing(batch, batch_id, kinds[METADATA_MISSING][0])
            if n_rejected:
                self._append(rejected_rows(batch, batch_id), REJECTED, batch_id, rejected_chars)
            if n_recs:
                # a batch's recommendations are few: one task, one file, one producer
                recs = batch.filter(F.col("kind") == "recommendation").coalesce(1)
                self._append(recommendation_rows(recs, batch_id), RECOMMENDATIONS, batch_id,
                             rec_chars)
            marks.append(time.monotonic())
            faults.hit("feed:before", batch_id)
            if n_recs:
                self._send_feed(recs)
            faults.hit("feed:after", batch_id)
            marks.append(time.monotonic())
            self.counts[batch_id] = (n_recs, n_rejected)
            phases = ("check", "compute", "delta", "feed")
            self.spent[batch_id] = {k: round(1000 * (b - a)) for k, a, b in
                                    zip(phases, marks[:-1], marks[1:], strict=True)}
            if self.metrics is not None:
                self._observe(batch, n_recs, n_rejected)
        finally:
            batch.unpersist()
        # between two of the job's own appends: no race
        self.retention.after_batch(batch.sparkSession, batch_id)
        faults.hit("batch:end", batch_id)

    def _say_missing(self, batch: DataFrame, batch_id: int, n: int) -> None:
        """Log and count the ``n`` polls the batch decided without every metadata event their lag
        counts (:func:`streaming.job.stateful.missing_rows`): a few groups named."""
        named = (batch.filter(F.col("kind") == METADATA_MISSING).select("group", "event_ts")
                 .distinct().orderBy("group", "event_ts").limit(MISSING_NAMED).collect())
        log.warning(
            "batch %d decided %d poll(s) without every metadata event their lag counts (%s%s): "
            "a cap of job.max_offsets_per_trigger below a poll's records lets the metadata "
            "topic fall a poll behind, or a metadata event was rejected; see docs/deciding.md",
            batch_id, n, ", ".join(f"{r['group']} by ts {r['event_ts']}" for r in named),
            ", ..." if n > len(named) else "")
        if self.metrics is not None:
            self.metrics.observe_missing_metadata(n)

    def _observe(self, batch: DataFrame, n_recs: int, n_rejected: int) -> None:
        """The batch's figures to the metrics, once its writes are done (small collects of
        what it wrote)."""
        try:
            if n_rejected:
                reason = F.get_json_object("rejected", "$.reason").alias("reason")
                reasons = (batch.filter(F.col("kind") == "rejected")
                           .groupBy(reason).count().collect())
                self.metrics.observe_rejected({r["reason"]: r["count"] for r in reasons})
            if n_recs:
                recs = batch.filter(F.col("kind") == "recommendation")
                rows = recs.select(*METRIC_COLUMNS).collect()
                self.metrics.observe_recommendations([r.asDict() for r in rows])
        except Exception:  # the batch is written; its metrics are not worth failing it
            log.warning("metrics of the batch not updated", exc_info=True)

    def _append(self, df: DataFrame, table: str, batch_id: int, chars: int) -> None:
        location = self.cfg.table_path(table)
        # an older table keeps its types
        for column, kind in delta_tables.KEPT_TYPES.get(location, {}).items():
            df = df.withColumn(column, F.col(column).cast(kind))
        local = local_path(location)
        if (self.driver is not None and local is not None and self.driver.can_append(local)
                and chars <= MAX_BYTES):
            try:
                self.driver.append(local, df.toArrow(), f"{self.app}/{table}", batch_id)
                return
            except Refused:
                pass
        faults.hit("spark-delta:before-commit", batch_id)
        (df.write.format("delta").mode("append")
         .option("txnAppId", f"{self.app}/{table}").option("txnVersion", batch_id)
         .save(location))
        faults.hit("spark-delta:after-commit", batch_id)

    def _send_feed(self, recs: DataFrame) -> None:
        (feed_rows(recs).select(F.col("group").alias("key"), F.col("feed_value").alias("value"))
         .write.format("kafka").options(**(FEED_PRODUCER_DEFAULTS | spark_options(self.cfg.kafka)))
         .option("topic", self.cfg.kafka.trigger_topic).save())


def feed_rows(recs: DataFrame) -> DataFrame:
    """The recommendations to publish: those of the PUBLISHED_MODES (never ``observe``)."""
    return recs.filter(F.col("mode").isin(*PUBLISHED_MODES))


def recommendation_rows(batch: DataFrame, batch_id: int) -> DataFrame:
    return batch.filter(F.col("kind") == "recommendation").select(
        F.lit(batch_id).cast("long").alias("batch_id"),
        "group", "version", "recommendation_id",
        F.timestamp_millis("event_ts").alias("event_time"),
        "generation",
        F.split("triggers", ",").alias("triggers"),
        "trigger_details", "assignor",
        F.from_json("assignment", ASSIGNMENT_TYPE).alias("assignment"),
        "before_max_lag", "after_max_lag", finite("before_imbalance"), finite("after_imbalance"),
        finite("lower_bound"), "before_cross_rack", "after_cross_rack", "partitions_moved",
        "lag_moved",
        F.from_json("stuck_partitions", STUCK_TYPE).alias("stuck_partitions"),
        "mode", *(finite(c) for c in LAG_SECONDS_COLUMNS),
        F.from_json("member_capacity", CAPACITY_TYPE).alias("member_capacity"),
        "rack_placement", "serving",
        F.from_json("member_figures", MEMBER_FIGURES_TYPE).alias("member_figures"),
        F.from_json("hot_partitions", HOT_TYPE).alias("hot_partitions"),
    )


def finite(column: str):
    """A double column with every value that is not finite (NaN, infinite) as null: the stateful
    step emits none, and no table row ever holds one."""
    c = F.col(column)
    not_finite = F.isnan(c) | (F.abs(c) == float("inf"))
    return F.when(not_finite, F.lit(None).cast("double")).otherwise(c).alias(column)


def rejected_rows(batch: DataFrame, batch_id: int) -> DataFrame:
    rejected = batch.filter(F.col("kind") == "rejected").select(
        "group", F.from_json("rejected", validate.REJECTED_SCHEMA).alias("r"))
    return rejected.select(
        F.lit(batch_id).cast("long").alias("batch_id"),
        "group", "r.reason", "r.raw_value", "r.source_topic", "r.source_partition",
        "r.source_offset",
        F.timestamp_millis("r.kafka_ts").alias("kafka_timestamp"),
    )

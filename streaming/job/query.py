"""Assemble and start the streaming query.

    Kafka (lag + metadata topics) -> parse + validate -> watermark on event time
      -> groupBy(bucket of group).applyInPandasWithState(update, append, EventTimeTimeout)
         (job.state_buckets buckets, see buckets.py; 0: groupBy(group), see stateful.py)
      -> foreachBatch: rejected_events + recommendations (Delta, idempotent) + trigger feed (Kafka)

:func:`start` takes the checkpoint's lease (one job per checkpoint), checks the checkpoint's state
layout, creates or checks the tables and reads the version floors before the query starts;
:func:`run` keeps the query going through faults that heal (see supervisor.py).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from streaming import exporter
from streaming.config import SECRET_HINTS, Config
from streaming.contracts.tables import RECOMMENDATIONS
from streaming.job import buckets, convert, sinks, stateful, validate
from streaming.job.progress import RECENT_LINES, ProgressPrinter
from streaming.kafka_clients import factories as kafka_clients
from streaming.kafka_clients.properties import spark_options
from streaming.operations import delta_tables, faults, hfs, recover
from streaming.operations.lease import Lease
from streaming.operations.stopping import Totals, stop_at_boundary
from streaming.operations.supervisor import Attempt, supervise

log = logging.getLogger(__name__)

CHECKPOINT = "rebalancer"
CHECKPOINT_FILES = "spark.sql.streaming.checkpointFileManagerClass"
FILE_SYSTEM_FILES = ("org.apache.spark.sql.execution.streaming.checkpointing."
                     "FileSystemBasedCheckpointFileManager")


# Consumer settings of Spark's Kafka source unless [kafka.options] says otherwise. A task reads up
# to the batch's end offset; the fetch that reaches it finds no more data and the broker holds it
# for fetch.max.wait.ms (500 ms by default) before answering, so every batch paid ~0.5 s per wave of
# tasks (measured: a 101k-record batch 1.8 s -> 0.3 s). Larger polls cut per-poll overhead.
SOURCE_CONSUMER_DEFAULTS = {"kafka.fetch.max.wait.ms": "10", "kafka.max.poll.records": "10000"}


def source(spark: SparkSession, cfg: Config) -> DataFrame:
    reader = (
        spark.readStream.format("kafka")
        .options(**(SOURCE_CONSUMER_DEFAULTS | spark_options(cfg.kafka)))
        .option("subscribe", f"{cfg.kafka.lag_topic},{cfg.kafka.metadata_topic}")
        .option("startingOffsets", cfg.job.starting_offsets)
        .option("failOnDataLoss", str(cfg.job.fail_on_data_loss).lower())
    )
    if cfg.job.max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", cfg.job.max_offsets_per_trigger)
    return reader.load()


def pipeline(spark: SparkSession, cfg: Config,
             version_floors: dict[str, int] | None = None) -> DataFrame:
    events = validate.parse(source(spark, cfg), cfg.job.max_value_bytes,
                            int(cfg.job.max_clock_skew_s * 1000), cfg.kafka.lag_topic)
    watermarked = events.withWatermark("event_time", cfg.job.watermark_delay)
    # The watermark follows event_time. Before the stateful step the column is replaced by a null
    # one that keeps its watermark marker (event-time timeouts require one): Spark's late-row filter
    # reads that column, so no row is dropped there, and the function rejects late rows itself
    # (reason "late") instead of letting them vanish.
    marker = watermarked.schema["event_time"].metadata
    watermarked = watermarked.select(
        *(c for c in watermarked.columns if c != "event_time"),
        F.lit(None).cast("timestamp").alias("event_time", metadata=marker))
    timeout_ms = int(cfg.job.group_timeout_s * 1000)
    topics = {"lag_topic": cfg.kafka.lag_topic, "metadata_topic": cfg.kafka.metadata_topic}
    n = cfg.job.state_buckets
    if n > 0:
        # the same bucket as buckets.bucket_of: CRC-32 of the name's UTF-8 bytes, modulo n (a column
        # of its own: applyInPandasWithState does not resolve a grouping expression's alias)
        bucket = F.pmod(F.crc32(F.col("group").cast("binary")), F.lit(n)).cast("int")
        grouped = watermarked.withColumn("bucket", bucket).groupBy("bucket")
        update = buckets.make_update(cfg.policy, timeout_ms, n, version_floors, **topics)
    else:
        grouped = watermarked.groupBy("group")
        update = stateful.make_update(cfg.policy, timeout_ms, version_floors, **topics)
    return grouped.applyInPandasWithState(faults.in_worker(update), convert.ROW_SCHEMA,
                                          stateful.STATE_SCHEMA, "append", "EventTimeTimeout")


def ensure_topics(cfg: Config) -> None:
    """The event topics and the compacted trigger feed, created if missing."""
    kafka_clients.ensure_rebalancer_topics(cfg)


def checkpoint_files(spark: SparkSession, cfg: Config, checkpoint: str) -> None:
    """A local checkpoint's files go through Hadoop's FileSystem API, not FileContext (Spark's
    default), unless the configuration names a manager. On the local file system the two are
    alike where it matters: each renames a finished temporary file into place after checking the
    name is free (Hadoop has no atomic rename-unless-present there: one writer is the lease's
    guarantee, :mod:`streaming.operations.hfs` says the same of the side files), and moves the
    checksum file after it. FileContext first reads each file's link status, which Hadoop's
    local implementation does by running ``readlink``: ~220 processes in a cold run of six
    batches, and a run ~3% longer (``benchmarks/results/start.txt``). Any other store keeps
    Spark's default."""
    if CHECKPOINT_FILES in cfg.spark.conf:
        return
    if hfs.is_local(spark, checkpoint):
        spark.conf.set(CHECKPOINT_FILES, FILE_SYSTEM_FILES)
    else:
        spark.conf.unset(CHECKPOINT_FILES)


def start(spark: SparkSession, cfg: Config, available_now: bool = False,
          checkpoint: str | None = None,
          lease: Lease | None = None) -> tuple[StreamingQuery, ProgressPrinter]:
    """Start the query. Without ``lease`` it takes the checkpoint's own, given back when
    the query ends."""
    checkpoint = checkpoint or cfg.checkpoint_path(CHECKPOINT)
    own = lease is None
    lease = lease or Lease(spark, checkpoint, cfg.job.lease_timeout_s).acquire()
    try:
        checkpoint_files(spark, cfg, checkpoint)
        buckets.check_layout(spark, checkpoint, cfg.job.state_buckets)
        ensure_topics(cfg)
        faults.hit("tables:before-create")
        created = sinks.create_tables(spark, cfg, checkpoint)
        faults.hit("tables:after-create")
        floors = delta_tables.version_floors(spark, cfg, checkpoint,
                                             fresh=RECOMMENDATIONS in created)
        metrics = exporter.for_job(cfg)  # None unless metrics.enabled; one server for every restart
        if metrics is not None:
            metrics.serving(checkpoint)
        writer = sinks.BatchWriter(cfg, recover.app_id(checkpoint, spark, cfg), lease, metrics)
        printer = ProgressPrinter(writer, cfg.job.query_name, metrics=metrics,
                                  state_keys="group buckets" if cfg.job.state_buckets else "groups")
        stream = (
            pipeline(spark, cfg, floors).writeStream.queryName(cfg.job.query_name)
            .option("checkpointLocation", checkpoint)
            .outputMode("append")
            .foreachBatch(writer)
        )
        stream = stream.trigger(availableNow=True) if available_now else stream.trigger(
            processingTime=cfg.job.trigger_interval)
        log.info("starting query %s (checkpoint %s, kafka %s)", cfg.job.query_name, checkpoint,
                 cfg.kafka.bootstrap_servers)
        spark.streams.addListener(printer)
        faults.hit("query:before-start")
        try:
            query = stream.start()
        except BaseException:
            spark.streams.removeListener(printer)
            raise
    except BaseException:
        if own:
            lease.release()
        raise
    if own:
        lease.keep_fresh(lambda: query.isActive)
    return query, printer


def run(spark: SparkSession, cfg: Config, available_now: bool = False,
        checkpoint: str | None = None, stop: threading.Event | None = None,
        now: threading.Event | None = None,
        totals: Totals | None = None) -> list[dict]:
    """Run the query until it ends (``available_now``), is interrupted or ``stop`` is set;
    return the last :data:`~streaming.job.progress.RECENT_LINES` progress lines (``totals``, when
    given, counts every completed batch).

    ``stop`` stops the query at the next batch boundary, waiting at most ``job.stop_grace_s``
    for the running batch (``now`` set: at once). A failure that can heal (a broker outage)
    restarts the query from its checkpoint after a backoff; one that cannot, or
    ``job.max_restarts`` in a row without a completed batch, raises a ``RebalancerError``. The
    lease is given back however it ends."""
    stop = stop or threading.Event()
    now = now or threading.Event()
    totals = totals if totals is not None else Totals()
    checkpoint = checkpoint or cfg.checkpoint_path(CHECKPOINT)
    lease = Lease(spark, checkpoint, cfg.job.lease_timeout_s).acquire()
    batches: deque[dict] = deque(maxlen=RECENT_LINES)

    def attempt() -> Attempt:
        query, printer = start(spark, cfg, available_now, checkpoint, lease=lease)
        try:
            while not query.awaitTermination(1):
                if stop.is_set():  # a batch still running at the stop is said in the stop line
                    totals.interrupted = not stop_at_boundary(query, cfg.job.stop_grace_s, now)
        except KeyboardInterrupt:
            # in-process callers without the signal handlers of `rebalancer run`
            query.stop()
        except Exception:  # the query failed: its exception() says why
            pass
        finally:
            _drain(query, printer, now)
            spark.streams.removeListener(printer)
            batches.extend(printer.batches)
            totals.merge(printer.totals)
        progressed = any(p.get("numInputRows", 0) > 0 for p in query.recentProgress)
        return Attempt(error=query.exception(), progressed=progressed)

    secrets = [v for k, v in cfg.kafka.options.items() if any(h in k.lower() for h in SECRET_HINTS)]
    try:
        supervise(attempt, max_restarts=cfg.job.max_restarts, base_s=cfg.job.retry_backoff_s,
                  max_s=cfg.job.retry_backoff_max_s, secrets=secrets, sleep=stop.wait,
                  stopped=stop.is_set)
    finally:
        lease.release()
    return list(batches)


def ran_a_batch(progress: dict) -> bool:
    """Whether a query progress is of a batch that ran (its sink was called: ``addBatch`` timed)
    rather than of a trigger that found nothing new."""
    return "addBatch" in (progress.get("durationMs") or {})


def _drain(query: StreamingQuery, printer: ProgressPrinter, now: threading.Event,
           timeout_s: float = 5.0) -> None:
    """Wait until the listener has the query's last progress (events reach it asynchronously), at
    most ``timeout_s``, so that the lines and totals cover every batch the query completed. A last
    progress that ran no batch (an available-now start with nothing new: Spark says it is idle,
    with no progress event) has nothing to wait for; it used to cost the whole ``timeout_s``."""
    try:
        last = query.lastProgress
    except Exception:  # the session is gone
        return
    if not last or not ran_a_batch(last):
        return
    deadline = time.monotonic() + timeout_s
    while (printer.totals.last_batch != last["batchId"] and time.monotonic() < deadline
           and not now.is_set()):
        time.sleep(0.05)

"""The one SparkSession factory everything uses.

Local mode by default, with the cached Kafka-source and Delta jars on ``spark.jars``, Delta's SQL
extension and catalog, the RocksDB state store, few shuffle partitions and quiet logs. Every setting
can be overridden from ``[spark.conf]`` in the configuration file or ``--conf spark.x=y``.

The configured ``spark.master`` applies only when nothing else chose one: a running SparkContext,
``spark-submit --master`` (the driver JVM already holds it) or ``--master`` in
``PYSPARK_SUBMIT_ARGS`` win. The local-only settings (loopback driver, 4 shuffle partitions, driver
memory, no UI) apply only to a ``local`` master. On a cluster, run the job with
``spark-submit --jars`` and ``spark.use_cached_jars=false``
(docs/deploying.md#running-on-a-spark-cluster); then nothing here adds jars.
"""

from __future__ import annotations

import logging
import os
import shlex
import sys
from collections.abc import Mapping
from typing import NamedTuple

from streaming import catalog, jvm
from streaming.config import Config
from streaming.paths import CONF_DIR

log = logging.getLogger(__name__)

ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
STOP_TIMEOUT_MS = 30_000
"""How long a query's ``stop()`` waits for its stream thread before it raises (Spark's default:
forever), so a job stopped at once by a second signal ends within a bound
(:mod:`streaming.operations.stopping`)."""

# Sensible on one machine only: a cluster's driver must be reachable from its executors, and its
# sizes are the cluster operator's to choose.
LOCAL_ONLY = {
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "4",
    "spark.ui.enabled": "false",
    "spark.driver.memory": "2g",
    "spark.sql.adaptive.enabled": "false",
    # Delta's VACUUM lists the table in a job of this many tasks (Spark's default, 10,000): on two
    # local cores that scheduling alone took 1-2 minutes per table of a few files
    # (tests/integration/test_maintain)
    "spark.sql.sources.parallelPartitionDiscovery.parallelism": "4",
}


class Master(NamedTuple):
    url: str
    source: str
    """Where it comes from: "configuration", "PYSPARK_SUBMIT_ARGS" or "running" (spark-submit's
    driver JVM or an active SparkContext)."""

    @property
    def local(self) -> bool:
        return is_local(self.url)

    @property
    def ours(self) -> bool:
        """Whether the session builder must set it (nothing else did)."""
        return self.source == "configuration"


def is_local(master: str) -> bool:
    return master.startswith("local")


def submit_args_master(submit_args: str) -> str | None:
    """The master named in spark-submit style arguments (``--master X``, ``--conf spark.master=X``),
    if any."""
    try:
        words = shlex.split(submit_args)
    except ValueError:  # unbalanced quotes: spark-submit would refuse them too
        return None
    found = None
    for i, word in enumerate(words):
        value = words[i + 1] if i + 1 < len(words) else ""
        if word.startswith("--master="):
            found = word.split("=", 1)[1]
        elif word == "--master" and value:
            found = value
        elif word.startswith("--conf=spark.master="):
            found = word.split("=", 2)[2]
        elif word in ("--conf", "-c") and value.startswith("spark.master="):
            found = value.split("=", 1)[1]
    return found or None


def choose_master(configured: str, env: Mapping[str, str], running: str | None) -> Master:
    """The master Spark will use: a running one, else PYSPARK_SUBMIT_ARGS', else the configured
    one."""
    if running:
        return Master(running, "running")
    submitted = submit_args_master(env.get("PYSPARK_SUBMIT_ARGS", ""))
    if submitted:
        return Master(submitted, "PYSPARK_SUBMIT_ARGS")
    return Master(configured, "configuration")


def _running_master() -> str | None:
    """The master of an active SparkContext, or the one spark-submit gave the already running driver
    JVM.

    Never starts a JVM: without a gateway (PYSPARK_GATEWAY_PORT, set by spark-submit) there is none
    to ask, and starting one here would lose the settings that only apply at JVM launch.
    """
    from pyspark import SparkConf, SparkContext

    active = SparkContext._active_spark_context
    if active is not None:
        return active.master
    if os.environ.get("PYSPARK_GATEWAY_PORT"):
        # connects to that gateway; SparkConf() then reads the JVM's settings
        SparkContext._ensure_initialized()
        return SparkConf().get("spark.master", None)
    return None


# Validation (streaming.job.validate) is one wide projection; Spark fuses it into one generated
# method, `processNext` of a whole-stage codegen iterator, 23,505 bytes of bytecode. HotSpot skips
# methods over 8,000 bytes unless told (1M lag events parsed in 5.4 s with the limit, 3.4 s without,
# local[2]). Past that limit this one still fails to compile: C1's profiled tier runs out of virtual
# registers and C2 out of nodes (MaxNodeLimit, 80,000). Then, as the compile queue falls, C1's
# unprofiled tier takes it or HotSpot interprets it for every record, for the JVM's life (36% of the
# JVM's samples in a dense run's steady state, JFR from launch; benchmarks/results/job.txt, session
# 23). A larger node budget for Spark's generated iterators only lets C2 compile it (~7 s of a
# compiler thread); `quiet` keeps the command from printing at JVM start.
HUGE_METHODS = (
    "-XX:-DontCompileHugeMethods -XX:CompileCommand=quiet "
    "-XX:CompileCommand=MaxNodeLimit,*GeneratedIteratorForCodegenStage*.processNext,240000")


def spark_defaults(cfg: Config, local: bool | None = None) -> dict[str, str]:
    """The settings this project starts Spark with, before the user's overrides.

    ``local``: whether the master is a local one (default: judged from the configured master).
    """
    local = is_local(cfg.spark.master) if local is None else local
    log4j = f"-Dlog4j2.configurationFile=file:{CONF_DIR / 'log4j2.properties'}"
    conf = {
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.sql.streaming.stateStore.providerClass": ROCKSDB,
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
        # one memory budget for all RocksDB instances of the executor (memtables + block cache),
        # instead of each state store partition sizing its own; the per-group state is small
        "spark.sql.streaming.stateStore.rocksdb.boundedMemoryUsage": "true",
        "spark.sql.streaming.stateStore.rocksdb.maxMemoryUsageMB": "256",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.streaming.stopTimeout": str(STOP_TIMEOUT_MS),
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.databricks.delta.snapshotPartitions": "2",
        "spark.sql.streaming.minBatchesToRetain": "20",
        # The Arrow batches to the stateful step cut by records only (maxRecordsPerBatch, 10,000):
        # with a byte limit, Spark 4.2 sizes the batch after every row it writes
        # (ListVector.setValueCount on the readings column: 13% of the JVM's time in a dense run,
        # benchmarks/results/job.txt); Int.MaxValue is Spark's own "no limit", which skips that. It
        # bounded nothing the step relies on: the update functions read a key's chunks whole
        # (stateful.read_columns), so a call holds its rows however they are batched.
        "spark.sql.execution.arrow.maxBytesPerBatch": str(2**31 - 1),
        # PySpark's DataFrame debugging records the Python call site of every Column it builds:
        # seven more py4j round trips each: 1.6 times the time to build the job's plan at every
        # start (`python -m benchmarks.start`). All it adds is that call site in an analysis
        # error's message.
        "spark.python.sql.dataFrameDebugging.enabled": "false",
        # PySpark's worker daemon, run with the installed pyspark's compiled modules rather than
        # its zip's sources (streaming.job.python_daemon says why)
        "spark.python.daemon.module": "streaming.job.python_daemon",
    }
    if local:
        # the log4j file is on this machine only; a cluster's executors keep their own logging (and
        # JVM flags: docs/deploying.md's cluster recipe gives them HUGE_METHODS too)
        options = f"{log4j} {HUGE_METHODS}"
        conf |= LOCAL_ONLY | {"spark.driver.extraJavaOptions": options,
                              "spark.executor.extraJavaOptions": options}
    conf |= catalog.embedded_metastore(cfg, conf.get("spark.driver.extraJavaOptions", ""))
    if cfg.spark.use_cached_jars:
        conf["spark.jars"] = ",".join(jvm.spark_jars())
    return conf


# -> pyspark.sql.SparkSession (imported lazily: pyspark is slow to import)
def get_spark(cfg: Config):
    """Build (or return the running) SparkSession for ``cfg``."""
    master = choose_master(cfg.spark.master, os.environ, _running_master())
    if master.local:
        # Python workers must run this interpreter, which has pandas/pyarrow and this project. On a
        # cluster the executors' Python is PYSPARK_PYTHON / spark.pyspark.python, as Spark has it.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    from streaming.kafka_clients.security import register_secrets

    register_secrets(cfg.kafka.options)  # py4j logs the commands that carry Spark's Kafka options
    builder = SparkSession.builder.appName(cfg.spark.app_name)
    if master.ours:
        builder = builder.master(master.url)
    elif master.url != cfg.spark.master:
        print(f"Spark master {master.url} (from {master.source}); the configured "
              f"{cfg.spark.master} is not used", flush=True)
    for key, value in (spark_defaults(cfg, master.local) | cfg.spark.conf).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(cfg.spark.log_level)
    refuse_strangers_quietly(spark.sparkContext)
    return spark


def refuse_strangers_quietly(sc) -> None:
    """PySpark's accumulator server listens on a loopback port that any local process can reach. A
    connection without its token (another process dialling a port number the OS had handed on)
    raised in the server's thread, and socketserver printed that traceback into the job's log as
    if the job had failed. It is one warning line now; the server goes on serving, and any other
    error in it still prints in full."""
    server = getattr(sc, "_accumulatorServer", None)
    if server is None:
        return
    printed = server.handle_error

    def handle_error(request, client_address) -> None:
        error = sys.exc_info()[1]
        if isinstance(error, ValueError) and "token" in str(error):
            log.warning("refused a connection to PySpark's accumulator server from %s: %s",
                        client_address, error)
        else:
            printed(request, client_address)

    server.handle_error = handle_error

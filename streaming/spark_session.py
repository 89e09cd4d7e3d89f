"""The one SparkSession factory everything uses.

Local mode by default, with the cached Kafka-source and Delta jars on ``spark.jars``, Delta's SQL
extension and catalog, the RocksDB state store, few shuffle partitions and quiet logs. Every setting
can be overridden from ``[spark.conf]`` in the configuration file or ``--conf spark.x=y``.

On a cluster, run the same job with ``spark-submit --packages`` and ``spark.use_cached_jars=false``
(see the README); then nothing here adds jars.
"""

from __future__ import annotations

import os
import sys

from streaming import jvm
from streaming.config import Config
from streaming.paths import CONF_DIR

ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


def spark_defaults(cfg: Config) -> dict[str, str]:
    """The settings this project starts Spark with, before the user's overrides."""
    local = cfg.spark.master.startswith("local")
    log4j = f"-Dlog4j2.configurationFile=file:{CONF_DIR / 'log4j2.properties'}"
    conf = {
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.sql.streaming.stateStore.providerClass": ROCKSDB,
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
        # one memory budget for all RocksDB instances of the executor (memtables + block cache), instead of
        # each state store partition sizing its own; the per-group state is small
        "spark.sql.streaming.stateStore.rocksdb.boundedMemoryUsage": "true",
        "spark.sql.streaming.stateStore.rocksdb.maxMemoryUsageMB": "256",
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.extraJavaOptions": log4j,
        "spark.executor.extraJavaOptions": log4j,
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.databricks.delta.snapshotPartitions": "2",
        "spark.sql.streaming.minBatchesToRetain": "20",
    }
    if local:
        conf |= {
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.sql.shuffle.partitions": "4",
            "spark.default.parallelism": "4",
            "spark.ui.enabled": "false",
            "spark.driver.memory": "2g",
            "spark.sql.adaptive.enabled": "false",
        }
    if cfg.spark.use_cached_jars:
        conf["spark.jars"] = ",".join(jvm.spark_jars())
    return conf


def get_spark(cfg: Config):  # -> pyspark.sql.SparkSession (imported lazily: pyspark is slow to import)
    """Build (or return the running) SparkSession for ``cfg``."""
    # Python workers must run this interpreter, which has pandas/pyarrow and this project.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if cfg.spark.master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(cfg.spark.master).appName(cfg.spark.app_name)
    for key, value in (spark_defaults(cfg) | cfg.spark.conf).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(cfg.spark.log_level)
    return spark

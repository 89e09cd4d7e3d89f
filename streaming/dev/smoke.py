"""A smoke pipeline through the real stack: kafka-python -> Kafka -> Spark's Kafka source -> Delta.

JSON records go into a topic; a streaming query with the ``availableNow`` trigger parses them with
``from_json`` and appends them to a Delta table; the table is read back and compared record for
record. It proves the broker, the connectors and the jars fit together.
"""

from __future__ import annotations

import json
import shutil
import time
import uuid
from dataclasses import dataclass

from streaming.config import Config
from streaming.kafka_clients import factories as kafka_clients
from streaming.kafka_clients.properties import spark_options

SCHEMA = "id BIGINT, name STRING, value DOUBLE, tags ARRAY<STRING>"


@dataclass(frozen=True)
class SmokeResult:
    topic: str
    table: str
    produced: int
    written: int
    matching: bool
    seconds: float


def make_records(n: int) -> list[dict]:
    return [{"id": i, "name": f"record-{i}", "value": i * 0.5, "tags": [f"t{i % 3}"]}
            for i in range(n)]


def produce(cfg: Config, topic: str, records: list[dict], partitions: int = 3) -> None:
    kafka_clients.ensure_topics(cfg,
                                {topic: {"num_partitions": partitions, "replication_factor": 1}})
    prod = kafka_clients.producer(cfg)
    try:
        for r in records:
            prod.send(topic, key=str(r["id"]).encode(), value=json.dumps(r).encode())
        prod.flush(60)
    finally:
        prod.close()


def kafka_to_delta(spark, cfg: Config, topic: str, table: str, checkpoint: str) -> None:
    """Stream everything now in ``topic`` into the Delta table at ``table`` and stop."""
    from pyspark.sql import functions as F

    source = (
        spark.readStream.format("kafka")
        .options(**spark_options(cfg.kafka))
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .load()
    )
    parsed = source.select(F.from_json(F.col("value").cast("string"), SCHEMA).alias("r"),
                           "partition", "offset")
    query = (
        parsed.select("r.*", "partition", "offset")
        .writeStream.format("delta")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start(table)
    )
    query.awaitTermination()
    if query.exception():
        raise query.exception()


def run(spark, cfg: Config, n: int = 1000) -> SmokeResult:
    start = time.monotonic()
    run_id = uuid.uuid4().hex[:8]
    topic = f"rebalancer.smoke.{run_id}"
    table = cfg.table_path(f"smoke-{run_id}")
    checkpoint = cfg.checkpoint_path(f"smoke-{run_id}")
    records = make_records(n)
    produce(cfg, topic, records)
    kafka_to_delta(spark, cfg, topic, table, checkpoint)
    rows = spark.read.format("delta").load(table).select("id", "name", "value", "tags").collect()
    got = sorted((r["id"], r["name"], r["value"], list(r["tags"])) for r in rows)
    want = sorted((r["id"], r["name"], r["value"], r["tags"]) for r in records)
    return SmokeResult(topic, table, len(records), len(rows), got == want, time.monotonic() - start)


def cleanup(result: SmokeResult, cfg: Config) -> None:
    from streaming.paths import local_path

    # local outputs only (paths and file: URIs); on an object store or HDFS they stay where they
    # were written
    for location in (result.table, cfg.checkpoint_path(f"smoke-{result.table.rsplit('-', 1)[-1]}")):
        local = local_path(location)
        if local is not None:
            shutil.rmtree(local, ignore_errors=True)

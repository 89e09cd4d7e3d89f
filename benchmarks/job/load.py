"""The load: lag events written with Spark's Kafka sink, members events with kafka-python."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from streaming import config
from streaming.contracts import events as ev
from streaming.job import query
from streaming.kafka_clients import factories as kafka_clients
from streaming.kafka_clients.properties import spark_options

from .configuration import Scale

if TYPE_CHECKING:
    from pyspark.sql import Column


def write_polls(spark, cfg: config.Config, polls: list[tuple[int, Column]], groups: int,
                partitions: int, dense: bool = False) -> int:
    """Write each poll's lag events with Spark's Kafka sink, poll by poll so a group's polls stay in
    order on its partition. ``polls``: (ts, skewed) where ``skewed`` is a boolean column expression
    over the group number ``g``. Group g reads topic-(g % 50); its lag is 100-149 per partition;
    when skewed, partitions 0-4 (its first member's) hold 200 x ``partitions`` each (at least
    20,000): a skew of the same size whatever the partition count (with a fixed 20,000, a group of
    10,000 partitions never reads as skewed: max/mean 1.2). Returns the number of events (the job
    validates them like any other: a rejected one would show in the progress lines and the
    ``rejected`` count). ``dense``: one ``lag_dense`` event per group and poll instead
    (:func:`write_dense_polls`)."""
    from pyspark.sql import functions as F

    if dense:
        return write_dense_polls(spark, cfg, polls, groups, partitions)
    base = spark.range(groups * partitions).select(
        (F.col("id") / partitions).cast("int").alias("g"),
        (F.col("id") % partitions).cast("int").alias("p"))
    for ts, skewed in polls:
        committed = F.lit(ts // 10) + F.col("p")
        hot = F.lit(max(20_000, 200 * partitions))
        lag = F.when(skewed & (F.col("p") < 5), hot).otherwise(
            100 + (F.col("p") * 7 + F.col("g")) % 50)
        group = F.format_string("group-%04d", "g")
        event = F.struct(
            F.lit(ev.LAG).alias("type"), F.lit(ts).alias("ts"), group.alias("group"),
            F.format_string("topic-%02d", F.col("g") % 50).alias("topic"),
            F.col("p").alias("partition"), committed.cast("long").alias("committed_offset"),
            (committed + lag).cast("long").alias("end_offset"))
        (base.select(group.alias("key"), F.to_json(event).alias("value"))
         .write.format("kafka").options(**spark_options(cfg.kafka))
         .option("topic", cfg.kafka.lag_topic).save())
    return len(polls) * groups * partitions


def write_dense_polls(spark, cfg: config.Config, polls: list[tuple[int, Column]], groups: int,
                      partitions: int) -> int:
    """The same polls and offsets as :func:`write_polls`, as one ``lag_dense`` event per group and
    poll."""
    from pyspark.sql import functions as F

    base = spark.range(groups).select(F.col("id").cast("int").alias("g"))
    group = F.format_string("group-%04d", "g")
    for ts, skewed in polls:
        (base.select(group.alias("key"),
                     F.to_json(_dense_event(ts, skewed, partitions)).alias("value"))
         .write.format("kafka").options(**spark_options(cfg.kafka))
         .option("topic", cfg.kafka.lag_topic).save())
    return len(polls) * groups


def _dense_event(ts: int, skewed: Column, partitions: int) -> Column:
    """Group ``g``'s poll at ``ts`` as a ``lag_dense`` struct, offsets as :func:`write_polls` gives
    them."""
    from pyspark.sql import functions as F

    hot = F.lit(max(20_000, 200 * partitions))
    parts = F.sequence(F.lit(0), F.lit(partitions - 1))
    committed = F.transform(parts, lambda p: (F.lit(ts // 10) + p).cast("long"))
    ends = F.transform(parts, lambda p: (F.lit(ts // 10) + p + F.when(skewed & (p < 5), hot)
                                         .otherwise(100 + (p * 7 + F.col("g")) % 50)).cast("long"))
    return F.struct(F.lit(ev.LAG_DENSE).alias("type"), F.lit(ts).alias("ts"),
                    F.format_string("group-%04d", "g").alias("group"),
                    F.format_string("topic-%02d", F.col("g") % 50).alias("topic"),
                    parts.alias("partitions"), committed.alias("committed_offsets"),
                    ends.alias("end_offsets"))


def members_events(ts: int, groups: int, partitions: int, consumers: int = 4) -> list[dict]:
    """One ``members`` event per group: ``consumers`` range members splitting its topic's
    partitions."""
    out = []
    for g in range(groups):
        per = partitions // consumers
        members = [ev.member_entry(f"m-{c}", [f"topic-{g % 50:02d}"],
                                   [(f"topic-{g % 50:02d}", p)
                                    for p in range(c * per, (c + 1) * per)],
                                   client_id=f"c-{c}", rack="abc"[c % 3]) for c in range(consumers)]
        out.append(ev.members_event(ts, f"group-{g:04d}", 1, "range", members))
    return out


def produce(cfg: config.Config, events: list[dict]) -> float:
    """Send ``events`` with kafka-python to their topics; the seconds it took."""
    prod = kafka_clients.producer(cfg, linger_ms=50, batch_size=512 * 1024, acks=1,
                                  enable_idempotence=False)
    start = time.monotonic()
    try:
        for e in events:
            key, value = ev.encode(e)
            prod.send(ev.topic_for(e, cfg.kafka.lag_topic, cfg.kafka.metadata_topic), key=key,
                      value=value)
        prod.flush(300)
    finally:
        prod.close()
    return time.monotonic() - start


def write_scale(spark, cfg: config.Config, scale: Scale, polls: int, dense: bool = False) -> None:
    """The throughput runs' input of one scale: members events, then ``polls`` polls of every group
    (``dense``: as ``lag_dense`` events)."""
    from pyspark.sql import functions as F

    query.ensure_topics(cfg)
    t0 = int(time.time() * 1000) - polls * 10_000
    produce(cfg, members_events(t0, scale.groups, scale.partitions))
    start = time.monotonic()
    n = write_polls(spark, cfg, [(t0 + i * 10_000, F.col("g") % 10 == 0) for i in range(polls)],
                    scale.groups, scale.partitions, dense)
    kind = "lag_dense" if dense else "lag"
    print(f"{scale.tag}: wrote {n:,} {kind} events + {scale.groups} members events in "
          f"{time.monotonic() - start:.1f}s", flush=True)

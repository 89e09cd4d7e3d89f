"""Parse and validate the events with Spark's own JSON functions; every rejected record gets a reason.

The rules are Spark column expressions, evaluated in the JVM: a valid lag event never leaves it for
Python until the stateful step. ``reject_reason`` is the first rule a record breaks, or null.

Rules, in order: value too large; not JSON; not a JSON object; missing/wrongly typed ``type``; unknown
type; missing/wrongly typed ``ts`` or ``group``; ``ts`` not positive; empty group; message key not the
group; then per type: lag (topic, partition, offsets present and typed; partition and offsets not
negative; end offset not below committed), members (generation, members list, a member without id,
an assigned entry that is not [topic, partition]), partitions (topic, partitions list, a negative
partition, replica racks not matching replicas).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from streaming.events import LAG, MEMBERS, PARTITIONS, SPARK_SCHEMA, TYPES


def _field(name: str, type_name: str) -> Column:
    """Reason for a missing or wrongly typed top-level field, else null."""
    return F.when(
        F.col(f"e.{name}").isNull(),
        F.when(F.get_json_object("value_str", f"$.{name}").isNull(), F.lit(f"missing field {name}"))
        .otherwise(F.format_string(f"field {name} is not {type_name}: %s",
                                   F.substring(F.get_json_object("value_str", f"$.{name}"), 1, 40))),
    )


def _for_type(kind: str, *reasons: Column) -> Column:
    return F.when(F.col("e.type") == kind, F.coalesce(*reasons))


def reject_reason(max_value_bytes: int) -> Column:
    e = "e."
    lag_rules = _for_type(
        LAG,
        _field("topic", "a string"), _field("partition", "an integer"),
        _field("committed_offset", "an integer"), _field("end_offset", "an integer"),
        F.when(F.col(e + "partition") < 0, F.format_string("negative partition %d", F.col(e + "partition"))),
        F.when(F.col(e + "committed_offset") < 0,
               F.format_string("negative committed_offset %d", F.col(e + "committed_offset"))),
        F.when(F.col(e + "end_offset") < F.col(e + "committed_offset"),
               F.format_string("end_offset %d below committed_offset %d", F.col(e + "end_offset"),
                               F.col(e + "committed_offset"))),
    )
    members_rules = _for_type(
        MEMBERS,
        _field("generation", "an integer"), _field("members", "a list of members"),
        F.when(F.exists(e + "members", lambda m: m["member_id"].isNull() | (m["member_id"] == "")),
               F.lit("a member has no member_id")),
        F.when(F.exists(e + "members", lambda m: F.exists(
            m["assigned"], lambda a: (F.size(a) != 2) | a[1].cast("int").isNull() | (a[1].cast("int") < 0))),
            F.lit("an assigned entry is not [topic, partition >= 0]")),
    )
    partitions_rules = _for_type(
        PARTITIONS,
        _field("topic", "a string"), _field("partitions", "a list of partitions"),
        F.when(F.exists(e + "partitions", lambda p: p["partition"].isNull() | (p["partition"] < 0)),
               F.lit("a partition number is missing or negative")),
        F.when(F.exists(e + "partitions", lambda p: F.size(F.coalesce(p["replica_racks"], F.array()))
                        != F.size(F.coalesce(p["replicas"], F.array()))),
               F.lit("replica_racks does not match replicas")),
    )
    return F.coalesce(
        F.when(F.length("value") > max_value_bytes,
               F.format_string("value of %d bytes exceeds %d", F.length("value"), F.lit(max_value_bytes))),
        F.when(F.col("value").isNull(), F.lit("empty value")),
        # from_json flags unparseable input in the corrupt-record column without a second parse; a record
        # with nothing parsed at all is not JSON, or JSON that is not an object
        F.when(F.col("e._corrupt_record").isNotNull() & F.col("e.type").isNull() & F.col("e.ts").isNull()
               & F.col("e.group").isNull(),
               F.when(~F.ltrim("value_str").startswith("{") & F.get_json_object("value_str", "$").isNotNull(),
                      F.lit("not a JSON object")).otherwise(F.lit("not valid JSON"))),
        _field("type", "a string"),
        F.when(~F.col(e + "type").isin(*TYPES), F.format_string("unknown type %s", F.col(e + "type"))),
        _field("ts", "an integer (epoch ms)"),
        _field("group", "a string"),
        F.when(F.col(e + "ts") <= 0, F.format_string("ts %d is not positive epoch milliseconds", F.col(e + "ts"))),
        F.when(F.col(e + "group") == "", F.lit("empty group")),
        F.when(F.col("key").isNotNull() & (F.col("key").cast("string") != F.col(e + "group")),
               F.lit("message key does not match group")),
        lag_rules, members_rules, partitions_rules,
        F.when(F.col("e._corrupt_record").isNotNull(), F.lit("a nested field has the wrong type")),
    )


REJECTED_SCHEMA = (
    "reason STRING, raw_value STRING, source_topic STRING, source_partition INT, source_offset LONG, kafka_ts LONG"
)
"""The ``detail`` of a rejected row: why, the raw value and where it came from (``kafka_ts``: epoch ms)."""


def parse(raw: DataFrame, max_value_bytes: int) -> DataFrame:
    """Kafka rows -> one narrow row per record, the columns the stateful step reads.

    ``group``, ``type`` (null when rejected), ``ts``, ``event_time`` (the watermark's column), ``topic``,
    and for lag events ``partition``, ``committed_offset``, ``end_offset``. ``detail`` is JSON: for a
    metadata event its own fields (generation, protocol, members or partitions, as parsed), for a rejected
    record :data:`REJECTED_SCHEMA`; null for lag events, the bulk. Few columns, because pyspark's
    applyInPandasWithState pays for every column of every group in every batch."""
    with_json = raw.select(
        "key", "value", "topic", "partition", "offset", "timestamp",
        F.col("value").cast("string").alias("value_str"),
    ).withColumn("e", F.from_json("value_str", SPARK_SCHEMA + ", _corrupt_record STRING",
                                  {"columnNameOfCorruptRecord": "_corrupt_record"}))
    checked = with_json.withColumn("reject_reason", reject_reason(max_value_bytes))
    ok = F.col("reject_reason").isNull()
    lag = ok & (F.col("e.type") == LAG)
    return checked.select(
        F.when(ok, F.col("e.group")).otherwise(F.coalesce(F.col("e.group"), F.col("key").cast("string"), F.lit("")))
        .alias("group"),
        F.when(ok, F.col("e.type")).alias("type"),
        F.when(ok, F.col("e.ts")).alias("ts"),
        # event time for the watermark and the group timeout; rejected rows get none, so they are never late
        F.when(ok, F.timestamp_millis(F.col("e.ts"))).alias("event_time"),
        F.when(ok, F.col("e.topic")).alias("topic"),
        F.when(lag, F.col("e.partition")).alias("partition"),
        F.when(lag, F.col("e.committed_offset")).alias("committed_offset"),
        F.when(lag, F.col("e.end_offset")).alias("end_offset"),
        F.when(lag, F.lit(None).cast("string"))
        .when(ok, F.to_json(F.struct(*(F.col(f"e.{c}").alias(c) for c in
                                       ("generation", "protocol", "members", "partitions")))))
        .otherwise(F.to_json(F.struct(
            F.col("reject_reason").alias("reason"), F.col("value_str").alias("raw_value"),
            F.col("topic").alias("source_topic"), F.col("partition").alias("source_partition"),
            F.col("offset").alias("source_offset"), F.unix_millis("timestamp").alias("kafka_ts"))))
        .alias("detail"),
    )

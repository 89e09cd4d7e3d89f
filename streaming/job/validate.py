"""Parse and validate the events with Spark expressions that cannot throw; every rejected record
gets a reason.

Spark 4 runs with ANSI mode on, where a cast of ``'1000.0'`` to INT, or ``timestamp_millis`` of a
huge number, raises and stops the query for good (a restart reads the same record again). So nothing
here casts or converts a value before it has been proven to fit: the value is parsed once as a
VARIANT with ``try_parse_json`` (null instead of an error), each field's JSON type is read exactly
with ``schema_of_variant`` (a number where a string belongs, ``1000.0`` or ``1e400`` where an
integer belongs, ``2**63`` where a LONG belongs are all told apart: only ``BIGINT`` is an integer
that fits a LONG), and values are read with ``try_variant_get``. ``reject_reason`` is the first rule
a record breaks, or null; the rules and their reason strings are all in this module (a metadata
event's in :mod:`streaming.job.metadata_rules`), in the order they are checked, each top-level field
read once into columns by :mod:`streaming.job.field_columns`:

- ``null value``, ``empty value``, ``value of N bytes exceeds M`` (the value is not even cast to a
  string, let alone parsed), ``value is not valid UTF-8``;
- ``not valid JSON`` (also NaN/Infinity literals and nesting deeper than the parser allows),
  ``duplicate key`` (at any depth: the VARIANT parser refuses them, a lenient parse tells them
  apart), ``not a JSON object``, ``trailing data after the JSON object`` (see :func:`_trailing`);
- ``type`` a string and one of the known types; ``ts`` an integer, positive, the record with a Kafka
  timestamp (not -1), ``ts`` at most ``job.max_clock_skew_s`` ahead of it
  (:mod:`streaming.job.event_time`); ``group`` a non-empty string of at most 32,767 characters (the
  protocol's limit) without control characters; the message key (when there is one) equal to the
  group;
- lag: ``topic`` a legal Kafka topic name ([a-zA-Z0-9._-], 1..249, not ``.``/``..``), ``partition``
  in 0..2**31-1, offsets in 0..2**63-1 with ``end_offset >= committed_offset``, ``no_commit`` a
  boolean, ``log_start_offset`` (optional) an integer in 0..``end_offset``;
- lag_dense: ``topic`` as for lag, then its shape and each entry by :mod:`streaming.job.dense`;
- either lag type: ``metadata_events`` (optional) an integer in 0..2**31-1;
- members: ``generation`` in -1..2**31-1, ``protocol`` a string or null, ``members`` a list of
  objects with a non-empty string ``member_id`` (unique in a whole event), optional string
  ids/host/rack, ``topics`` legal topic names, ``assigned`` entries ``[topic, partition]``, an
  optional ``load`` (:mod:`streaming.contracts.member_load`) with ``ts`` an integer >= 0, ``busy`` a
  number in 0..1, ``records_per_s`` one in 0..1e12, ``record_cost_s`` null or one in (0, 3600] and
  ``records_lag_min`` null or an integer in 0..2**63-1;
- partitions: ``topic``, ``partitions`` a list of objects with ``partition`` in 0..2**31-1
  (unique, and exactly 0..n-1 in a whole event: downstream the list is a partition count),
  ``leader`` a broker id or null, ``replicas`` broker ids (no null), ``replica_racks`` strings or
  null, one per replica;
- ``part``/``parts`` of a split metadata event (:mod:`streaming.contracts.event_parts`) integers
  with ``0 <= part < parts <= MAX_PARTS``;
- last, a lag event from the lag topic, a metadata event from the metadata topic (a row's type gives
  its topic).

The collector's ``lag`` and ``lag_dense`` events take fast paths (:mod:`streaming.job.canonical`),
judged by the same rules; anything else is parsed as a VARIANT. Event time
(:mod:`streaming.job.event_time`): ``ts`` may lag its Kafka timestamp by any amount (an old event
can only be late) but lead it by at most ``max_clock_skew_s``, and a record without one (-1) is
rejected, so one bad clock cannot carry the watermark into the future; late rows are the stateful
step's to reject (reason ``late``).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from streaming.contracts import events
from streaming.contracts.events import (
    LAG,
    LOG_START,
    MEMBERS_TYPE,
    METADATA_EVENTS,
    PARTITIONS_TYPE,
    TYPES,
)
from streaming.job import canonical as fast
from streaming.job import dense, event_time, metadata_rules, recorded
from streaming.job import variant_fields as vf
from streaming.job.field_columns import field, opt, with_fields, x
from streaming.state.ingest import LOG_STARTS, READINGS

INT_MAX = 2**31 - 1
MAX_GROUP_CHARS = 32767  # a Kafka protocol STRING: int16 length
RAW_VALUE_CHARS = 1000
"""``raw_value`` of a rejected record keeps the first 1,000 characters of the value
(invalid UTF-8 replaced)."""

# a JSON string, escapes included; possessive, so a long value cannot make the regex backtrack
_JSON_STRING = r'(?s)"(?:[^"\\]|\\.)*+"'
_CONTROL_CHARS = "".join(map(chr, range(32))) + "\x7f"
_WS = "[ \t\n\r]*"
KAFKA_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp")
"""The Kafka source's columns validation reads."""
_LAG_TOPIC = "lag_topic_name"

REJECTED_SCHEMA = (
    "reason STRING, raw_value STRING, source_topic STRING, source_partition INT, "
    "source_offset LONG, kafka_ts LONG"
)
"""The ``detail`` of a rejected row: why, the raw value (its first 1,000 characters; for a row
rejected after validation, as ``late`` or for an internal error, the event re-encoded from its
parsed fields) and where it came from (``kafka_ts``: epoch ms, null for rows rejected after
validation and for a record without a Kafka timestamp)."""


def _lag_rules(topic: Column) -> Column:
    """The first rule a ``lag`` event breaks (``topic``: its topic field's own rule),
    null when none."""
    return F.when(x("type") == LAG, F.coalesce(
        topic,
        # a canonical topic's characters and length are proven by the regex (translate is
        # costly per record)
        F.when(F.when(F.col("canonical"), x("topic").isin(".", ".."))
               .otherwise(~vf.is_topic_name(x("topic"))), F.lit("invalid topic name")),
        field("partition", "an integer", x("partition").isNotNull()),
        field("committed_offset", "an integer", x("committed_offset").isNotNull()),
        field("end_offset", "an integer", x("end_offset").isNotNull()),
        F.when(x("partition") < 0, F.format_string("negative partition %d", x("partition"))),
        F.when(x("partition") > INT_MAX,
               F.format_string(f"partition %d above {INT_MAX}", x("partition"))),
        F.when(x("committed_offset") < 0,
               F.format_string("negative committed_offset %d", x("committed_offset"))),
        F.when(x("end_offset") < x("committed_offset"),
               F.format_string("end_offset %d below committed_offset %d", x("end_offset"),
                               x("committed_offset"))),
        F.when(~opt("no_commit", "BOOLEAN"), F.lit("field no_commit is not a boolean")),
        F.when(~opt(LOG_START, "BIGINT"), F.lit(f"field {LOG_START} is not an integer")),
        F.when(x(LOG_START) < 0, F.format_string(f"negative {LOG_START} %d", x(LOG_START))),
        F.when(x(LOG_START) > x("end_offset"),
               F.format_string(f"{LOG_START} %d above end_offset %d", x(LOG_START),
                               x("end_offset"))),
    ))


def _type_rules() -> Column:
    """The first rule an event of its type breaks (:mod:`streaming.job.metadata_rules` for the
    metadata events), null when none."""
    topic = field("topic", "a string", x("topic").isNotNull())
    lag = _lag_rules(topic)
    dense_rules = F.when(x("type") == events.LAG_DENSE, F.coalesce(
        topic, F.when(~vf.is_topic_name(x("topic")), F.lit("invalid topic name")),
        dense.record_reason()))
    return F.coalesce(lag, dense_rules, _count_rule(), *metadata_rules.rules())


def _count_rule() -> Column:
    """A lag event's optional ``metadata_events``: an integer in 0..2**31-1, null when it is."""
    count = x(METADATA_EVENTS)
    return F.when(x("type").isin(*events.LAG_TYPES), F.coalesce(
        F.when(~opt(METADATA_EVENTS, "BIGINT"),
               F.lit(f"field {METADATA_EVENTS} is not an integer")),
        F.when((count < 0) | (count > INT_MAX),
               F.format_string(f"{METADATA_EVENTS} %d outside 0..{INT_MAX}", count))))


def _trailing(value_str: Column) -> Column:
    """True when something other than whitespace follows the root object (which parsed
    as a VARIANT).

    The parsers ignore what follows the root value, so: with JSON strings blanked out to ``s``,
    the text must end in ``}``, and hold no more ``}`` than the object itself (its canonical
    form, strings blanked alike). Trailing text that ends in ``}`` has a ``}`` of its own
    outside any string, so it adds one; anything else does not end in ``}``. Exact; and a text
    whose only ``}`` is its last character (every lag event) is the object alone, which is
    decided without a regex."""
    def closing(s: Column) -> Column:
        return F.length(s) - F.length(F.replace(s, F.lit("}"), F.lit("")))

    # the common case without a regex: a text with a single "}", its last character, is the object
    # alone
    # rtrim: spaces; other whitespace takes the long way
    ends = F.rtrim(value_str).endswith(F.lit("}"))
    blanked = F.regexp_replace(value_str, _JSON_STRING, "s")
    n = closing(blanked)
    return ~(ends & (closing(value_str) == 1)) & (~blanked.rlike(r"\}" + _WS + "$") | (
        (n != 1) & (n != closing(F.regexp_replace(F.col("v").cast("string"), _JSON_STRING, "s")))))


def _read_fast() -> Column:
    """Read by a fast path (:mod:`streaming.job.canonical`): the text is proven JSON,
    the object alone."""
    return F.col("canonical") | F.col("exact_dense")


def reject_reason(max_value_bytes: int, max_clock_skew_ms: int, lag_topic: Column) -> Column:
    """The first rule the record breaks, or null; ``lag_topic``: the lag topic's name (a column,
    so that the recorded plan serves every topic name: :func:`parse`)."""
    ts, group = x("ts"), x("group")
    kafka_ms = event_time.kafka_millis(F.col("timestamp"))
    starts_object = F.ltrim("value_str", F.lit(" \t\n\r")).startswith("{")
    return F.coalesce(
        F.when(F.col("value").isNull(), F.lit("null value")),
        F.when(F.length("value") == 0, F.lit("empty value")),
        F.when(F.length("value") > max_value_bytes,
               F.format_string("value of %d bytes exceeds %d", F.length("value"),
                               F.lit(max_value_bytes))),
        F.when(~F.col("utf8"), F.lit("value is not valid UTF-8")),
        F.when(~_read_fast() & F.col("v").isNull(),
               # the lenient parse accepts duplicate keys (not NaN, not broken syntax): it tells the
               # two apart
               F.when(~F.coalesce(
                   F.json_array_length(F.concat(F.lit("["), "value_str", F.lit("]"))) == 1,
                   F.lit(False)), F.lit("not valid JSON"))
               .when(starts_object, F.lit("duplicate key"))),
        F.when(~starts_object, F.lit("not a JSON object")),
        F.when(~_read_fast() & _trailing(F.col("value_str")),
               F.lit("trailing data after the JSON object")),
        field("type", "a string", x("type").isNotNull()),
        F.when(~x("type").isin(*TYPES),
               F.format_string("unknown type %s", F.substring(x("type"), 1, 40))),
        field("ts", "an integer (epoch ms)", ts.isNotNull()),
        field("group", "a string", group.isNotNull()),
        event_time.reason(ts, kafka_ms, max_clock_skew_ms),
        F.when(group == "", F.lit("empty group")),
        F.when(F.length(group) > MAX_GROUP_CHARS,
               F.lit(f"group longer than {MAX_GROUP_CHARS} characters")),
        F.when(~F.col("canonical")
               & (F.length(F.translate(group, _CONTROL_CHARS, "")) != F.length(group)),
               F.lit("group has control characters")),
        F.when(F.col("key").isNotNull() & (F.col("key").cast("string") != group),
               F.lit("message key does not match group")),
        _type_rules(),
        F.when(x("type").isin(*events.LAG_TYPES) != (F.col("topic") == lag_topic),
               F.format_string("a %s event on topic %s", x("type"), F.col("topic"))),
    )


def parse(raw: DataFrame, max_value_bytes: int, max_clock_skew_ms: int, lag_topic: str,
          fast_path: bool = True) -> DataFrame:
    """Kafka rows -> one narrow row per record, the columns the stateful step reads: ``group``,
    ``type`` (null when rejected), ``ts``, ``event_time`` (the watermark's column), ``topic``, for
    lag events ``partition``, ``committed_offset``, ``end_offset`` (0 where they do not apply, never
    null: ``type`` tells), ``source_partition``, ``source_offset``; ``readings``: a ``lag_dense``
    event's good entries, ``log_starts`` their log start offsets (a ``lag`` event's one; null when
    the event carries none); ``metadata_events``: a lag event's count of its poll's metadata events
    (0 when it has none, and for other rows). ``detail`` (JSON): a metadata event's fields, a
    rejected record's :data:`REJECTED_SCHEMA`, a list of those for a ``lag_dense`` event's bad
    entries (:mod:`streaming.job.dense`). Few columns: every one costs per batch.

    The plan is built once per process and JVM for these arguments and replayed on each new
    ``raw`` (:mod:`streaming.job.recorded`); the lag topic's name, which differs between the
    queries of one process, comes in as a column of its own (a literal: Spark folds it)."""
    key = (__name__, max_value_bytes, max_clock_skew_ms, fast_path)
    named = raw.select(*KAFKA_COLUMNS, F.lit(lag_topic).alias(_LAG_TOPIC))
    return recorded.replayed(
        key, lambda df: _parse(df, max_value_bytes, max_clock_skew_ms, fast_path), named)


def _parse(raw: DataFrame, max_value_bytes: int, max_clock_skew_ms: int,
           fast_path: bool) -> DataFrame:
    fields = with_fields(fast.canonical_pieces(_read(raw, max_value_bytes, fast_path)))
    # one projection holds every lambda (dense.checked says why)
    reason = reject_reason(max_value_bytes, max_clock_skew_ms, F.col(_LAG_TOPIC)) \
        .alias("reject_reason")
    return _narrow(fields.select(
        "*", reason, *dense.checked(RAW_VALUE_CHARS, F.col("exact_dense"), F.col("dense_order"))))


def _read(raw: DataFrame, max_value_bytes: int, fast_path: bool) -> DataFrame:
    """Each record's text (none when too large), whether it is UTF-8, whether a fast path reads it
    (:mod:`streaming.job.canonical`: ``canonical``, a lag event; ``exact_dense``, a lag_dense event,
    with its values in ``dense_read``) and otherwise its parsed VARIANT. A text read exactly is
    UTF-8 unscanned: it equals ``to_json``'s output (an undecodable byte reads as U+FFFD, and the
    text then differs)."""
    fits = F.col("value").isNotNull() & (F.length("value") <= max_value_bytes)
    text, dense_text = F.col("value_str"), F.col("dense_text")
    dense = fast.dense_read_ordered(text, dense_text) if fast_path \
        else F.struct(F.lit(None).cast(fast.DENSE_SCHEMA).alias("read"),
                      fast.dense_order(F.lit(None).cast(fast.DENSE_SCHEMA)).alias("order"))
    return raw.select(
        *KAFKA_COLUMNS, _LAG_TOPIC,
        # too large: never cast, never parsed
        F.when(fits, F.col("value").cast("string")).alias("value_str"),
    ).withColumn(
        "dense_text", F.coalesce(text.startswith(fast.DENSE_PREFIX), F.lit(False)),
    ).withColumn(
        "utf8_read", F.when(~dense_text, F.is_valid_utf8(text)),
    ).withColumn(
        # fast_path=False: every record through the general path (the tests compare the two)
        "canonical", F.when(dense_text, F.lit(False)).otherwise(
            F.coalesce(F.col("utf8_read") & text.rlike(fast.CANONICAL_LAG), F.lit(False)))
        if fast_path else F.lit(False),
    ).withColumn(
        # a column of its own: the round trip below and the reads use one from_json (a costly
        # expression is not inlined), its order computed on the reader's own arrays
        # (canonical.dense_read_ordered says why)
        "dense", dense,
    ).withColumns(
        {"dense_read": F.col("dense")["read"], "dense_order": F.col("dense")["order"]},
    ).withColumn(
        "exact_dense", fast.is_exact(F.col("dense_read"), text),
    ).withColumn(
        "utf8", F.when(dense_text, F.col("exact_dense") | F.is_valid_utf8(text))
        .otherwise(F.col("utf8_read")),
    ).withColumn(
        "v", F.when(~F.col("canonical") & ~F.col("exact_dense") & F.col("utf8"),
                    F.try_parse_json(text)),
    )


def _narrow(checked: DataFrame) -> DataFrame:
    """The checked records as the stateful step reads them (see :func:`parse`)."""
    ok = F.col("reject_reason").isNull()
    lag, many = ok & (x("type") == LAG), ok & (x("type") == events.LAG_DENSE)
    meta = ok & ~x("type").isin(*events.LAG_TYPES)
    raw_text = F.expr(
        f"make_valid_utf8(cast(substring(value, 1, {4 * RAW_VALUE_CHARS}) as string))")
    key_text = F.expr("make_valid_utf8(cast(key as string))")
    return checked.select(
        F.when(ok, x("group"))
        .otherwise(F.coalesce(x("group"), key_text, F.lit(""))).alias("group"),
        F.when(ok, x("type")).alias("type"),
        # never null, so pandas keeps these columns int64, exact to 2**63-1 (with
        # nulls: float64, rounded)
        F.when(ok, x("ts")).otherwise(F.lit(0).cast("bigint")).alias("ts"),
        event_time.column(x("ts"), ok).alias("event_time"),
        F.when(ok, x("topic")).alias("topic"),
        F.when(lag, x("partition").try_cast("int")).otherwise(F.lit(0)).alias("partition"),
        F.when(lag, x("committed_offset")).otherwise(F.lit(0).cast("bigint"))
        .alias("committed_offset"),
        F.when(lag, x("end_offset")).otherwise(F.lit(0).cast("bigint")).alias("end_offset"),
        F.col("partition").alias("source_partition"),
        F.col("offset").alias("source_offset"),
        F.when(lag, F.lit(None).cast("string")).when(many, dense.rejected())
        .when(meta, F.to_json(F.struct(
            x("generation").try_cast("int").alias("generation"), x("protocol").alias("protocol"),
            vf.get("v", "$.members", MEMBERS_TYPE).alias("members"),
            vf.get("v", "$.partitions", PARTITIONS_TYPE).alias("partitions"),
            x("part").try_cast("int").alias("part"), x("parts").try_cast("int").alias("parts"))))
        .otherwise(F.to_json(F.struct(
            F.col("reject_reason").alias("reason"),
            F.substring(raw_text, 1, RAW_VALUE_CHARS).alias("raw_value"),
            F.col("topic").alias("source_topic"), F.col("partition").alias("source_partition"),
            F.col("offset").alias("source_offset"),
            event_time.known_kafka_millis(F.col("timestamp")).alias("kafka_ts"))))
        .alias("detail"),
        F.when(many, dense.readings()).alias(READINGS),
        F.when(lag & x(LOG_START).isNotNull(), F.array(x(LOG_START))).when(many, dense.log_starts())
        .alias(LOG_STARTS),
        # never null (0: none to wait for), as the offsets
        F.when(lag | many, F.coalesce(x(METADATA_EVENTS).try_cast("int"), F.lit(0)))
        .otherwise(F.lit(0)).alias(METADATA_EVENTS),
    )

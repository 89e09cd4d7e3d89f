"""Parse and validate the events with Spark expressions that cannot throw; every rejected record gets a reason.

Spark 4 runs with ANSI mode on, where a cast of ``'1000.0'`` to INT, or ``timestamp_millis`` of a huge
number, raises and stops the query for good (a restart reads the same record again). So nothing here
casts or converts a value before it has been proven to fit: the value is parsed once as a VARIANT with
``try_parse_json`` (null instead of an error), each field's JSON type is read exactly with
``schema_of_variant`` (a number where a string belongs, ``1000.0`` or ``1e400`` where an integer
belongs, ``2**63`` where a LONG belongs are all told apart: only ``BIGINT`` is an integer that fits a
LONG), and values are read with ``try_variant_get``. ``reject_reason`` is the first rule a record breaks,
or null; the rules and their reason strings are all in this module, in the order they are checked:

- ``null value``, ``empty value``, ``value of N bytes exceeds M`` (the value is not even cast to a string,
  let alone parsed), ``value is not valid UTF-8``;
- ``not valid JSON`` (also NaN/Infinity literals and nesting deeper than the parser allows),
  ``duplicate key`` (at any depth: the VARIANT parser refuses them, a lenient parse tells them apart),
  ``not a JSON object``, ``trailing data after the JSON object`` (see :func:`_trailing`);
- ``type`` a string and one of the known types; ``ts`` an integer, positive, the record with a Kafka
  timestamp (not -1), ``ts`` at most ``job.max_clock_skew_s`` ahead of it
  (:mod:`streaming.job.event_time`); ``group`` a non-empty string of at most 32,767 characters (the
  protocol's limit) without control characters; the message key (when there is one) equal to the
  group;
- lag: ``topic`` a legal Kafka topic name ([a-zA-Z0-9._-], 1..249, not ``.``/``..``), ``partition`` in
  0..2**31-1, offsets in 0..2**63-1 with ``end_offset >= committed_offset``, ``no_commit`` a boolean,
  ``log_start_offset`` (optional) an integer in 0..``end_offset``;
- lag_dense: ``topic`` as for lag, then its shape and each entry by :mod:`streaming.job.dense`;
- members: ``generation`` in -1..2**31-1, ``protocol`` a string or null, ``members`` a list of objects with
  a non-empty string ``member_id`` (unique in a whole event), optional string ids/host/rack, ``topics``
  legal topic names, ``assigned`` entries ``[topic, partition]``;
- partitions: ``topic``, ``partitions`` a list of objects with ``partition`` in 0..2**31-1 (unique, and
  exactly 0..n-1 in a whole event: downstream the list is a partition count), ``leader`` a broker id or
  null, ``replicas`` broker ids (no null), ``replica_racks`` strings or null, one per replica;
- ``part``/``parts`` of a split metadata event (:mod:`streaming.contracts.event_parts`) integers with
  ``0 <= part < parts <= MAX_PARTS``;
- last, a lag event from the lag topic, a metadata event from the metadata topic (a row's type gives its topic).

The collector's ``lag`` and ``lag_dense`` events take fast paths (:mod:`streaming.job.canonical`), judged by the
same rules; anything else is parsed as a VARIANT. Event time (:mod:`streaming.job.event_time`):
``ts`` may lag its Kafka timestamp by any amount (an old event can only be late) but lead it by at
most ``max_clock_skew_s``, and a record without one (-1) is rejected, so one bad clock cannot carry
the watermark into the future; late rows are the stateful step's to reject (reason ``late``).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from streaming.contracts import events
from streaming.contracts.event_parts import MAX_PARTS
from streaming.contracts.events import LAG, LOG_START, MEMBERS, MEMBERS_TYPE, PARTITIONS, PARTITIONS_TYPE, TYPES
from streaming.job import canonical as fast
from streaming.job import dense, event_time
from streaming.job import variant_fields as vf
from streaming.state.ingest import LOG_STARTS, READINGS

INT_MAX = 2**31 - 1
MAX_GROUP_CHARS = 32767  # a Kafka protocol STRING: int16 length
RAW_VALUE_CHARS = 1000
"""``raw_value`` of a rejected record keeps the first 1,000 characters of the value (invalid UTF-8 replaced)."""

# a JSON string, escapes included; possessive, so a long value cannot make the regex backtrack
_JSON_STRING = r'(?s)"(?:[^"\\]|\\.)*+"'
_CONTROL_CHARS = "".join(map(chr, range(32))) + "\x7f"
_WS = "[ \t\n\r]*"

REJECTED_SCHEMA = (
    "reason STRING, raw_value STRING, source_topic STRING, source_partition INT, source_offset LONG, kafka_ts LONG"
)
"""The ``detail`` of a rejected row: why, the raw value (its first 1,000 characters; for a row rejected
after validation, as ``late`` or for an internal error, the event re-encoded from its parsed fields) and
where it came from (``kafka_ts``: epoch ms, null for rows rejected after validation and for a record without a
Kafka timestamp)."""


# Top-level fields are read once per record into columns (k_<name>: the field's JSON type, x_<name>: its
# value when the type is right), so no rule looks a field up again. The hot path, a lag event of exactly
# the collector's shape, is recognised from the schema of the whole object (one call) and its values come
# from one cast to a struct; anything else reads each field's type on its own.
_SCALARS = ("type", "ts", "group", "topic", "partition", "committed_offset", "end_offset", "no_commit", LOG_START,
            "generation", "protocol", "part", "parts")
_STRINGS = ("type", "group", "topic", "protocol")
_BOOLEANS = ("no_commit",)
_TYPES = {n: "string" if n in _STRINGS else "boolean" if n in _BOOLEANS else "bigint" for n in _SCALARS}  # SQL types
_VALUES = "struct<" + ", ".join(f"{n}: {t}" for n, t in _TYPES.items()) + ">"
_HOT_SHAPES = [fast.LAG_KINDS | flag | start for flag in ({}, {"no_commit": "BOOLEAN"})
               for start in ({}, {LOG_START: "BIGINT"})]


def _shape(kinds: dict[str, str]) -> str:
    """``schema_of_variant`` of an object with these fields (it lists them sorted by name)."""
    return "OBJECT<" + ", ".join(f"{n}: {kinds[n]}" for n in sorted(kinds)) + ">"


def _k(name: str) -> Column:
    return F.col(f"k_{name}")


def _x(name: str) -> Column:
    return F.col(f"x_{name}")


def _fields(df: DataFrame) -> DataFrame:
    """Adds the top-level field columns; ``members``/``partitions`` as arrays of VARIANTs (metadata only)."""
    canonical = F.col("canonical")
    df = df.select("*", F.schema_of_variant("v").alias("shape"), vf.get("v", "$", _VALUES).alias("values"))

    exact, read = F.col("exact_dense"), F.col("dense_read")

    def kind(name: str) -> Column:
        slow = F.schema_of_variant(vf.get("v", f"$.{name}"))
        out = F.when(canonical, fast.canonical_kind(name)).when(
            exact, fast.dense_kind(read, name) if name in fast.DENSE_COMMON else F.lit(None).cast("string"))
        for kinds in _HOT_SHAPES:
            out = out.when(F.col("shape") == _shape(kinds), F.lit(kinds.get(name)).cast("string"))
        return out.otherwise(slow)

    def value(name: str, general: Column) -> Column:
        lag = fast.canonical_value(name)
        general = general if lag is None else F.when(canonical, lag).otherwise(general)
        return F.when(exact, read[name] if name in fast.DENSE_COMMON else F.lit(None)).otherwise(general)

    df = df.select("*", *(kind(n).alias(f"k_{n}") for n in _SCALARS))
    return df.select(
        "*",
        # a field of the right type casts exactly; the per-field read covers a struct cast another field failed
        *(value(n, F.when(_k(n) == _TYPES[n].upper(),
                          F.coalesce(F.col(f"values.{n}"), vf.get("v", f"$.{n}", _TYPES[n]))))
          .alias(f"x_{n}") for n in _SCALARS),
    ).select(
        "*",
        F.when(_x("type") == MEMBERS, vf.as_list("v", "$.members")).alias("x_members"),
        F.when(_x("type") == PARTITIONS, vf.as_list("v", "$.partitions")).alias("x_partitions"),
    ).transform(lambda d: dense.columns(d, lambda path: vf.kind("v", path), _x("type") == events.LAG_DENSE,
                                        lambda kinds: F.col("shape") == _shape(kinds), exact, read))


def _field(name: str, type_name: str, ok: Column) -> Column:
    """Reason for a missing or wrongly typed top-level field, else null."""
    kind = _k(name) if name in _SCALARS else F.schema_of_variant(vf.get("v", f"$.{name}"))
    return F.when(
        ~F.coalesce(ok, F.lit(False)),
        F.when(kind.isNull(), F.lit(f"missing field {name}"))
        .otherwise(F.format_string(f"field {name} is not {type_name}: %s (%s)",
                                   F.substring(vf.get("v", f"$.{name}").cast("string"), 1, 40),
                                   F.substring(kind, 1, 20))),
    )


def _opt(name: str, kind: str) -> Column:
    """An optional field: absent, JSON null, or of this type."""
    return F.coalesce(_k(name).isin("VOID", kind), F.lit(True))


def _any(array: Column, predicate) -> Column:
    return F.coalesce(F.exists(array, lambda x: F.coalesce(predicate(x), F.lit(True))), F.lit(False))


def _optional_string(m: Column, name: str) -> Column:
    return vf.absent(m, f"$.{name}") | vf.is_string(m, f"$.{name}")


def _bad_member(m: Column) -> Column:
    return F.coalesce(
        F.when(~vf.is_string(m, "$.member_id") | (vf.get(m, "$.member_id", "string") == ""),
               F.lit("a member has no member_id")),
        *(F.when(~_optional_string(m, n), F.lit(f"a member's {n} is not a string or null"))
          for n in ("instance_id", "client_id", "host", "rack")),
        F.when(~vf.absent(m, "$.topics") & (
            vf.as_list(m, "$.topics").isNull() | _any(vf.as_list(m, "$.topics"), lambda t: ~vf.topic_at(t, "$"))),
            F.lit("a member's topics are not a list of topic names")),
        F.when(~vf.absent(m, "$.assigned") & (
            vf.as_list(m, "$.assigned").isNull() | _any(vf.as_list(m, "$.assigned"), lambda a: ~(
                (F.size(vf.as_list(a, "$")) == 2) & vf.topic_at(a, "$[0]") & vf.is_int(a, "$[1]", 0, INT_MAX)))),
            F.lit("an assigned entry is not [topic, partition >= 0]")),
    )


def _bad_partition(p: Column) -> Column:
    replicas, racks = vf.as_list(p, "$.replicas"), vf.as_list(p, "$.replica_racks")
    return F.coalesce(
        F.when(~vf.is_long(p, "$.partition") | (vf.get(p, "$.partition", "bigint") < 0),
               F.lit("a partition number is missing or negative")),
        F.when(vf.get(p, "$.partition", "bigint") > INT_MAX, F.lit(f"a partition number is above {INT_MAX}")),
        F.when(~(vf.absent(p, "$.leader") | vf.is_int(p, "$.leader", -1, INT_MAX)),
               F.lit("a leader is not a broker id or null")),
        F.when(replicas.isNull() | _any(replicas, lambda r: ~vf.is_int(r, "$", 0, INT_MAX)),
               F.lit("replicas is not a list of broker ids")),
        F.when(~vf.absent(p, "$.replica_racks") & (
            racks.isNull() | _any(racks, lambda r: ~(vf.absent(r, "$") | vf.is_string(r, "$")))),
            F.lit("replica_racks is not a list of racks")),
        F.when(F.size(F.coalesce(racks, F.array())) != F.size(replicas),
               F.lit("replica_racks does not match replicas")),
    )


def _first(array: Column, reason_of) -> Column:
    """The first non-null reason over the array's elements."""
    return F.try_element_at(F.filter(F.transform(array, reason_of), lambda r: r.isNotNull()), F.lit(1))


def _lag_rules(topic: Column) -> Column:
    """The first rule a ``lag`` event breaks (``topic``: its topic field's own rule), null when none."""
    return F.when(_x("type") == LAG, F.coalesce(
        topic,
        # a canonical topic's characters and length are proven by the regex (translate is costly per record)
        F.when(F.when(F.col("canonical"), _x("topic").isin(".", "..")).otherwise(~vf.is_topic_name(_x("topic"))),
               F.lit("invalid topic name")),
        _field("partition", "an integer", _x("partition").isNotNull()),
        _field("committed_offset", "an integer", _x("committed_offset").isNotNull()),
        _field("end_offset", "an integer", _x("end_offset").isNotNull()),
        F.when(_x("partition") < 0, F.format_string("negative partition %d", _x("partition"))),
        F.when(_x("partition") > INT_MAX, F.format_string(f"partition %d above {INT_MAX}", _x("partition"))),
        F.when(_x("committed_offset") < 0,
               F.format_string("negative committed_offset %d", _x("committed_offset"))),
        F.when(_x("end_offset") < _x("committed_offset"),
               F.format_string("end_offset %d below committed_offset %d", _x("end_offset"), _x("committed_offset"))),
        F.when(~_opt("no_commit", "BOOLEAN"), F.lit("field no_commit is not a boolean")),
        F.when(~_opt(LOG_START, "BIGINT"), F.lit(f"field {LOG_START} is not an integer")),
        F.when(_x(LOG_START) < 0, F.format_string(f"negative {LOG_START} %d", _x(LOG_START))),
        F.when(_x(LOG_START) > _x("end_offset"),
               F.format_string(f"{LOG_START} %d above end_offset %d", _x(LOG_START), _x("end_offset"))),
    ))


def _type_rules() -> Column:
    whole = F.coalesce(_k("parts") == "VOID", F.lit(True))
    members, parts = _x("members"), _x("partitions")
    numbers = F.transform(parts, lambda p: vf.get(p, "$.partition", "bigint"))
    topic = _field("topic", "a string", _x("topic").isNotNull())
    lag = _lag_rules(topic)
    dense_rules = F.when(_x("type") == events.LAG_DENSE, F.coalesce(
        topic, F.when(~vf.is_topic_name(_x("topic")), F.lit("invalid topic name")), dense.record_reason()))
    members_rules = F.when(_x("type") == MEMBERS, F.coalesce(
        _field("generation", "an integer", _x("generation").isNotNull()),
        F.when(~_x("generation").between(-1, INT_MAX), F.lit(f"generation out of range -1..{INT_MAX}")),
        F.when(~_opt("protocol", "STRING"), F.lit("field protocol is not a string")),
        _field("members", "a list of members", members.isNotNull()),
        _first(members, _bad_member),
        F.when(whole & (F.size(F.array_distinct(F.transform(members, lambda m: vf.get(m, "$.member_id", "string"))))
                        != F.size(members)), F.lit("duplicate member_id")),
    ))
    partitions_rules = F.when(_x("type") == PARTITIONS, F.coalesce(
        _field("topic", "a string", _x("topic").isNotNull()),
        F.when(~vf.is_topic_name(_x("topic")), F.lit("invalid topic name")),
        _field("partitions", "a list of partitions", parts.isNotNull()),
        _first(parts, _bad_partition),
        F.when(F.size(F.array_distinct(numbers)) != F.size(numbers), F.lit("duplicate partition numbers")),
        F.when(whole & (F.size(numbers) > 0) & (F.array_max(numbers) != F.size(numbers) - 1),
               F.lit("partition numbers are not 0..n-1")),
    ))
    parts_rules = F.when(_x("type").isin(MEMBERS, PARTITIONS) & ~whole, F.coalesce(
        F.when(~F.coalesce(_x("parts").between(1, MAX_PARTS), F.lit(False)),
               F.lit(f"parts is not an integer in 1..{MAX_PARTS}")),
        F.when(~F.coalesce(_x("part").between(0, MAX_PARTS) & (_x("part") < _x("parts")), F.lit(False)),
               F.lit("part is not an integer in 0..parts-1")),
    ))
    return F.coalesce(lag, dense_rules, members_rules, partitions_rules, parts_rules)


def _trailing(value_str: Column) -> Column:
    """True when something other than whitespace follows the root object (which parsed as a VARIANT).

    The parsers ignore what follows the root value, so: with JSON strings blanked out to ``s``, the text
    must end in ``}``, and hold no more ``}`` than the object itself (its canonical form, strings blanked
    alike). Trailing text that ends in ``}`` has a ``}`` of its own outside any string, so it adds one;
    anything else does not end in ``}``. Exact; and a text whose only ``}`` is its last character (every
    lag event) is the object alone, which is decided without a regex."""
    def closing(s: Column) -> Column:
        return F.length(s) - F.length(F.replace(s, F.lit("}"), F.lit("")))

    # the common case without a regex: a text with a single "}", its last character, is the object alone
    ends = F.rtrim(value_str).endswith(F.lit("}"))  # rtrim: spaces; other whitespace takes the long way
    blanked = F.regexp_replace(value_str, _JSON_STRING, "s")
    n = closing(blanked)
    return ~(ends & (closing(value_str) == 1)) & (~blanked.rlike(r"\}" + _WS + "$") | (
        (n != 1) & (n != closing(F.regexp_replace(F.col("v").cast("string"), _JSON_STRING, "s")))))


def _read_fast() -> Column:
    """Read by a fast path (:mod:`streaming.job.canonical`): the text is proven JSON, the object alone."""
    return F.col("canonical") | F.col("exact_dense")


def reject_reason(max_value_bytes: int, max_clock_skew_ms: int, lag_topic: str) -> Column:
    ts, group = _x("ts"), _x("group")
    kafka_ms = event_time.kafka_millis(F.col("timestamp"))
    starts_object = F.ltrim("value_str", F.lit(" \t\n\r")).startswith("{")
    return F.coalesce(
        F.when(F.col("value").isNull(), F.lit("null value")),
        F.when(F.length("value") == 0, F.lit("empty value")),
        F.when(F.length("value") > max_value_bytes,
               F.format_string("value of %d bytes exceeds %d", F.length("value"), F.lit(max_value_bytes))),
        F.when(~F.col("utf8"), F.lit("value is not valid UTF-8")),
        F.when(~_read_fast() & F.col("v").isNull(),
               # the lenient parse accepts duplicate keys (not NaN, not broken syntax): it tells the two apart
               F.when(~F.coalesce(F.json_array_length(F.concat(F.lit("["), "value_str", F.lit("]"))) == 1,
                                  F.lit(False)), F.lit("not valid JSON"))
               .when(starts_object, F.lit("duplicate key"))),
        F.when(~starts_object, F.lit("not a JSON object")),
        F.when(~_read_fast() & _trailing(F.col("value_str")), F.lit("trailing data after the JSON object")),
        _field("type", "a string", _x("type").isNotNull()),
        F.when(~_x("type").isin(*TYPES), F.format_string("unknown type %s", F.substring(_x("type"), 1, 40))),
        _field("ts", "an integer (epoch ms)", ts.isNotNull()),
        _field("group", "a string", group.isNotNull()),
        event_time.reason(ts, kafka_ms, max_clock_skew_ms),
        F.when(group == "", F.lit("empty group")),
        F.when(F.length(group) > MAX_GROUP_CHARS, F.lit(f"group longer than {MAX_GROUP_CHARS} characters")),
        F.when(~F.col("canonical") & (F.length(F.translate(group, _CONTROL_CHARS, "")) != F.length(group)),
               F.lit("group has control characters")),
        F.when(F.col("key").isNotNull() & (F.col("key").cast("string") != group),
               F.lit("message key does not match group")),
        _type_rules(),
        F.when(_x("type").isin(*events.LAG_TYPES) != (F.col("topic") == lag_topic),
               F.format_string("a %s event on topic %s", _x("type"), F.col("topic"))),
    )


def parse(raw: DataFrame, max_value_bytes: int, max_clock_skew_ms: int, lag_topic: str,
          fast_path: bool = True) -> DataFrame:
    """Kafka rows -> one narrow row per record, the columns the stateful step reads: ``group``, ``type``
    (null when rejected), ``ts``, ``event_time`` (the watermark's column), ``topic``, for lag events
    ``partition``, ``committed_offset``, ``end_offset`` (0 where they do not apply, never null: ``type`` tells),
    ``source_partition``, ``source_offset``; ``readings``: a ``lag_dense`` event's good entries, ``log_starts``
    their log start offsets (a ``lag`` event's one; null when the event carries none). ``detail``
    (JSON): a metadata event's fields, a rejected record's :data:`REJECTED_SCHEMA`, a list of those for a
    ``lag_dense`` event's bad entries (:mod:`streaming.job.dense`). Few columns: every one costs per batch."""
    fields = _fields(fast.canonical_pieces(_read(raw, max_value_bytes, fast_path)))
    # one projection holds every lambda (dense.checked says why)
    return _narrow(fields.select("*", reject_reason(max_value_bytes, max_clock_skew_ms, lag_topic).alias(
        "reject_reason"), *dense.checked(RAW_VALUE_CHARS, F.col("exact_dense"), F.col("dense_order"))))


def _read(raw: DataFrame, max_value_bytes: int, fast_path: bool) -> DataFrame:
    """Each record's text (none when too large), whether it is UTF-8, whether a fast path reads it
    (:mod:`streaming.job.canonical`: ``canonical``, a lag event; ``exact_dense``, a lag_dense event, with its values
    in ``dense_read``) and otherwise its parsed VARIANT. A text read exactly is UTF-8 unscanned: it equals
    ``to_json``'s output (an undecodable byte reads as U+FFFD, and the text then differs)."""
    fits = F.col("value").isNotNull() & (F.length("value") <= max_value_bytes)
    text, dense_text = F.col("value_str"), F.col("dense_text")
    dense = fast.dense_read_ordered(text, dense_text) if fast_path \
        else F.struct(F.lit(None).cast(fast.DENSE_SCHEMA).alias("read"), fast.dense_order(F.lit(None).cast(
            fast.DENSE_SCHEMA)).alias("order"))
    return raw.select(
        "key", "value", "topic", "partition", "offset", "timestamp",
        # too large: never cast, never parsed
        F.when(fits, F.col("value").cast("string")).alias("value_str"),
    ).withColumn("dense_text", F.coalesce(text.startswith(fast.DENSE_PREFIX), F.lit(False))).withColumn(
        "utf8_read", F.when(~dense_text, F.is_valid_utf8(text)),
    ).withColumn(
        # fast_path=False: every record through the general path (the tests compare the two)
        "canonical", F.when(dense_text, F.lit(False)).otherwise(
            F.coalesce(F.col("utf8_read") & text.rlike(fast.CANONICAL_LAG), F.lit(False))) if fast_path
        else F.lit(False),
    ).withColumn(
        # a column of its own: the round trip below and the reads use one from_json (a costly expression is not
        # inlined), its order computed on the reader's own arrays (canonical.dense_read_ordered says why)
        "dense", dense,
    ).withColumns({"dense_read": F.col("dense")["read"], "dense_order": F.col("dense")["order"]}).withColumn(
        "exact_dense", fast.is_exact(F.col("dense_read"), text),
    ).withColumn(
        "utf8", F.when(dense_text, F.col("exact_dense") | F.is_valid_utf8(text)).otherwise(F.col("utf8_read")),
    ).withColumn("v", F.when(~F.col("canonical") & ~F.col("exact_dense") & F.col("utf8"), F.try_parse_json(text)))


def _narrow(checked: DataFrame) -> DataFrame:
    """The checked records as the stateful step reads them (see :func:`parse`)."""
    ok = F.col("reject_reason").isNull()
    lag, many = ok & (_x("type") == LAG), ok & (_x("type") == events.LAG_DENSE)
    meta = ok & ~_x("type").isin(*events.LAG_TYPES)
    raw_text = F.expr(f"make_valid_utf8(cast(substring(value, 1, {4 * RAW_VALUE_CHARS}) as string))")
    return checked.select(
        F.when(ok, _x("group"))
        .otherwise(F.coalesce(_x("group"), F.expr("make_valid_utf8(cast(key as string))"), F.lit(""))).alias("group"),
        F.when(ok, _x("type")).alias("type"),
        # never null, so pandas keeps these columns int64, exact to 2**63-1 (with nulls: float64, rounded)
        F.when(ok, _x("ts")).otherwise(F.lit(0).cast("bigint")).alias("ts"),
        event_time.column(_x("ts"), ok).alias("event_time"),
        F.when(ok, _x("topic")).alias("topic"),
        F.when(lag, _x("partition").try_cast("int")).otherwise(F.lit(0)).alias("partition"),
        F.when(lag, _x("committed_offset")).otherwise(F.lit(0).cast("bigint"))
        .alias("committed_offset"),
        F.when(lag, _x("end_offset")).otherwise(F.lit(0).cast("bigint")).alias("end_offset"),
        F.col("partition").alias("source_partition"),
        F.col("offset").alias("source_offset"),
        F.when(lag, F.lit(None).cast("string")).when(many, dense.rejected())
        .when(meta, F.to_json(F.struct(
            _x("generation").try_cast("int").alias("generation"), _x("protocol").alias("protocol"),
            vf.get("v", "$.members", MEMBERS_TYPE).alias("members"),
            vf.get("v", "$.partitions", PARTITIONS_TYPE).alias("partitions"),
            _x("part").try_cast("int").alias("part"), _x("parts").try_cast("int").alias("parts"))))
        .otherwise(F.to_json(F.struct(
            F.col("reject_reason").alias("reason"), F.substring(raw_text, 1, RAW_VALUE_CHARS).alias("raw_value"),
            F.col("topic").alias("source_topic"), F.col("partition").alias("source_partition"),
            F.col("offset").alias("source_offset"),
            event_time.known_kafka_millis(F.col("timestamp")).alias("kafka_ts"))))
        .alias("detail"),
        F.when(many, dense.readings()).alias(READINGS),
        F.when(lag & _x(LOG_START).isNotNull(), F.array(_x(LOG_START))).when(many, dense.log_starts())
        .alias(LOG_STARTS),
    )

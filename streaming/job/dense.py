"""The ``lag_dense`` event's rules: the record's shape as a whole, then each entry on its own.

A ``lag_dense`` record is one poll of one topic of a group (:mod:`streaming.contracts.events`). Its
common fields (``type``, ``ts``, ``group``, the key, the topic) are checked by
:mod:`streaming.job.validate` as for any event; this module checks the rest in two steps:

1. **The shape** (a broken one rejects the whole record, reason in ``rejected_events``):
   ``partitions``, ``committed_offsets`` and ``end_offsets`` are JSON arrays, ``no_commit`` and
   ``log_start_offsets`` are absent, null or arrays, all of one length, and that length is not 0.
   Unequal lengths leave no way to tell which offset belongs to which partition, so no entry can
   be trusted.
2. **Each entry** i (``partitions[i]``, ``committed_offsets[i]``, ``end_offsets[i]``,
   ``no_commit[i]``) by the ``lag`` event's rules: a partition an integer in 0..2^31-1, offsets
   integers in 0..2^63-1 with the end at or above the committed one, ``no_commit`` a boolean or
   null, a log start offset an integer in 0..its end offset; and its partition only once in the
   record. A bad entry is rejected alone, with reason ``lag_dense entry <i>: <rule>``, its source
   and, as ``raw_value``, the entry as a ``lag`` event; the record's other entries go on. Every copy
   of a repeated partition is rejected (the record does not say which reading is the partition's,
   and rejecting all of them does not depend on the order of the entries).

Cost. The collector's records are all good, and read without a VARIANT
(:func:`streaming.job.canonical.dense_read`: typed arrays); any other record whose arrays are all
integers (its whole shape, known from one ``schema_of_variant``) is as cheap from there. Such a
record passes a handful of array functions (sizes, min, max, its partitions compared with 0..n-1 or
else made distinct, one ``zip_with`` for end >= committed, computed with the read for a record the
fast path read, :func:`streaming.job.canonical.dense_read_ordered`) and leaves as one row. Only a
record that fails them is walked entry by entry, in partition order (one sort: repeats sit side by
side, so finding them is linear). Lambdas (``zip_with``, the walk) keep a projection out of
whole-stage codegen: they sit in as few projections as can hold them (:func:`checked`).

What leaves (the columns :func:`streaming.job.validate.parse` adds): ``readings``, the good entries
packed as :data:`streaming.state.ingest.READINGS` says (:func:`readings`), ``log_starts`` their log
start offsets (null when the record has none), and in ``detail`` a JSON list of the bad entries'
rejected rows (:func:`rejected`, null when none), which the stateful step writes out
(:mod:`streaming.job.stateful`). Example: partitions ``[0, 1, 1, 2]``, committed ``[5, 6, 7, -1]``,
ends ``[9, 9, 9, 9]``: entries 1 and 2 are rejected (``partition 1 appears 2 times``), entry 3 too
(``negative committed_offset -1``), and readings ``[0, 5, 9]`` go on.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from streaming.contracts.events import (
    DENSE_ARRAYS,
    LAG,
    LAG_DENSE,
    LOG_START,
    LOG_STARTS,
    OPTIONAL_ARRAYS,
)
from streaming.job import event_time
from streaming.job.canonical import at_or_above, dense_kind

INT_MAX = 2**31 - 1
NAMES = {"partitions": "partition", "committed_offsets": "committed_offset",
         "end_offsets": "end_offset", "no_commit": "no_commit", LOG_STARTS: LOG_START}
"""Each array and what one entry of it is called (as in a ``lag`` event)."""
HOT_KINDS = {"partitions": "ARRAY<BIGINT>", "committed_offsets": "ARRAY<BIGINT>",
             "end_offsets": "ARRAY<BIGINT>"}
"""The kinds of a record of integers only (``schema_of_variant``; a null entry shows as well,
and is caught)."""
_COMMON = {"type": "STRING", "ts": "BIGINT", "group": "STRING", "topic": "STRING"}
HOT_SHAPES = tuple(_COMMON | HOT_KINDS | flags | starts
                   for flags in ({}, {"no_commit": "ARRAY<BOOLEAN>"})
                   for starts in ({}, {LOG_STARTS: "ARRAY<BIGINT>"}))
"""The fields and kinds of the collector's records: from the record's whole shape (one
``schema_of_variant``, which validation reads anyway), no array's kind is read again."""


Arrays = Callable[[str], Column]
"""A walked record's arrays by name (``partitions``, ..., ``no_commit``,
``log_start_offsets``), as VARIANTs."""


def _c(name: str) -> Column:
    return F.col(f"d_{name}")


def columns(df: DataFrame, kind: Callable[[str], Column], dense: Column, hot: Column,
            exact: Column, read: Column) -> DataFrame:
    """Adds, for ``lag_dense`` records, ``d_k_<array>`` (each array's JSON kind; ``kind(path)``
    reads one, unless ``hot``, the kinds of a record of one of the :data:`HOT_SHAPES`, is not
    null), ``d_<array>`` (as longs: null when not an array, an entry null when not an integer
    that fits; the log starts too), ``d_v_no_commit`` (its entries as VARIANTs), ``d_n`` (the
    partitions' count) and ``d_entries_good`` (:func:`_entries_good`). A record read ``exact`` by
    the fast path (:func:`streaming.job.canonical.dense_read`) has no VARIANT: its arrays and kinds
    come from ``read``."""
    def kind_of(name: str) -> Column:
        return (F.when(~dense, F.lit(None).cast("string")).when(exact, dense_kind(read, name))
                .when(hot.isNotNull(), hot[name]).otherwise(kind(f"$.{name}")))

    # an exact record's flags as VARIANTs only when it has them (a partition that never
    # committed): rare
    flags_v = F.coalesce(F.col("v"), F.when(exact & read["no_commit"].isNotNull(),
                                            F.try_parse_json("value_str")))

    def longs(a: str) -> Column:
        return F.when(exact, read[a]).otherwise(F.try_variant_get("v", f"$.{a}", "array<bigint>"))

    df = df.select("*", *(kind_of(a).alias(f"d_k_{a}") for a in (*DENSE_ARRAYS, *OPTIONAL_ARRAYS)),
                   F.when(dense, F.try_variant_get(flags_v, "$.no_commit", "array<variant>"))
                   .alias("d_v_no_commit"),
                   *(F.when(dense, longs(a)).alias(f"d_{a}") for a in (*DENSE_ARRAYS, LOG_STARTS)))
    df = df.select("*", F.size(_c("partitions")).alias("d_n"))
    return df.select("*", _entries_good().alias("d_entries_good"))


def record_reason() -> Column:
    """Why a ``lag_dense`` record is rejected as a whole (its shape), else null."""
    sizes = [F.size(_c(a)) for a in DENSE_ARRAYS]
    flags, starts = _c("v_no_commit"), _c(LOG_STARTS)

    def given(a: str) -> Column:
        return ~F.coalesce(_c(f"k_{a}") == "VOID", F.lit(True))

    def length(x: Column) -> Column:
        return F.coalesce(F.size(x).cast("string"), F.lit("absent"))

    return F.coalesce(
        *(F.when(_c(f"k_{a}").isNull(), F.lit(f"missing field {a}")) for a in DENSE_ARRAYS),
        *(F.when(_c(a).isNull(), F.format_string(f"field {a} is not a list: %s",
                                                 F.substring(_c(f"k_{a}"), 1, 20)))
          for a in DENSE_ARRAYS),
        F.when(given("no_commit") & flags.isNull(), F.lit("field no_commit is not a list")),
        F.when(given(LOG_STARTS) & starts.isNull(), F.lit(f"field {LOG_STARTS} is not a list")),
        F.when((sizes[0] != sizes[1]) | (sizes[0] != sizes[2])
               | (flags.isNotNull() & (F.size(flags) != sizes[0]))
               | (starts.isNotNull() & (F.size(starts) != sizes[0])),
               # the log starts' length is said only when they are there: older records' reasons
               # stay as they were
               F.concat(F.format_string("arrays of unequal length: partitions %d, "
                                        "committed_offsets %d, end_offsets %d, no_commit %s",
                                        *sizes, length(flags)),
                        F.when(starts.isNotNull(),
                               F.format_string(f", {LOG_STARTS} %d", F.size(starts)))
                        .otherwise(F.lit("")))),
        F.when(sizes[0] == 0, F.lit("no partitions")),
    )


def _entries_good() -> Column:
    """Every entry of a well-shaped record is good but for the order of its offsets
    (:func:`_clean`), proven without looking at the entries one by one. No lambda: computed in
    codegen, before the projection that holds them."""
    p, c, e = (_c(a) for a in DENSE_ARRAYS)
    kinds = F.lit(True)
    for a, k in HOT_KINDS.items():
        kinds = kinds & (_c(f"k_{a}") == k)
    flags = F.coalesce(_c("k_no_commit").isin("VOID", "ARRAY<BOOLEAN>", "ARRAY<VOID>"), F.lit(True))
    starts = ~_starts_given() | F.coalesce(
        (_c(f"k_{LOG_STARTS}") == "ARRAY<BIGINT>") & _no_null_nor_negative(_c(LOG_STARTS)),
        F.lit(False))
    values = _partitions_ok(p) & _no_null_nor_negative(c) & _no_null_nor_negative(e)
    return F.coalesce(kinds & flags & starts & values, F.lit(False))


def _starts_given() -> Column:
    """The record has log start offsets (not absent, not null)."""
    return ~F.coalesce(_c(f"k_{LOG_STARTS}") == "VOID", F.lit(True))


def _clean(exact: Column, order: Column) -> Column:
    """Every entry of a well-shaped record is good: :func:`_entries_good`, and every end offset at
    or above its committed and log start offsets; ``exact``, ``order``: whether the fast path read
    the record, and its :func:`~streaming.job.canonical.dense_order`."""
    e = _c("end_offsets")
    committed = F.coalesce(ordered(e, _c("committed_offsets"), exact, order["committed"]),
                           F.lit(False))
    starts = F.coalesce(ordered(e, _c(LOG_STARTS), exact, order["starts"]), F.lit(False))
    return _c("entries_good") & committed & (~_starts_given() | starts)


def _partitions_ok(p: Column) -> Column:
    """The partitions are integers in 0..2^31-1, each once. The collector lists a topic's partitions
    0..n-1 in order: that one comparison with ``sequence`` proves all of it (no hash set of the
    entries, as ``array_distinct`` builds: ~5% of validation's JVM time on such records); any other
    list is checked rule by rule."""
    n = _c("n")
    listed = F.coalesce(p == F.sequence(F.lit(0).cast("bigint"), (n - 1).cast("bigint")),
                        F.lit(False))
    return listed | (_no_null_nor_negative(p) & (F.array_max(p) <= INT_MAX)
                     & (F.size(F.array_distinct(p)) == n))


def ordered(high: Column, low: Column, exact: Column, read_ahead: Column) -> Column:
    """Every entry of ``high`` at or above its entry of ``low``: for a record the fast path read, as
    computed beside the read (``read_ahead``, a field of
    :func:`~streaming.job.canonical.dense_order`), else here."""
    return F.when(exact, read_ahead).otherwise(at_or_above(high, low))


def _no_null_nor_negative(x: Column) -> Column:
    """Every entry of the non-empty array ``x`` is a number >= 0 (null or false otherwise).

    Without a lambda (``array_compact`` is one, interpreted per entry: ~15 us a 100-entry
    array): ``arrays_overlap`` with ``[-1]`` is null exactly when ``x`` holds a null and no -1,
    true when it holds a -1, and ``array_min`` (which skips nulls) rules out every negative
    entry, -1 included."""
    no_null = F.arrays_overlap(x, F.array(F.lit(-1).cast("bigint"))).isNotNull()
    return no_null & (F.array_min(x) >= 0)


def _is_int(x: Column) -> Column:
    return F.coalesce(F.schema_of_variant(x) == "BIGINT", F.lit(False))


def _entry_reason(i: Column, prev: Column, nxt: Column, arrays: Arrays) -> Column:
    """Why entry ``i`` (0-based) is bad, else null; ``prev``/``nxt``: the partitions next to it in
    partition order."""
    def at(a: str) -> Column:
        return F.element_at(arrays(a), i + 1)

    p, c, e = (F.try_variant_get(at(a), "$", "bigint") for a in DENSE_ARRAYS)

    def not_int(a: str) -> Column:
        return F.when(~_is_int(at(a)),
                      F.format_string(f"{NAMES[a]} is not an integer: %s (%s)",
                                      F.substring(at(a).cast("string"), 1, 40),
                                      F.substring(F.schema_of_variant(at(a)), 1, 20)))

    flag = F.when(arrays("no_commit").isNotNull(), F.schema_of_variant(at("no_commit")))
    start = F.try_variant_get(at(LOG_STARTS), "$", "bigint")
    return F.concat(F.format_string("lag_dense entry %d: ", i), F.coalesce(
        not_int("partitions"),
        F.when(p < 0, F.format_string("negative partition %d", p)),
        F.when(p > INT_MAX, F.format_string(f"partition %d above {INT_MAX}", p)),
        not_int("committed_offsets"),
        F.when(c < 0, F.format_string("negative committed_offset %d", c)),
        not_int("end_offsets"),
        F.when(e < c, F.format_string("end_offset %d below committed_offset %d", e, c)),
        F.when(~F.coalesce(flag.isin("BOOLEAN", "VOID"), F.lit(True)),
               F.lit("no_commit is not a boolean")),
        F.when(arrays(LOG_STARTS).isNotNull(), not_int(LOG_STARTS)),
        F.when(start < 0, F.format_string(f"negative {LOG_START} %d", start)),
        F.when(start > e, F.format_string(f"{LOG_START} %d above end_offset %d", start, e)),
        F.when((prev == p) | (nxt == p), F.format_string("partition %d appears more than once", p)),
    ))


def _walk(arrays: Arrays) -> Column:
    """The entries in partition order (non-integers first) as (i: entry index, r:
    reason or null)."""
    n = _c("n")
    ints = _c("partitions")

    # null unless an integer (2.0 reads as 2 as a long; it is no integer)
    def partition(i: Column) -> Column:
        return F.when(_is_int(F.element_at(arrays("partitions"), i + 1)), F.element_at(ints, i + 1))

    order = F.array_sort(F.transform(F.sequence(F.lit(0), n - 1),
                                     lambda i: F.struct(partition(i).alias("p"), i.alias("i"))))
    ps = F.transform(order, lambda s: s["p"])
    before = F.concat(F.array(F.lit(None).cast("bigint")), ps)
    after = F.concat(ps, F.array(F.lit(None).cast("bigint")))
    return F.transform(order, lambda s, j: F.struct(s["i"].alias("i"), _entry_reason(
        s["i"], F.element_at(before, j + 1), F.element_at(after, j + 2), arrays).alias("r")))


def _once(value: Column, f: Callable[[Column], Column]) -> Column:
    """``f`` of ``value``, ``value`` computed once: a lambda variable holds it (an expression given
    twice in one projection is computed twice, outside codegen's common subexpressions)."""
    return F.transform(F.array(value), f)[0]


def checked(raw_chars: int, exact: Column, order: Column) -> list[Column]:
    """The columns validation adds in the projection of ``reject_reason``
    (:func:`streaming.job.validate.parse`): ``d_clean`` (:func:`_clean`; ``exact``, ``order`` as
    there) and ``d_walked``, for a well-shaped record that is not clean, the outcome of its walk
    entry by entry: ``readings``, ``log_starts`` (its good entries, as :func:`readings` and
    :func:`log_starts` give them) and ``rejected`` (its bad ones, :func:`rejected`); ``raw_chars``:
    the length a rejected row's ``raw_value`` is cut to.

    Every lambda of validation sits in that one projection (its rules for members and partitions,
    the order of an entry, the walk): a projection holding a lambda runs outside whole-stage
    codegen, interpreted, and copies the whole row; the rest, :func:`streaming.job.validate._narrow`
    included, stays in codegen for every record. A record is walked when its shape is right whatever
    its other fields say (they are not known in this projection): one the common rules reject is
    walked for nothing, and its walk is not used."""
    clean = _clean(exact, order)
    # a clean record: no second shape check
    walked = is_dense(F.col("x_type")) & ~clean & record_reason().isNull()
    # a record read by the fast path has no VARIANT: one is parsed for the few that must be walked
    v = F.coalesce(F.col("v"), F.try_parse_json("value_str"))
    arrays = F.struct(*(F.try_variant_get(v, f"$.{a}", "array<variant>").alias(a)
                        for a in (*DENSE_ARRAYS, LOG_STARTS)))

    def outcome(vs: Column) -> Column:
        def arrays_of(a: str) -> Column:
            return _c("v_no_commit") if a == "no_commit" else vs[a]

        return _once(_walk(arrays_of), lambda w: F.struct(
            F.concat(*(_good(w, _c(a)) for a in DENSE_ARRAYS)).alias("readings"),
            F.when(_c(LOG_STARTS).isNotNull(), _good(w, _c(LOG_STARTS))).alias("log_starts"),
            _rejected(w, arrays_of, raw_chars).alias("rejected")))

    return [clean.alias("d_clean"), F.when(walked, _once(arrays, outcome)).alias("d_walked")]


def readings() -> Column:
    """A valid record's good entries as the stateful step reads them (``READINGS``: partitions,
    committed, ends)."""
    p, c, e = (_c(a) for a in DENSE_ARRAYS)
    return F.when(_c("clean"), F.concat(p, c, e)).otherwise(_c("walked")["readings"])


def log_starts() -> Column:
    """A valid record's good entries' log start offsets (null when it has none)."""
    starts = _c(LOG_STARTS)
    return F.when(starts.isNotNull(),
                  F.when(_c("clean"), starts).otherwise(_c("walked")["log_starts"]))


def rejected() -> Column:
    """A valid record's bad entries as a JSON list of rejected rows' details
    (validate.REJECTED_SCHEMA), else null."""
    return F.when(~_c("clean"), _c("walked")["rejected"])


def _good(walk: Column, x: Column) -> Column:
    """The entries of array ``x`` its ``walk`` found good."""
    good = F.transform(F.filter(walk, lambda s: s["r"].isNull()), lambda s: s["i"] + 1)
    return F.transform(good, lambda i: F.element_at(x, i))


def _rejected(walk: Column, arrays: Arrays, raw_chars: int) -> Column:
    """The entries its ``walk`` found bad as a JSON list of rejected rows' details, else null."""
    def detail(s: Column) -> Column:
        def at(a: str) -> Column:
            return F.element_at(arrays(a), s["i"] + 1)

        entry = F.to_json(F.struct(
            F.lit(LAG).alias("type"), F.col("x_ts").alias("ts"), F.col("x_group").alias("group"),
            F.col("x_topic").alias("topic"),
            *(at(a).alias(NAMES[a]) for a in DENSE_ARRAYS),
            F.when(arrays("no_commit").isNotNull(), at("no_commit")).alias("no_commit"),
            F.when(arrays(LOG_STARTS).isNotNull(), at(LOG_STARTS)).alias(LOG_START)))
        return F.struct(s["r"].alias("reason"), F.substring(entry, 1, raw_chars).alias("raw_value"),
                        F.col("topic").alias("source_topic"),
                        F.col("partition").alias("source_partition"),
                        F.col("offset").alias("source_offset"),
                        event_time.known_kafka_millis(F.col("timestamp")).alias("kafka_ts"))

    bad = F.filter(walk, lambda s: s["r"].isNotNull())
    return F.when(F.size(bad) > 0, F.to_json(F.transform(bad, detail)))


def is_dense(type_col: Column) -> Column:
    return F.coalesce(type_col == LAG_DENSE, F.lit(False))

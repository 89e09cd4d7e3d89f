"""Validation's fast paths: the collector's own lag events read from their text, without a VARIANT.

**lag.** A lag event byte for byte as :func:`streaming.contracts.events.encode` writes it (compact,
the fields in :data:`~streaming.contracts.events.LAG_FIELDS`' order, no escapes in the strings) is
recognised by one regex over the text (:data:`CANONICAL_LAG`) and its values are cut out of it: no
JSON parse, no VARIANT. The regex admits only texts whose every field has the right JSON type and
fits its column (a group or topic without quotes, backslashes or control characters; integers
without sign, leading zeros or fraction, at most 18 digits, or 10 for the partition), so the values
are exact, and every rule of :mod:`streaming.job.validate` then runs on them as on any other record:
a canonical text is rejected, or not, with the same reason as by the general path
(tests/integration/test_validate_paths.py checks this).

Split at its quotes, a canonical text is always the same pieces, since a group or topic holds no
quote. With the fields in their order, each field's name is a piece; a string value is the second
piece after its name (``:`` comes between), an integer the first (``:<digits>,``, or ``:<digits>}``
for the last field); the piece after ``end_offset``'s value names the optional ``log_start_offset``
when it follows (its value the piece after that); the optional ``metadata_events`` closes the text
when it is there (its name the last piece but one, its value the last), and ``no_commit``
(``true``/``false``) comes just before it, or closes the text. So for
``{"type":"lag","ts":1,"group":"g",...`` the 1-based pieces are ``{``, ``type``, ``:``, ``lag``,
``,``, ``ts``, ``:1,``, ``group``, ``:``, ``g`` ...: ts is piece 7 and the group piece 10. The
positions are derived from the field order (:data:`PIECES`), never written down. One split copies
each piece once; cutting each field with substring_index scanned the text from its start for every
field (a third of the validation's time, 1.18 s against 0.81 s for a million events).

**lag_dense.** A text that starts as the collector's do (:data:`DENSE_PREFIX`) is read with
``from_json`` into :data:`DENSE_SCHEMA` (typed arrays) and kept when ``to_json`` of what was read
gives the text back, byte for byte (:func:`dense_read`). The round trip is the proof of exactness: a
text that is exactly the JSON of some values means those values, however lenient the reader was on
the way (a ``1.0``, an integer past 2^63, a duplicate key, a number where a string belongs, trailing
text, an explicit null or an unknown field all fail to come back the same and take the general
path). Every rule then runs on the values read (strings keep their JSON escapes' meaning: the
group's control characters are checked as on any record). Cost, 20,000 texts of 100 partitions on 2
cores: from_json and to_json ~25 us a record against ~230 us for parsing the VARIANT and reading its
three arrays.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from streaming.contracts.events import (
    DENSE_ARRAYS,
    LAG,
    LAG_DENSE,
    LAG_FIELDS,
    LOG_START,
    LOG_STARTS,
    METADATA_EVENTS,
)

_DIGITS = "(?:0|[1-9][0-9]{0,%d})"
_STRING_VALUES = {
    "type": f'"{LAG}"', "group": r'"[^"\\\x00-\x1f\x7f]+"', "topic": r'"[a-zA-Z0-9._-]{1,249}"',
}
"""The regex of each string field's value (with its quotes)."""
_MORE_DIGITS = {"ts": 17, "partition": 9, "committed_offset": 17, "end_offset": 17, LOG_START: 17,
                METADATA_EVENTS: 9}
"""Each integer field's digits after the first, at most: 18 digits fit a BIGINT, 10 cover
an INT's range."""
LAG_KINDS = {n: "STRING" if n in _STRING_VALUES else "BIGINT" for n in LAG_FIELDS}
"""A lag event's fields and their JSON types, as ``schema_of_variant`` names them."""

CANONICAL_LAG = (r"\A\{" + ",".join(
    f'"{n}":' + (_STRING_VALUES[n] if n in _STRING_VALUES else _DIGITS % _MORE_DIGITS[n])
    for n in LAG_FIELDS)
    + f'(?:,"{LOG_START}":' + _DIGITS % _MORE_DIGITS[LOG_START] + ")?"
    + r'(?:,"no_commit":(?:true|false))?'
    + f'(?:,"{METADATA_EVENTS}":' + _DIGITS % _MORE_DIGITS[METADATA_EVENTS] + ")?"
    + r'\}\z')
"""A lag event as the collector encodes it (Java regex, whole text)."""


def _pieces() -> dict[str, int]:
    """Each field's value piece (1-based) in a canonical text split at its quotes."""
    out, name = {}, 2
    for n in LAG_FIELDS:
        out[n] = name + 2 if n in _STRING_VALUES else name + 1
        name += 4 if n in _STRING_VALUES else 2
    return out


PIECES = _pieces()
LAST_PIECE = PIECES[LAG_FIELDS[-1]]
_HAS_LOG_START = (f"(size(pieces) > {LAST_PIECE + 1} "
                  f"and element_at(pieces, {LAST_PIECE + 1}) = '{LOG_START}')")
# the count, when there is one, is the last field: its name the last piece but one
_HAS_COUNT = f"(element_at(pieces, -2) = '{METADATA_EVENTS}')"
# no_commit is the last field before it, if any: its name two pieces before the field after it
_HAS_FLAG = f"(element_at(pieces, if({_HAS_COUNT}, -4, -2)) = 'no_commit')"
_FLAG = f"startswith(element_at(pieces, if({_HAS_COUNT}, -3, -1)), ':t')"


def canonical_pieces(df: DataFrame) -> DataFrame:
    """Adds ``pieces``: a canonical text split at its quotes (null for any other)."""
    return df.withColumn("pieces", F.when(F.col("canonical"), F.split("value_str", '"')))


def canonical_value(name: str) -> Column | None:
    """Field ``name`` of a canonical lag event (column ``pieces``), or None: never there."""
    if name == "type":
        return F.lit(LAG)
    if name in _STRING_VALUES:
        return F.element_at("pieces", PIECES[name])
    if name in PIECES or name == LOG_START:
        piece = f"element_at(pieces, {PIECES.get(name, LAST_PIECE + 2)})"
        value = F.expr(f"substring({piece}, 2, length({piece}) - 2)").cast("bigint")
        return value if name in PIECES else F.when(F.expr(_HAS_LOG_START), value)
    if name == "no_commit":
        return F.when(F.expr(_HAS_FLAG), F.expr(_FLAG))
    if name == METADATA_EVENTS:
        return F.when(F.expr(_HAS_COUNT),
                      F.expr("substring(element_at(pieces, -1), 2, "
                             "length(element_at(pieces, -1)) - 2)").cast("bigint"))
    return None


def canonical_kind(name: str) -> Column:
    """The JSON type of field ``name`` of a canonical lag event, as ``schema_of_variant``
    names it."""
    if name == "no_commit":
        return F.when(F.expr(_HAS_FLAG), F.lit("BOOLEAN"))
    if name == METADATA_EVENTS:
        return F.when(F.expr(_HAS_COUNT), F.lit("BIGINT"))
    if name == LOG_START:
        return F.when(F.expr(_HAS_LOG_START), F.lit("BIGINT"))
    return F.lit(LAG_KINDS.get(name)).cast("string")


DENSE_TYPES = {"type": "string", "ts": "bigint", "group": "string", "topic": "string",
               **{a: "array<bigint>" for a in DENSE_ARRAYS}, "no_commit": "array<boolean>",
               LOG_STARTS: "array<bigint>", METADATA_EVENTS: "bigint"}
"""A ``lag_dense`` event's fields in the order :func:`streaming.contracts.events.dense_lag_event`
writes them."""
DENSE_COMMON = ("type", "ts", "group", "topic")
"""The fields a ``lag_dense`` event shares with every event (the rest are its arrays)."""
DENSE_SCALARS = (*DENSE_COMMON, METADATA_EVENTS)
"""A ``lag_dense`` event's fields that are not arrays (the last optional)."""
DENSE_SCHEMA = "struct<" + ", ".join(f"`{n}`: {t}" for n, t in DENSE_TYPES.items()) + ">"
DENSE_PREFIX = f'{{"type":"{LAG_DENSE}",'


def dense_read(value_str: Column, eligible: Column) -> Column:
    """An ``eligible`` text that starts as a ``lag_dense`` event, read into :data:`DENSE_SCHEMA`
    (null for others); :func:`is_exact` tells whether to trust it."""
    return F.when(eligible & value_str.startswith(DENSE_PREFIX),
                  F.from_json(value_str, DENSE_SCHEMA))


def dense_read_ordered(value_str: Column, eligible: Column) -> Column:
    """:func:`dense_read` and its :func:`dense_order`, as fields ``read`` and ``order`` of one
    struct: the text parsed once, the order computed on the reader's own arrays.

    The order's lambda runs inside ``transform`` over the one-element array of the read, so its
    variable holds the reader's value: given the read's expression instead, each ``zip_with``
    (interpreted, outside codegen's common subexpressions) parsed the text again, twice each; given
    the read's column, each array entry it reads costs Spark 4.2 a SQLConf built anew (``TypeOps``
    on UnsafeArrayData). JVM CPU a 100-entry record (local[1], 20,000 records, from_json and to_json
    included): 66 us this way, 93 us parsing again, 46 us with no order at all."""
    read = dense_read(value_str, eligible)
    # null for any other text: no array built, no lambda run (the projection is interpreted)
    return F.when(eligible, F.transform(
        F.array(read), lambda r: F.struct(r.alias("read"), dense_order(r).alias("order")))[0])


def dense_order(read: Column) -> Column:
    """Of a record :func:`dense_read` read: whether every entry's end offset is at or above its
    committed offset (field ``committed``) and its log start offset (``starts``), as
    ``array_min`` of the entries' comparisons tells it (false: one is below; null: no entry
    compares, the arrays null or empty or their entries null). The rules ask it of a record whose
    offsets are integers >= 0 (:func:`streaming.job.dense.ordered`); :func:`dense_read_ordered`
    says where it is computed."""
    ends = read["end_offsets"]
    return F.struct(at_or_above(ends, read["committed_offsets"]).alias("committed"),
                    at_or_above(ends, read[LOG_STARTS]).alias("starts"))


def at_or_above(high: Column, low: Column) -> Column:
    """Whether every entry of array ``high`` is at or above the same entry of ``low`` (see
    :func:`dense_order`). A comparison, not a difference: no overflow whatever the entries (an ANSI
    overflow would fail the query)."""
    return F.array_min(F.zip_with(high, low, lambda a, b: a >= b))


def is_exact(read: Column, value_str: Column) -> Column:
    """The text is exactly the JSON of what :func:`dense_read` read from it (never null)."""
    return F.coalesce(F.to_json(read) == value_str, F.lit(False))


def dense_kind(read: Column, name: str) -> Column:
    """The JSON type of field ``name`` of an exact ``lag_dense`` text, as ``schema_of_variant``
    names it (null: absent). An array is named by its declared type even when its entries are all
    null (``schema_of_variant`` would say ``ARRAY<VOID>``): validation tells the two apart only to
    walk such a record entry by entry, which a null entry makes it do either way."""
    kind = F.lit(DENSE_TYPES[name].upper())
    return kind if name in (*DENSE_COMMON, *DENSE_ARRAYS) else F.when(read[name].isNotNull(), kind)

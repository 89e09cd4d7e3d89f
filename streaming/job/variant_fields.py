"""One field of a JSON record parsed as a Spark VARIANT, checked without converting the record: its
JSON type as ``schema_of_variant`` names it and its value where that type is right
(:mod:`streaming.job.validate`'s rules). Every check is null-safe (an absent field is not an
integer, not a string, ...), so a rule never reads null.

Example: ``{"partition": 1e400}`` has kind DOUBLE, so ``is_int(v, "$.partition", 0, INT_MAX)`` is
false, as is ``is_long`` of ``2**63`` (a DECIMAL); ``{"topic": ".."}`` is a string but no topic name
(Kafka refuses ``.`` and ``..``).
"""

from __future__ import annotations

import string

from pyspark.sql import Column
from pyspark.sql import functions as F

MAX_TOPIC_CHARS = 249
_TOPIC_CHARS = string.ascii_letters + string.digits + "._-"


def get(v: Column | str, path: str, type_name: str = "variant") -> Column:
    return F.try_variant_get(F.col(v) if isinstance(v, str) else v, path, type_name)


def kind(v: Column | str, path: str) -> Column:
    """The JSON type of a field as Spark names it: BIGINT (an integer that fits a LONG), STRING,
    BOOLEAN, VOID (JSON null), DECIMAL(p,s) / DOUBLE (other numbers), OBJECT<..>, ARRAY<..>; null
    when absent."""
    return F.schema_of_variant(get(v, path))


def absent(v: Column | str, path: str) -> Column:
    return F.coalesce(kind(v, path) == "VOID", F.lit(True))


def is_int(v: Column | str, path: str, lo: int, hi: int) -> Column:
    """The field is an integer in [lo, hi]; a float such as 1000.0 or 1e400 is not."""
    return F.coalesce((kind(v, path) == "BIGINT") & get(v, path, "bigint").between(lo, hi),
                      F.lit(False))


def is_long(v: Column | str, path: str) -> Column:
    """The field is an integer that fits a LONG (2**63 is a DECIMAL, 1000.0 a DECIMAL,
    1e400 a DOUBLE)."""
    return F.coalesce(kind(v, path) == "BIGINT", F.lit(False))


def is_number(v: Column | str, path: str, lo: float, hi: float) -> Column:
    """The field is a JSON number (integer, decimal or double) in [lo, hi]; 1e400 is not."""
    k = kind(v, path)
    number = k.isin("BIGINT", "DOUBLE") | k.startswith("DECIMAL")
    return F.coalesce(number & get(v, path, "double").between(lo, hi), F.lit(False))


def is_string(v: Column | str, path: str) -> Column:
    return F.coalesce(kind(v, path) == "STRING", F.lit(False))


def is_topic_name(name: Column) -> Column:
    # translate instead of a regex: this runs for every lag event
    legal = F.length(name).between(1, MAX_TOPIC_CHARS) & (F.translate(name, _TOPIC_CHARS, "") == "")
    return F.coalesce(legal & ~name.isin(".", ".."), F.lit(False))


def topic_at(v: Column | str, path: str) -> Column:
    return is_string(v, path) & is_topic_name(get(v, path, "string"))


def as_list(v: Column | str, path: str) -> Column:
    """The field as an array of VARIANTs; null when it is not a JSON array."""
    return get(v, path, "array<variant>")

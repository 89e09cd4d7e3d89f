"""The rules of a metadata event, checked by :mod:`streaming.job.validate` after the rules every
event shares, in this order: a ``members`` event's, a ``partitions`` event's, then the
``part``/``parts`` of a split event (:mod:`streaming.contracts.event_parts`). Each member and each
partition of a list is judged on its own (:func:`_bad_member`, :func:`_bad_partition`); the first
one that breaks a rule gives the reason.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from streaming.contracts.event_parts import MAX_PARTS
from streaming.contracts.events import MEMBERS, PARTITIONS
from streaming.contracts.member_load import MAX_RECORD_COST_S, MAX_RECORDS_PER_S
from streaming.job import variant_fields as vf
from streaming.job.dense import INT_MAX
from streaming.job.field_columns import field, k, opt, x


def _any(array: Column, predicate) -> Column:
    return F.coalesce(F.exists(array, lambda e: F.coalesce(predicate(e), F.lit(True))),
                      F.lit(False))


def _optional_string(m: Column, name: str) -> Column:
    return vf.absent(m, f"$.{name}") | vf.is_string(m, f"$.{name}")


def _bad_member(m: Column) -> Column:
    return F.coalesce(
        F.when(~vf.is_string(m, "$.member_id") | (vf.get(m, "$.member_id", "string") == ""),
               F.lit("a member has no member_id")),
        *(F.when(~_optional_string(m, n), F.lit(f"a member's {n} is not a string or null"))
          for n in ("instance_id", "client_id", "host", "rack")),
        F.when(~vf.absent(m, "$.topics") & (
            vf.as_list(m, "$.topics").isNull()
            | _any(vf.as_list(m, "$.topics"), lambda t: ~vf.topic_at(t, "$"))),
            F.lit("a member's topics are not a list of topic names")),
        F.when(~vf.absent(m, "$.assigned") & (
            vf.as_list(m, "$.assigned").isNull() | _any(vf.as_list(m, "$.assigned"), lambda a: ~(
                (F.size(vf.as_list(a, "$")) == 2) & vf.topic_at(a, "$[0]")
                & vf.is_int(a, "$[1]", 0, INT_MAX)))),
            F.lit("an assigned entry is not [topic, partition >= 0]")),
        F.when(~vf.absent(m, "$.load") & ~(
            vf.is_long(m, "$.load.ts") & (vf.get(m, "$.load.ts", "bigint") >= 0)
            & vf.is_number(m, "$.load.busy", 0.0, 1.0)
            & vf.is_number(m, "$.load.records_per_s", 0.0, MAX_RECORDS_PER_S)),
            F.lit("a member's load is not {ts, busy in 0..1, records_per_s >= 0}")),
        F.when(~vf.absent(m, "$.load.record_cost_s") & ~(
            vf.is_number(m, "$.load.record_cost_s", 0.0, MAX_RECORD_COST_S)
            & (vf.get(m, "$.load.record_cost_s", "double") > 0)),
            F.lit(f"a member's load record_cost_s is not a number in (0, {MAX_RECORD_COST_S:g}]")),
        F.when(~vf.absent(m, "$.load.records_lag_min") & ~(
            vf.is_long(m, "$.load.records_lag_min")
            & (vf.get(m, "$.load.records_lag_min", "bigint") >= 0)),
            F.lit("a member's load records_lag_min is not an integer >= 0")),
    )


def _bad_partition(p: Column) -> Column:
    replicas, racks = vf.as_list(p, "$.replicas"), vf.as_list(p, "$.replica_racks")
    return F.coalesce(
        F.when(~vf.is_long(p, "$.partition") | (vf.get(p, "$.partition", "bigint") < 0),
               F.lit("a partition number is missing or negative")),
        F.when(vf.get(p, "$.partition", "bigint") > INT_MAX,
               F.lit(f"a partition number is above {INT_MAX}")),
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
    return F.try_element_at(F.filter(F.transform(array, reason_of), lambda r: r.isNotNull()),
                            F.lit(1))


def rules() -> list[Column]:
    """The first rule a ``members`` event breaks, the first a ``partitions`` event breaks, and the
    first a split event's ``part``/``parts`` break: each null when none (or for another type)."""
    whole = F.coalesce(k("parts") == "VOID", F.lit(True))
    members, parts = x("members"), x("partitions")
    numbers = F.transform(parts, lambda p: vf.get(p, "$.partition", "bigint"))
    member_ids = F.transform(members, lambda m: vf.get(m, "$.member_id", "string"))
    members_rules = F.when(x("type") == MEMBERS, F.coalesce(
        field("generation", "an integer", x("generation").isNotNull()),
        F.when(~x("generation").between(-1, INT_MAX),
               F.lit(f"generation out of range -1..{INT_MAX}")),
        F.when(~opt("protocol", "STRING"), F.lit("field protocol is not a string")),
        field("members", "a list of members", members.isNotNull()),
        _first(members, _bad_member),
        F.when(whole & (F.size(F.array_distinct(member_ids)) != F.size(members)),
               F.lit("duplicate member_id")),
    ))
    partitions_rules = F.when(x("type") == PARTITIONS, F.coalesce(
        field("topic", "a string", x("topic").isNotNull()),
        F.when(~vf.is_topic_name(x("topic")), F.lit("invalid topic name")),
        field("partitions", "a list of partitions", parts.isNotNull()),
        _first(parts, _bad_partition),
        F.when(F.size(F.array_distinct(numbers)) != F.size(numbers),
               F.lit("duplicate partition numbers")),
        F.when(whole & (F.size(numbers) > 0) & (F.array_max(numbers) != F.size(numbers) - 1),
               F.lit("partition numbers are not 0..n-1")),
    ))
    part_ok = x("part").between(0, MAX_PARTS) & (x("part") < x("parts"))
    parts_rules = F.when(x("type").isin(MEMBERS, PARTITIONS) & ~whole, F.coalesce(
        F.when(~F.coalesce(x("parts").between(1, MAX_PARTS), F.lit(False)),
               F.lit(f"parts is not an integer in 1..{MAX_PARTS}")),
        F.when(~F.coalesce(part_ok, F.lit(False)), F.lit("part is not an integer in 0..parts-1")),
    ))
    return [members_rules, partitions_rules, parts_rules]

"""Comparing outputs: both Delta tables row by row, and the trigger feed by ``recommendation_id``.

The feed is at-least-once (a batch replayed after its feed write publishes again), so its duplicates
are counted, not removed, and what its reader makes of it is compared too:
:class:`streaming.apply.feed.LatestRecommendations`, fed every message in order, duplicates
included, must end with the same latest record per group as on the reference run."""

from __future__ import annotations

import json
from collections import Counter

from streaming.config import Config
from streaming.contracts.tables import RECOMMENDATIONS, REJECTED

Messages = list[tuple[bytes | None, bytes]]
"""(key, value) of every message of a feed, in partition and offset order."""


def read_feed(cfg: Config, topic: str) -> Messages:
    """Every message of the trigger feed in partition and offset order."""
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(topic, bootstrap_servers=cfg.kafka.bootstrap_servers,
                             auto_offset_reset="earliest", consumer_timeout_ms=5000, group_id=None)
    try:
        read = [(m.partition, m.offset, m.key, m.value) for m in consumer]
    finally:
        consumer.close()
    return [(key, value) for _, _, key, value in sorted(read, key=lambda r: (r[0], r[1]))]


def distinct(messages: Messages) -> dict[str, str]:
    """recommendation_id -> canonical JSON; raises on two different messages under one id (a
    duplicate is a replay of the same publication, never another)."""
    out: dict[str, str] = {}
    for _, value in messages:
        record = json.loads(value)
        canonical = json.dumps(record, sort_keys=True)
        if out.setdefault(record["recommendation_id"], canonical) != canonical:
            raise AssertionError(f"two different feed messages for {record['recommendation_id']}")
    return out


def as_consumed(messages: Messages) -> dict[str, str]:
    """group -> the latest record a feed reader keeps after every message, duplicates included."""
    from streaming.apply.feed import LatestRecommendations

    latest = LatestRecommendations()
    for key, value in messages:
        latest.offer(value, key)
    return {g: json.dumps(latest.latest(g), sort_keys=True) for g in latest.groups()}


def table_rows(path: str) -> list[str]:
    """Every row of the Delta table, every column, as sorted canonical JSON (read with delta-rs)."""
    from deltalake import DeltaTable

    rows = DeltaTable(path).to_pyarrow_table().to_pylist()
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in rows)


def compare(cfg: Config, ref_tables: str, ref_topic: str, chaos_tables: str,
            chaos_topic: str) -> dict:
    """Rows compared and differences (rows in one run and not in the other), per output."""
    out = {}
    for name in (RECOMMENDATIONS, REJECTED):
        a, b = table_rows(f"{ref_tables}/{name}"), table_rows(f"{chaos_tables}/{name}")
        out[name] = {"reference": len(a), "chaos": len(b), "differences": _diff(a, b)}
    out["feed"] = compare_feeds(read_feed(cfg, ref_topic), read_feed(cfg, chaos_topic))
    return out


def compare_feeds(ref: Messages, chaos: Messages) -> dict:
    """The feeds' distinct messages compared, their duplicates counted, and what the reader kept."""
    fa, fb = distinct(ref), distinct(chaos)
    ca, cb = as_consumed(ref), as_consumed(chaos)
    return {"reference": len(fa), "chaos": len(fb),
            "differences": _diff(sorted(fa.values()), sorted(fb.values())),
            "duplicates": {"reference": len(ref) - len(fa), "chaos": len(chaos) - len(fb)},
            "consumed_groups": {"reference": len(ca), "chaos": len(cb)},
            "consumed_differences": sum(ca.get(g) != cb.get(g) for g in ca.keys() | cb.keys())}


def _diff(a: list[str], b: list[str]) -> int:
    ca, cb = Counter(a), Counter(b)
    return sum(((ca - cb) + (cb - ca)).values())


def same(outputs: dict) -> bool:
    """Both tables and the feed's distinct messages equal to the reference's, and the feed's reader
    keeping the same records."""
    equal = all(o["differences"] == 0 and o["chaos"] == o["reference"] for o in outputs.values())
    return equal and outputs["feed"]["consumed_differences"] == 0


def feed_words(feed: dict) -> str:
    """The feed's duplicates and what its reader made of it, for a report line."""
    dup = feed["duplicates"]
    return (f"{dup['chaos']} duplicate(s) in the feed (reference {dup['reference']}), "
            f"{feed['consumed_differences']} group(s) read differently")

"""Comparing outputs: both Delta tables row by row and the trigger feed deduplicated by recommendation_id."""

from __future__ import annotations

import json

from streaming.config import Config
from streaming.contracts.tables import RECOMMENDATIONS, REJECTED


def read_feed(cfg: Config, topic: str) -> dict[str, str]:
    """The trigger feed, deduplicated by recommendation_id (id -> canonical JSON); raises on two different
    messages under one id."""
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(topic, bootstrap_servers=cfg.kafka.bootstrap_servers, auto_offset_reset="earliest",
                             consumer_timeout_ms=5000, group_id=None)
    out: dict[str, str] = {}
    try:
        for m in consumer:
            value = json.loads(m.value)
            canonical = json.dumps(value, sort_keys=True)
            if out.setdefault(value["recommendation_id"], canonical) != canonical:
                raise AssertionError(f"two different feed messages for {value['recommendation_id']}")
    finally:
        consumer.close()
    return out


def table_rows(path: str) -> list[str]:
    """Every row of the Delta table, every column, as sorted canonical JSON (read with delta-rs)."""
    from deltalake import DeltaTable

    return sorted(json.dumps(r, sort_keys=True, default=str) for r in DeltaTable(path).to_pyarrow_table().to_pylist())


def compare(cfg: Config, ref_tables: str, ref_topic: str, chaos_tables: str, chaos_topic: str) -> dict:
    """Rows compared and differences (rows in one run and not in the other), per output."""
    out = {}
    for name in (RECOMMENDATIONS, REJECTED):
        a, b = table_rows(f"{ref_tables}/{name}"), table_rows(f"{chaos_tables}/{name}")
        out[name] = {"reference": len(a), "chaos": len(b), "differences": _diff(a, b)}
    fa, fb = read_feed(cfg, ref_topic), read_feed(cfg, chaos_topic)
    out["feed"] = {"reference": len(fa), "chaos": len(fb),
                   "differences": _diff(sorted(fa.values()), sorted(fb.values()))}
    return out


def _diff(a: list[str], b: list[str]) -> int:
    from collections import Counter

    ca, cb = Counter(a), Counter(b)
    return sum(((ca - cb) + (cb - ca)).values())

"""The streaming job on the real stack: events produced to Kafka, the query run with availableNow,
recommendations and rejected records read back from Delta.

One query run covers several scenarios, one consumer group each, so Spark starts once."""

from __future__ import annotations

import dataclasses
import json
import uuid

import pytest

from streaming.config import Config, JobSettings, PolicySettings
from streaming.contracts import events as ev
from streaming.contracts.tables import RECOMMENDATIONS, REJECTED
from streaming.dev.produce import produce
from streaming.job import query

T0 = 1_763_700_000_000
STEP = 10_000  # one collector poll every 10 s of event time


def job_config(cfg: Config, tag: str, **policy) -> Config:
    return dataclasses.replace(
        cfg,
        kafka=dataclasses.replace(cfg.kafka, lag_topic=f"lag.{tag}", metadata_topic=f"meta.{tag}",
                                  trigger_topic=f"triggers.{tag}"),
        paths=dataclasses.replace(cfg.paths, tables=f"{cfg.paths.tables}/{tag}",
                                  checkpoints=f"{cfg.paths.checkpoints}/{tag}"),
        policy=dataclasses.replace(PolicySettings(), **({  # auto: the tests read the feed too
            "assignor": "balanced", "skew_threshold": 1.5, "skew_observations": 3,
            "min_total_lag": 1000, "min_improvement": 0.2, "cooldown_s": 300,
            "mode": "auto"} | policy)),
        job=dataclasses.replace(JobSettings(), watermark_delay="2 minutes", group_timeout_s=600,
                                query_name=f"rebalancer_{tag}"),
    )


def member(mid: str, assigned: list[tuple[str, int]], rack: str | None = None,
           topics=("t0",)) -> dict:
    return ev.member_entry(mid, topics, assigned, client_id=f"client-{mid}", host="/127.0.0.1",
                           rack=rack)


def lag_poll(ts: int, group: str, lags: dict[int, int], topic: str = "t0",
             committed: dict[int, int] | None = None):
    out = []
    for p, lag in lags.items():
        # committed offsets move: nothing is stuck
        c = (committed or {}).get(p, 1_000_000 + ts // 100)
        out.append(ev.lag_event(ts, group, topic, p, c, c + lag))
    return out


def rows(spark, cfg: Config, table: str) -> list:
    return spark.read.format("delta").load(cfg.table_path(table)).collect()


@pytest.fixture(scope="module")
def scenario_run(spark, cfg):
    """Produce every scenario's events, run the query once, return (config, recommendations,
    rejected)."""
    tag = uuid.uuid4().hex[:6]
    jc = job_config(cfg, tag)
    events: list[dict] = []

    # 1. sustained lag skew: C0 holds two hot partitions for 10 polls
    g = "skewed"
    events.append(ev.members_event(T0, g, 1, "range", [member("C0", [("t0", 0), ("t0", 1)]),
                                                        member("C1", [("t0", 2), ("t0", 3)])]))
    for i in range(10):
        events += lag_poll(T0 + i * STEP, g, {0: 9000, 1: 8000, 2: 100, 3: 100})

    # 2. a spike shorter than N (2 polls of skew, then balanced)
    g = "spike"
    events.append(ev.members_event(T0, g, 1, "range", [member("C0", [("t0", 0), ("t0", 1)]),
                                                        member("C1", [("t0", 2), ("t0", 3)])]))
    for i in range(10):
        hot = i in (3, 4)
        events += lag_poll(T0 + i * STEP, g, {0: 9000 if hot else 2000, 1: 2000, 2: 2000, 3: 2000})

    # 3. a balanced group under noisy lag for a long run
    g = "noisy"
    events.append(ev.members_event(T0, g, 1, "range", [member("C0", [("t0", 0), ("t0", 1)]),
                                                        member("C1", [("t0", 2), ("t0", 3)])]))
    for i in range(30):
        jitter = [(i * 37 + p * 101) % 400 for p in range(4)]
        events += lag_poll(T0 + i * STEP, g, {p: 3000 + jitter[p] for p in range(4)})

    # 4. replica racks change under a rack-aware group
    g = "racks"
    racks_before = [["a", "b"], ["b", "c"], ["c", "a"], ["a", "b"]]
    racks_after = [["b", "c"], ["b", "c"], ["c", "a"], ["a", "b"]]  # t0p0 leaves rack a
    parts = lambda racks: [ev.partition_entry(p, 1, [1, 2], r)  # noqa: E731
                           for p, r in enumerate(racks)]
    events.append(ev.partitions_event(T0, g, "t0", parts(racks_before)))
    events.append(ev.members_event(T0, g, 1, "range", [
        member("A", [("t0", 0), ("t0", 3)], rack="a"), member("B", [("t0", 1)], rack="b"),
        member("C", [("t0", 2)], rack="c")]))
    for i in range(3):
        events += lag_poll(T0 + i * STEP, g, {p: 500 for p in range(4)})
    events.append(ev.partitions_event(T0 + 3 * STEP, g, "t0", parts(racks_after)))
    for i in range(3, 6):
        events += lag_poll(T0 + i * STEP, g, {p: 500 for p in range(4)})

    # 5. malformed records of many kinds, in the same topics as valid ones
    bad = [
        (b"bad", b"not json at all"),
        (b"bad", b"[1, 2, 3]"),
        (b"bad", json.dumps({"ts": T0, "group": "bad"}).encode()),
        (b"bad", json.dumps({"type": "offsets", "ts": T0, "group": "bad"}).encode()),
        (b"bad", json.dumps({"type": "lag", "group": "bad", "topic": "t", "partition": 0,
                             "committed_offset": 1, "end_offset": 2}).encode()),
        (b"bad", json.dumps({"type": "lag", "ts": "yesterday", "group": "bad"}).encode()),
        (b"bad", json.dumps(ev.lag_event(T0, "bad", "t", 0, 5, 9) | {"partition": -1}).encode()),
        (b"bad",
         json.dumps(ev.lag_event(T0, "bad", "t", 0, 5, 9) | {"committed_offset": -5}).encode()),
        (b"bad", json.dumps(ev.lag_event(T0, "bad", "t", 0, 50, 9)).encode()),
        (b"bad", json.dumps({"type": "lag", "ts": T0, "group": "bad", "topic": "t", "partition": 0,
                             "committed_offset": 1}).encode()),
        (b"bad", json.dumps(ev.partitions_event(
            T0, "bad", "t", [ev.partition_entry(0, 1, [1, 2], ["a"])])).encode()),
        (b"bad", json.dumps({"type": "members", "ts": T0, "group": "bad", "generation": 1,
                             "members": [{"topics": ["t"], "assigned": []}]}).encode()),
        (b"other-group", json.dumps(ev.lag_event(T0, "bad", "t", 0, 5, 9)).encode()),
        (b"bad", json.dumps({"type": "lag", "ts": T0, "group": "bad", "topic": "t", "partition": 0,
                             "committed_offset": 1, "end_offset": 2, "pad": "x" * 5000}).encode()),
    ]
    jc_small = dataclasses.replace(jc, job=dataclasses.replace(jc.job, max_value_bytes=4096))
    produce(jc_small, events, bad)
    batches = query.run(spark, jc_small, available_now=True)
    recs = rows(spark, jc_small, RECOMMENDATIONS)
    rejected = rows(spark, jc_small, REJECTED)
    return jc_small, recs, rejected, batches, len(bad)


def by_group(recs, group):
    return sorted((r for r in recs if r["group"] == group), key=lambda r: r["version"])


def test_sustained_skew_gives_one_lag_skew_recommendation_with_lower_max_lag(scenario_run):
    _, recs, *_ = scenario_run
    skewed = by_group(recs, "skewed")
    assert len(skewed) == 1, skewed  # 10 polls = 90 s, inside the 300 s cooldown: no second one
    rec = skewed[0]
    assert rec["triggers"] == ["lag_skew"]
    assert rec["event_time"].timestamp() * 1000 == T0 + 2 * STEP  # the third skewed poll
    assert rec["before_max_lag"] == 17000
    assert rec["after_max_lag"] < rec["before_max_lag"] * 0.8
    # one member takes t0p0 alone, the other the rest: the optimum, equal to the lower bound
    assert rec["after_max_lag"] == 9000 == rec["lower_bound"]
    assigned = sorted((p.topic, p.partition) for m in rec["assignment"] for p in m["partitions"])
    assert assigned == [("t0", p) for p in range(4)]
    details = json.loads(rec["trigger_details"])["lag_skew"]
    assert details["observations"] == 3 and details["imbalance"] >= 1.5


def test_short_spike_and_noisy_balanced_group_give_nothing(scenario_run):
    _, recs, *_ = scenario_run
    assert by_group(recs, "spike") == []
    assert by_group(recs, "noisy") == []


def test_rack_change_gives_one_recommendation_with_fewer_cross_rack_partitions(scenario_run):
    _, recs, *_ = scenario_run
    racks = by_group(recs, "racks")
    assert len(racks) == 1, racks
    rec = racks[0]
    assert rec["triggers"] == ["rack_change"]
    assert rec["before_cross_rack"] == 1 and rec["after_cross_rack"] == 0
    details = json.loads(rec["trigger_details"])["rack_change"]
    assert details == {"t0": [{"partition": 0, "before": ["a", "b"], "after": ["b", "c"]}]}


def test_malformed_records_are_rejected_with_reasons_and_source_offsets(scenario_run):
    jc, recs, rejected, _, n_bad = scenario_run
    assert len(rejected) == n_bad
    reasons = sorted(r["reason"] for r in rejected)
    expected_fragments = [
        "not valid JSON", "not a JSON object", "missing field type", "unknown type offsets",
        "missing field ts", "field ts is not an integer", "negative partition -1",
        "negative committed_offset -5", "end_offset 9 below committed_offset 50",
        "missing field end_offset", "replica_racks does not match",
        "a member has no member_id", "message key does not match group", "exceeds 4096",
    ]
    for fragment in expected_fragments:
        assert any(fragment in r for r in reasons), (fragment, reasons)
    assert len(set(reasons)) >= 10
    for r in rejected:
        assert r["source_topic"] == jc.kafka.metadata_topic
        assert r["source_offset"] >= 0 and r["raw_value"]
    # the valid records of the same batch still produced their recommendations
    assert {r["group"] for r in recs} == {"skewed", "racks"}


def test_trigger_feed_carries_each_recommendation(scenario_run, cfg):
    jc, recs, *_ = scenario_run
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(jc.kafka.trigger_topic, bootstrap_servers=cfg.kafka.bootstrap_servers,
                             auto_offset_reset="earliest", consumer_timeout_ms=5000, group_id=None)
    try:
        feed = [(m.key.decode(), json.loads(m.value)) for m in consumer]
    finally:
        consumer.close()
    assert sorted((k, v["version"]) for k, v in feed) == sorted((r["group"], r["version"])
                                                                for r in recs)
    ids = {r["recommendation_id"] for r in recs}
    assert {v["recommendation_id"] for _, v in feed} == ids
    for _, v in feed:
        assert v["schema"] == 1 and v["assignment"] and "before" in v and "after" in v


def test_progress_lines_count_batches(scenario_run):
    _, recs, rejected, batches, _ = scenario_run
    assert batches, "no progress line"
    assert sum(b["recommendations"] for b in batches) == len(recs)
    assert sum(b["rejected"] for b in batches) == len(rejected)
    assert all(b["late"] == 0 for b in batches)

"""The demo's figures from collector events (pure): per-consumer lag, cross-rack partitions,
summary."""

from __future__ import annotations

from streaming.dev.demo.monitor import GroupMonitor, line, recommendation_text, short_name
from streaming.dev.demo.runner import render_summary, summarize


def members(ts, assigned):
    return {"type": "members", "ts": ts, "group": "g", "generation": 3, "protocol": "rebalancer",
            "members": [{"member_id": f"{c}-x", "client_id": c, "rack": c[-1], "topics": ["t"],
                         "assigned": [["t", p] for p in parts]} for c, parts in assigned.items()]}


def lag(ts, lags, group="g"):
    return [{"type": "lag", "ts": ts, "group": group, "topic": "t", "partition": p,
             "committed_offset": 100, "end_offset": 100 + v} for p, v in enumerate(lags)]


PARTITIONS = {"type": "partitions", "ts": 0, "group": "g", "topic": "t",
              "partitions": [{"partition": p, "leader": p % 3, "replicas": [p % 3],
                              "replica_racks": ["abc"[p % 3]]}
                             for p in range(4)]}


def test_monitor_sums_lag_per_consumer_and_counts_cross_rack():
    mon = GroupMonitor("g", t0=100.0)
    assert (mon.observe([members(0, {"g-0-rack-a": [0, 1], "g-1-rack-b": [2, 3]}), PARTITIONS], 101)
            is None)
    s = mon.observe(lag(1, [500, 100, 0, 0]) + lag(1, [9, 9, 9, 9], group="other"), 102.5)
    assert s.lag == {"g-0-rack-a": 600, "g-1-rack-b": 0} and s.t == 2.5
    assert s.max_lag == 600 and s.imbalance == 2.0
    # p1 is on rack b (consumer on a), p2 on rack c (consumer on b), p3 on rack a (consumer on b)
    assert s.cross_rack == 3 and s.partitions == 4 and s.generation == 3
    assert "c0(a)" in line(s, "g") and "cross-rack  3/4" in line(s, "g")


def test_short_names_and_recommendation_line():
    assert short_name("orders-app-12-rack-c", "orders-app") == "c12(c)"
    assert short_name("something-else", "orders-app") == "something-else"
    rec = {"version": 2, "triggers": ["rack_change"], "partitions_moved": 3,
           "before": {"max_member_lag": 900, "imbalance": 1.8, "cross_rack_partitions": 5},
           "after": {"max_member_lag": 500, "imbalance": 1.0, "cross_rack_partitions": 1}}
    assert recommendation_text(rec) == (
        "recommendation v2 (rack_change): max lag 900 -> 500, imbalance 1.80 -> 1.00, "
        "cross-rack 5 -> 1, 3 partition(s) moved")
    assert "max load (lag + 60s of production) 900 -> 500" in recommendation_text(rec, 60)


def test_summary_before_and_after_the_first_applied_recommendation():
    mon = GroupMonitor("g", t0=0.0)
    mon.observe([members(0, {"g-0-rack-a": [0, 1], "g-1-rack-b": [2, 3]}), PARTITIONS], 0)
    for t, lags in enumerate([[100, 0, 0, 0], [400, 0, 0, 0], [800, 0, 0, 0]]):
        mon.observe(lag(t, lags), float(t))
    mon.mark(2.5, "recommendation", "v1", short="v1 lag_skew")
    mon.mark(3.0, "applied", "applies v1", version=1)
    mon.observe([members(4, {"g-0-rack-a": [0, 2], "g-1-rack-b": [1, 3]}),
                 *lag(4, [300, 0, 0, 0])], 4.0)
    mon.observe(lag(5, [100, 0, 0, 0]), 5.0)
    rec = {"version": 1, "triggers": ["lag_skew"], "partitions_moved": 2,
           "before": {"max_member_lag": 800, "imbalance": 2.0, "cross_rack_partitions": 3},
           "after": {"max_member_lag": 400, "imbalance": 1.0, "cross_rack_partitions": 3}}
    s = summarize(mon, [rec])
    assert s["first_recommendation_applied_at_s"] == 3.0
    assert s["before"]["max_consumer_lag"] == 800 and s["after"]["max_consumer_lag"] == 300
    assert s["after"]["end_max_consumer_lag"] == 100
    assert s["recommendations"][0]["at_s"] == 2.5
    text = "\n".join(render_summary(s, "/x/recommendations", None))
    assert "max consumer lag 800" in text and "delta.`/x/recommendations`" in text

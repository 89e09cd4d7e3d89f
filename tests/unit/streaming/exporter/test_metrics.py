"""The metrics objects: names and values in the exposition text, the group cap, vanished groups, and
the HTTP server on loopback with a free port."""

from __future__ import annotations

import math
import urllib.request

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from streaming.exporter.metrics import CollectorMetrics, JobMetrics, reason_kind
from streaming.exporter.server import Server
from streaming.operator_view.groups import GroupFigures


def _samples(registry) -> dict[tuple[str, tuple], float]:
    text = generate_latest(registry).decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}


def _rec(group, version, triggers, ts=1_700_000_000_000, **kw):
    return {"group": group, "version": version, "event_ts": ts, "triggers": triggers,
            "before_max_lag": 900.0, "after_max_lag": 500.0, "before_imbalance": 1.8,
            "after_imbalance": 1.0, "before_cross_rack": 2, "after_cross_rack": 0,
            "stuck_partitions": '[{"topic":"t","partition":1}]',
            "before_catch_up_s": 170.0, "after_catch_up_s": 91.0, "lag_age_s": 180.0} | kw


def test_job_metrics_per_batch_and_per_group():
    m = JobMetrics(max_groups=2)
    m.observe_batch(0, 120, 1.5, 3)
    m.observe_batch(1, 30, 0.5, 4)
    m.observe_rejected({"late": 2, "internal error: KeyError: 'x'": 1, "not json": 4})
    m.observe_recommendations([_rec("g1", 1, "lag_skew"),
                               _rec("g1", 2, "membership_change,rack_change",
                                    ts=1_700_000_100_000, before_max_lag=300.0),
                               _rec("g2", 1, ["stuck"]), _rec("g3", 1, "lag_skew")])
    s = _samples(m.registry)
    assert s[("kafka_rebalancer_job_input_rows_total", ())] == 150
    assert s[("kafka_rebalancer_job_batches_total", ())] == 2
    assert s[("kafka_rebalancer_job_batch_duration_seconds_sum", ())] == 2.0
    assert s[("kafka_rebalancer_job_state_rows", ())] == 4
    assert s[("kafka_rebalancer_job_rejected_rows_total", (("reason", "internal error"),))] == 1
    assert s[("kafka_rebalancer_job_rejected_rows_total", (("reason", "not json"),))] == 4
    assert s[("kafka_rebalancer_recommendations_total",
              (("group", "g1"), ("trigger", "rack_change")))] == 1
    assert s[("kafka_rebalancer_recommendations_total",
              (("group", "g1"), ("trigger", "lag_skew")))] == 1
    assert s[("kafka_rebalancer_last_recommendation_version", (("group", "g1"),))] == 2
    assert (s[("kafka_rebalancer_last_recommendation_timestamp_seconds", (("group", "g1"),))]
            == 1_700_000_100)
    assert s[("kafka_rebalancer_last_recommendation_age_seconds", (("group", "g1"),))] > 0
    assert s[("kafka_rebalancer_recommendation_max_member_lag_records",
              (("group", "g1"), ("when", "before")))] == 300
    assert s[("kafka_rebalancer_recommendation_stuck_partitions", (("group", "g2"),))] == 1
    assert s[("kafka_rebalancer_recommendation_catch_up_seconds",
              (("group", "g1"), ("when", "after")))] == 91
    assert s[("kafka_rebalancer_recommendation_lag_age_seconds", (("group", "g1"),))] == 180
    # the cap: g3 has no series and is counted
    assert not any(("group", "g3") in k[1] for k in s)
    assert s[("kafka_rebalancer_metrics_dropped_groups", ())] == 1


def test_null_lag_seconds_and_rows_from_before_them_read_nan():
    m = JobMetrics()
    old = _rec("g", 1, "lag_skew")
    for c in ("before_catch_up_s", "after_catch_up_s", "lag_age_s"):
        del old[c]
    m.observe_recommendations([old, _rec("h", 1, "lag_skew", before_catch_up_s=None)])
    s = _samples(m.registry)
    assert math.isnan(s[("kafka_rebalancer_recommendation_catch_up_seconds",
                         (("group", "g"), ("when", "before")))])
    assert math.isnan(s[("kafka_rebalancer_recommendation_lag_age_seconds", (("group", "g"),))])
    assert math.isnan(s[("kafka_rebalancer_recommendation_catch_up_seconds",
                         (("group", "h"), ("when", "before")))])
    assert s[("kafka_rebalancer_recommendation_catch_up_seconds",
              (("group", "h"), ("when", "after")))] == 91


def test_collector_metrics_drop_vanished_groups():
    m = CollectorMetrics(max_groups=10, max_topics=1)
    m.observe_poll([GroupFigures("g", "Stable", 2, 4, 100, 1.4, 1, {"a": 60, "b": 80})],
                   0.2, 4, 2, 0)
    s = _samples(m.registry)
    assert s[("kafka_rebalancer_group_max_member_lag_records", (("group", "g"),))] == 100
    assert s[("kafka_rebalancer_group_topic_lag_records", (("group", "g"), ("topic", "a")))] == 60
    # topic cap
    assert ("kafka_rebalancer_group_topic_lag_records", (("group", "g"), ("topic", "b"))) not in s
    assert s[("kafka_rebalancer_collector_events_total", (("type", "lag"),))] == 4
    m.observe_poll([], 0.1, 0, 0, 1)
    s = _samples(m.registry)
    assert not any(("group", "g") in k[1] for k in s)
    assert s[("kafka_rebalancer_collector_polls_total", ())] == 2


def test_reason_kind_is_bounded():
    assert reason_kind("internal error: ValueError: " + "x" * 500) == "internal error"
    assert reason_kind(None) == "unknown"


def test_server_on_loopback_serves_the_registry():
    m = JobMetrics()
    m.observe_batch(7, 1, 0.1, 0)
    server = Server(m.registry, "127.0.0.1", 0)
    try:
        assert server.port > 0 and server.url.startswith("http://127.0.0.1:")
        body = urllib.request.urlopen(server.url, timeout=10).read().decode()
        assert "kafka_rebalancer_job_last_batch_id 7.0" in body
    finally:
        server.close()


def test_member_capacity_one_series_per_member_of_the_latest_recommendation():
    m = JobMetrics()
    first = ('[{"member_id": "m0", "client_id": "c0", "records_per_s": 500.0, "confidence_s": 30.0,'
             ' "measured": true},'
             ' {"member_id": "m1", "client_id": "c1", "records_per_s": 250.0, "confidence_s": 0.0,'
             ' "measured": false}]')
    m.observe_recommendations([_rec("g", 1, "lag_skew", member_capacity=first)])
    s = _samples(m.registry)
    name = "kafka_rebalancer_member_capacity_records_per_second"
    assert s[(name, (("client_id", "c0"), ("group", "g"), ("member", "m0")))] == 500.0
    assert s[(name, (("client_id", "c1"), ("group", "g"), ("member", "m1")))] == 250.0
    # the next recommendation: m1 left; a group whose capacities are unknown (null) has no series
    second = [{"member_id": "m0", "client_id": "c0", "records_per_s": 400.0, "confidence_s": 40.0,
               "measured": True}]
    m.observe_recommendations([_rec("g", 2, "lag_skew", member_capacity=second),
                               _rec("h", 1, "lag_skew")])
    s = _samples(m.registry)
    assert [(k[1], v) for k, v in s.items() if k[0] == name] == [
        ((("client_id", "c0"), ("group", "g"), ("member", "m0")), 400.0)]


def test_the_members_a_recommendation_names_slow_with_their_rate_over_their_peers():
    m = JobMetrics()
    details = ('{"lag_skew": {"imbalance": 2.1, "slow_members": ['
               '{"member_id": "C1", "client_id": "c-C1", "records_per_s": 60.0,'
               ' "peers_records_per_s": 150.0},'
               '{"member_id": "C2", "client_id": null, "records_per_s": 50.0,'
               ' "peers_records_per_s": null}]}}')
    m.observe_recommendations([_rec("g", 1, "lag_skew", trigger_details=details),
                               _rec("hot", 1, "lag_skew", trigger_details='{"lag_skew": {}}'),
                               _rec("old", 1, "lag_skew")])  # a row from before the column
    s = _samples(m.registry)
    ratio, count = ("kafka_rebalancer_recommendation_slow_member_peer_ratio",
                    "kafka_rebalancer_recommendation_slow_members")
    assert s[(ratio, (("client_id", "c-C1"), ("group", "g"), ("member", "C1")))] == 0.4
    # no measured peers: not known
    assert math.isnan(s[(ratio, (("client_id", ""), ("group", "g"), ("member", "C2")))])
    assert s[(count, (("group", "g"),))] == 2
    # the skew was the partitions'
    assert s[(count, (("group", "hot"),))] == 0 == s[(count, (("group", "old"),))]
    # the next recommendation names nobody: the members' series go
    m.observe_recommendations([_rec("g", 2, "membership_change",
                                    trigger_details='{"membership_change": {}}')])
    s = _samples(m.registry)
    assert s[(count, (("group", "g"),))] == 0 and not [k for k in s if k[0] == ratio]


def test_a_new_checkpoint_starts_the_last_batch_time_and_a_restart_keeps_it(monkeypatch):
    """test_alerts_live once saw KafkaRebalancerJobStalled on a job seconds old: the worker process
    had run another job with metrics 10 minutes before, and its last batch was that job's."""
    from streaming.exporter import metrics

    now = [1_000.0]
    monkeypatch.setattr(metrics.time, "time", lambda: now[0])
    m = JobMetrics()

    def last() -> float | None:
        return m.registry.get_sample_value("kafka_rebalancer_job_last_batch_timestamp_seconds")

    m.serving("/ck/a")
    assert last() == 1_000.0
    now[0] = 1_600.0
    m.serving("/ck/a")  # the same job's query restarted: a crash loop stays stalled
    assert last() == 1_000.0
    m.serving("/ck/b")  # another job in the same process
    assert last() == 1_600.0

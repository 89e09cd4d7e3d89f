"""conf/prometheus: every metric the alert rules query, and every series their promtool tests feed
them, is one the exporters write, with the labels they write (plus Prometheus's job and instance).
Read off real exporter pages, so a renamed metric or label fails here, not silently in someone's
Prometheus. Running the rules (promtool check rules / test rules, a live Prometheus) is
tests/integration/test_alert_rules.py's and test_alerts_live.py's."""

from __future__ import annotations

import re
from pathlib import Path

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from streaming.exporter.metrics import PREFIX, CollectorMetrics, JobMetrics
from streaming.exporter.waiting_gauges import WaitingGauges
from streaming.lag.hot import HotPartition
from streaming.operator_view.groups import GroupFigures

CONF = Path(__file__).resolve().parents[2] / "conf" / "prometheus"
RULES = CONF / "rebalancer-alerts.yml"
RULE_TESTS = CONF / "rebalancer-alerts.test.yml"
SCRAPE_LABELS = {"job", "instance"}


def _pages() -> dict[str, set[str]]:
    """Sample name -> its label names, from a collector's and a job's page with every series set."""
    c = CollectorMetrics()
    WaitingGauges(c.registry, PREFIX).update({"g": (60.0, 0.0)})
    figures = GroupFigures(
        "g",
        "Stable",
        2,
        4,
        100,
        1.4,
        1,
        {"t": 60},
        5.0,
        9.0,
        1,
        120.0,
        10,
        3,
        (HotPartition("t", 0, 50.0, 5.0, 0.8),),
    )
    c.observe_poll([figures], 0.2, 4, 2, 0)
    j = JobMetrics()
    j.observe_batch(0, 10, 0.5, 1)
    j.observe_recommendations(
        [
            {
                "group": "g",
                "version": 1,
                "event_ts": 1_700_000_000_000,
                "triggers": "lag_skew",
                "before_max_lag": 9.0,
                "after_max_lag": 5.0,
                "before_imbalance": 1.8,
                "after_imbalance": 1.0,
                "before_cross_rack": 1,
                "after_cross_rack": 0,
                "stuck_partitions": "[]",
                "trigger_details": '{"lag_skew": {"slow_members": [{"member_id": "m", '
                                   '"client_id": "c", "records_per_s": 6.0, '
                                   '"peers_records_per_s": 15.0}]}}',
            }
        ]
    )
    out: dict[str, set[str]] = {}
    for registry in (c.registry, j.registry):
        for fam in text_string_to_metric_families(generate_latest(registry).decode()):
            for s in fam.samples:
                out[s.name] = set(s.labels)
    return out


def test_the_rules_query_only_what_the_exporters_write():
    pages = _pages()
    used = set(re.findall(r"\b(kafka_rebalancer_\w+)", RULES.read_text()))
    assert len(used) >= 10
    assert used <= pages.keys(), used - pages.keys()


def test_the_rule_tests_feed_series_shaped_as_the_exporters_write_them():
    pages = _pages()
    series = re.findall(r"series: '(\w+)\{([^}]*)\}'", RULE_TESTS.read_text())
    assert len(series) >= 15
    for name, labels in series:
        assert name in pages, name
        given = {kv.split("=", 1)[0] for kv in labels.split(",") if kv}
        assert given - SCRAPE_LABELS == pages[name], (name, given)
        assert given >= SCRAPE_LABELS, name

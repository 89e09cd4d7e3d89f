"""The alert rules (conf/prometheus/rebalancer-alerts.yml) with Prometheus's own promtool, as
`rebalancer setup` obtains it (streaming/prometheus_bin.py): the file is valid, and its unit tests
(rebalancer-alerts.test.yml, series shaped as the exporters write them:
tests/unit/test_alert_rules.py) pass. Missing promtool fails here with what to run, never skips."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from streaming import prometheus_bin

CONF = Path(__file__).resolve().parents[2] / "conf" / "prometheus"


def _promtool(*args: str) -> str:
    r = subprocess.run(
        [str(prometheus_bin.binary("promtool")), *args],
        cwd=CONF,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert r.returncode == 0, f"promtool {' '.join(args)} failed:\n{r.stdout}\n{r.stderr}"
    return r.stdout + r.stderr


def rule_count() -> int:
    """The alerts the shipped file declares."""
    return len(re.findall(r"^\s+- alert: ", (CONF / "rebalancer-alerts.yml").read_text(), re.M))


def test_promtool_checks_the_rules():
    out = _promtool("check", "rules", "rebalancer-alerts.yml")
    assert rule_count() >= 13 and f"SUCCESS: {rule_count()} rules found" in out, out


def test_promtool_runs_the_rules_unit_tests():
    out = _promtool("test", "rules", "rebalancer-alerts.test.yml")
    assert "SUCCESS" in out and "FAILED" not in out, out

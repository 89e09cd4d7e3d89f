"""Where Prometheus and promtool come from: the cache `rebalancer setup` fills, else PATH, else a
SetupError that says what to run (a test that needs them fails with it, never skips)."""

from __future__ import annotations

import pytest

from streaming import prometheus_bin
from streaming.errors import SetupError


def _fake(folder, names=prometheus_bin.NAMES):
    folder.mkdir(parents=True, exist_ok=True)
    for n in names:
        (folder / n).write_text("#!/bin/sh\necho fake\n")
        (folder / n).chmod(0o755)


def test_the_cache_first_then_path_then_a_clear_error(tmp_path, monkeypatch):
    cache, path = tmp_path / "cache", tmp_path / "path"
    monkeypatch.setattr(prometheus_bin, "BIN_DIR", cache)
    monkeypatch.setenv("PATH", str(path))
    with pytest.raises(SetupError, match="rebalancer setup"):
        prometheus_bin.binary("promtool")
    _fake(path, ("promtool",))  # half a pair is no pair
    with pytest.raises(SetupError):
        prometheus_bin.binary("promtool")
    _fake(path)
    assert prometheus_bin.binary("promtool") == path / "promtool"
    _fake(cache)
    assert prometheus_bin.binary("prometheus") == cache / "prometheus"
    assert prometheus_bin.obtain() == {
        n: cache / n for n in prometheus_bin.NAMES
    }  # cached: nothing fetched


def _no_jvm_work(monkeypatch):
    from streaming import jvm

    monkeypatch.setattr(jvm, "java_executable", lambda: "java")
    monkeypatch.setattr(jvm, "resolve", lambda force=False: None)
    monkeypatch.setattr(jvm, "spark_jars", lambda: [])


def test_setup_without_apt_succeeds_and_says_what_alert_tests_need(tmp_path, monkeypatch, capsys):
    """A Mac, another distribution: no apt-get, nothing on PATH. Setup exits 0 with one line about
    Prometheus; the tests that need it still fail with what to run (test_alert_rules.py,
    test_alerts_live.py)."""
    import argparse

    from streaming.commands import setup

    monkeypatch.setattr(prometheus_bin, "BIN_DIR", tmp_path / "cache")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    _no_jvm_work(monkeypatch)
    assert setup.run(argparse.Namespace(force=False)) == 0
    (line,) = [x for x in capsys.readouterr().out.splitlines() if "Prometheus" in x]
    assert line.startswith("Prometheus not obtained (no apt-get and dpkg-deb here")
    assert "alert-rule tests" in line and str(tmp_path / "cache") in line
    with pytest.raises(SetupError, match="rebalancer setup"):
        prometheus_bin.binary("prometheus")


def test_setup_line_when_apt_fails_names_apt_s_error(tmp_path, monkeypatch):
    """apt-get there but failing (offline, no such package): the same line, with apt's reason."""
    tools = tmp_path / "bin"
    tools.mkdir()
    for name, script in (("apt-get", "echo 'E: Unable to locate package prometheus' >&2; exit 100"),
                         ("dpkg-deb", "exit 0")):
        (tools / name).write_text(f"#!/bin/sh\n{script}\n")
        (tools / name).chmod(0o755)
    monkeypatch.setattr(prometheus_bin, "BIN_DIR", tmp_path / "cache")
    monkeypatch.setenv("PATH", str(tools))
    line = prometheus_bin.setup_line()
    assert line.startswith("Prometheus not obtained (`apt-get ")  # as root: after `apt-get update`
    assert "failed (exit 100): E: Unable to locate package" in line and "alert-rule tests" in line
    _fake(tools)  # a pair on PATH after all: that one, said so
    assert prometheus_bin.setup_line().startswith("Prometheus from PATH (")

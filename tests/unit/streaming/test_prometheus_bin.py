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

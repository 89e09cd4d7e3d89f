"""Table and checkpoint locations (local paths and Hadoop URIs), the checkout / installed layout,
the JVM-free reading of the recommendations table, and `rebalancer bench` without the benchmarks."""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path

import pytest

from streaming import config, paths
from streaming.commands import bench, recommendations
from streaming.errors import UsageError


@pytest.mark.parametrize(("base", "name", "want"), [
    ("s3a://bucket/delta", "recommendations", "s3a://bucket/delta/recommendations"),
    ("s3a://bucket/delta/", "recommendations", "s3a://bucket/delta/recommendations"),
    ("s3a://bucket", "t", "s3a://bucket/t"),
    ("abfss://c@acct.dfs.core.windows.net/x", "t", "abfss://c@acct.dfs.core.windows.net/x/t"),
    ("hdfs://nn:8020/user/r", "checkpoints", "hdfs://nn:8020/user/r/checkpoints"),
    ("file:///tmp/with space/t", "r", "file:///tmp/with space/t/r"),  # Hadoop style: no %20
    ("file:/tmp/x", "r", "file:/tmp/x/r"),
    ("/abs/with space", "r", "/abs/with space/r"),
    # a name that is a location stands alone
    ("s3a://bucket/delta", "gs://other/t", "gs://other/t"),
    ("s3a://bucket/delta", "/abs/t", "/abs/t"),
])
def test_join_location(base, name, want):
    assert paths.join_location(base, name) == want


def test_relative_local_paths_resolve_under_the_project_root():
    want = str(paths.PROJECT_ROOT / "data" / "delta" / "recommendations")
    assert paths.join_location("data/delta", "recommendations") == want
    assert paths.resolve_location("a b") == str(paths.PROJECT_ROOT / "a b")
    cfg = config.load(overrides=["paths.tables=s3a://b/delta", "paths.checkpoints=my checkpoints"])
    assert cfg.table_path("recommendations") == "s3a://b/delta/recommendations"
    assert (cfg.checkpoint_path("rebalancer")
            == str(paths.PROJECT_ROOT / "my checkpoints" / "rebalancer"))


@pytest.mark.parametrize(("location", "want"), [
    ("s3a://bucket/x", True), ("file:///x", True), ("hdfs://nn/x", True), ("/x", False),
    ("x/y:z", False), ("C:\\data", False), ("rel/path", False),
])
def test_is_uri(location, want):
    assert paths.is_uri(location) is want


@pytest.mark.parametrize(("location", "want"), [
    ("file:///tmp/a b/t", Path("/tmp/a b/t")),
    ("file:/tmp/t", Path("/tmp/t")),
    ("file://localhost/tmp/t", Path("/tmp/t")),
    ("file://otherhost/tmp/t", None),
    ("s3a://bucket/t", None),
    ("/tmp/t", Path("/tmp/t")),
])
def test_local_path(location, want):
    assert paths.local_path(location) == want


def _tree(root: Path, checkout: bool) -> Path:
    (root / "streaming").mkdir(parents=True)
    if checkout:
        (root / "conf").mkdir()
        (root / "conf" / "rebalancer.toml").write_text("")
        (root / "pyproject.toml").write_text("")
    return root


def test_layout_of_a_checkout_keeps_everything_in_the_repository(tmp_path):
    src = _tree(tmp_path / "repo", checkout=True)
    got = paths.layout(src, {}, cwd=tmp_path / "elsewhere", user_home=tmp_path / "home")
    assert (got.root, got.conf, got.cache,
            got.from_checkout) == (src, src / "conf", src / ".cache", True)


def test_layout_installed_uses_the_working_directory_and_a_user_cache(tmp_path):
    site = _tree(tmp_path / "site-packages", checkout=False)
    work, home = tmp_path / "work", tmp_path / "home"
    got = paths.layout(site, {}, cwd=work, user_home=home)
    assert got.root == work and not got.from_checkout
    assert got.conf == site / "streaming" / "_conf"
    assert got.cache == home / ".cache" / "kafka-rebalancer"
    assert (paths.layout(site, {"XDG_CACHE_HOME": "/xdg"}, work, home).cache
            == Path("/xdg/kafka-rebalancer"))
    with_home = paths.layout(site, {"REBALANCER_HOME": "/srv/r"}, work, home)
    assert (with_home.root, with_home.cache) == (Path("/srv/r"), Path("/srv/r/.cache"))
    assert paths.layout(site, {"REBALANCER_CACHE": "c"}, work, home).cache == work / "c"


# -- reading the recommendations table with deltalake (no JVM) -------------------------------------

def _row(group: str, version: int, minute: int) -> dict:
    return {"group": group, "version": version, "recommendation_id": f"{group}-{version}",
            "event_time": dt.datetime(2026, 1, 1, 0, minute, tzinfo=dt.UTC),
            "triggers": ["lag_skew"],
            "assignment": [{"member_id": "m",
                            "partitions": [{"topic": "t", "partition": version}]}],
            "before_max_lag": 10.0 * version}


@pytest.fixture
def local_table(tmp_path) -> Path:
    import pyarrow as pa
    from deltalake import write_deltalake

    rows = [_row("a", 1, 1), _row("a", 2, 5), _row("b", 1, 3), _row("c", 1, 2), _row("c", 2, 4),
            _row("c", 3, 6)]
    path = tmp_path / "with space" / "recommendations"
    write_deltalake(str(path), pa.Table.from_pylist(rows))
    return path


def test_read_local_orders_newest_first_and_filters(local_table):
    got = recommendations.read_local(local_table, None, latest=False, limit=50)
    assert ([(r["group"], r["version"]) for r in got]
            == [("c", 3), ("a", 2), ("c", 2), ("b", 1), ("c", 1), ("a", 1)])
    first = got[0]
    # as pyspark's collect() gives it: naive local time; nested structs as dicts
    assert (first["event_time"]
            == dt.datetime(2026, 1, 1, 0, 6, tzinfo=dt.UTC).astimezone().replace(tzinfo=None))
    assert first["assignment"] == [{"member_id": "m",
                                    "partitions": [{"topic": "t", "partition": 3}]}]
    assert ([r["version"] for r in recommendations.read_local(local_table, "c", False, 50)]
            == [3, 2, 1])
    assert [(r["group"], r["version"])
            for r in recommendations.read_local(local_table, None, True, 50)] == [
        ("c", 3), ("a", 2), ("b", 1)]
    assert [(r["group"], r["version"])
            for r in recommendations.read_local(local_table, None, True, 2)] == [
        ("c", 3), ("a", 2)]
    assert recommendations.read_local(local_table, "nobody", True, 50) == []


def test_bench_without_the_benchmarks_says_so(monkeypatch):
    # as installed from the wheel: no such package
    monkeypatch.setitem(sys.modules, "benchmarks", None)
    monkeypatch.delitem(sys.modules, "benchmarks.quality", raising=False)
    with pytest.raises(UsageError, match="not part of the wheel"):
        bench._benchmark("quality")

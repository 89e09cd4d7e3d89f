"""[catalog] without Spark: names, the embedded Derby metastore's files under paths.tables (never
the
working directory), left alone when the user's [spark.conf] or a named catalog chooses the
metastore."""

from __future__ import annotations

import dataclasses

import pytest

from streaming import catalog, config
from streaming.errors import ConfigError


def _cfg(tmp_path, **kw) -> config.Config:
    base = config.Config(
        paths=config.PathSettings(checkpoints=str(tmp_path / "cp"), tables=str(tmp_path / "t"))
    )
    return dataclasses.replace(base, catalog=config.CatalogSettings(**kw))


def test_by_path_only_unless_a_schema_is_set(tmp_path):
    assert not catalog.enabled(_cfg(tmp_path))
    assert catalog.embedded_metastore(_cfg(tmp_path)) == {}


def test_names_are_qualified_and_checked(tmp_path):
    assert (
        catalog.name(_cfg(tmp_path, schema="ops"), "recommendations") == "`ops`.`recommendations`"
    )
    assert (
        catalog.name(
            _cfg(tmp_path, schema="ops", catalog="main", rejected_events="rej"), "rejected_events"
        )
        == "`main`.`ops`.`rej`"
    )
    with pytest.raises(ConfigError, match="catalog.schema"):
        config.CatalogSettings(schema="ops; DROP")


def test_the_embedded_metastore_lives_under_the_tables(tmp_path):
    conf = catalog.embedded_metastore(_cfg(tmp_path, schema="ops"), "-Dx=1")
    home = tmp_path / "t" / "_catalog"
    assert conf["spark.sql.catalogImplementation"] == "hive"
    assert (
        conf["spark.hadoop.javax.jdo.option.ConnectionURL"]
        == f"jdbc:derby:;databaseName={home / 'metastore_db'};create=true"
    )
    assert conf["spark.sql.warehouse.dir"] == (home / "warehouse").as_uri()
    assert (
        conf["spark.driver.extraJavaOptions"]
        == f"-Dx=1 -Dderby.stream.error.file={home / 'derby.log'}"
    )
    named = _cfg(tmp_path, schema="ops", catalog="main")
    assert catalog.embedded_metastore(named) == {}
    own = dataclasses.replace(
        named,
        catalog=config.CatalogSettings(schema="ops"),
        spark=config.SparkSettings(
            conf={"spark.hadoop.hive.metastore.uris": "thrift://127.0.0.1:9083"}
        ),
    )
    assert catalog.embedded_metastore(own) == {}


def test_the_status_view_reads_the_configured_expiry(tmp_path):
    cfg = dataclasses.replace(
        _cfg(tmp_path, schema="ops"), policy=config.PolicySettings(proposal_expiry_s=1800)
    )
    views = catalog.views(cfg)
    assert set(views) == {"latest_recommendations", "recommendation_status", "rejected_last_day"}
    assert "make_dt_interval(0, 0, 0, 1800.0)" in views["recommendation_status"]

from __future__ import annotations

import pytest

from streaming import config
from streaming.errors import ConfigError
from streaming.kafka_clients.properties import spark_options


def test_defaults_load_from_the_conf_file():
    cfg = config.load()
    assert cfg.kafka.bootstrap_servers == "embedded"
    assert cfg.kafka.lag_topic == "rebalancer.lag"
    assert cfg.checkpoint_path("job").endswith("checkpoints/job")
    assert cfg.job.delta_writer == "auto"
    assert config.load(overrides=["job.delta_writer=spark"]).job.delta_writer == "spark"


def test_overrides_route_spark_kafka_and_sections():
    cfg = config.load(overrides=[
        "spark.sql.shuffle.partitions=8",
        "kafka.security.protocol=SASL_SSL",
        "kafka.bootstrap.servers=h1:9092,h2:9092",
        "kafka.lag_topic=lags",
        "spark.use_cached_jars=false",
        "paths.tables=/tmp/t",
    ])
    assert cfg.spark.conf["spark.sql.shuffle.partitions"] == "8"
    assert cfg.kafka.options == {"security.protocol": "SASL_SSL"}
    assert cfg.kafka.bootstrap_servers == "h1:9092,h2:9092"
    assert cfg.kafka.lag_topic == "lags"
    assert cfg.spark.use_cached_jars is False
    assert cfg.table_path("x") == "/tmp/t/x"
    assert spark_options(cfg.kafka)["kafka.security.protocol"] == "SASL_SSL"


def test_secrets_stay_out_of_reprs_and_redacted_views():
    cfg = config.load(overrides=["kafka.sasl.jaas.config=user=u password=hunter2",
                                 "kafka.ssl.key.password=pw"])
    assert "hunter2" not in repr(cfg)
    assert "hunter2" not in str(cfg.kafka.redacted())
    assert cfg.kafka.redacted()["ssl.key.password"] == "***"


@pytest.mark.parametrize(("override", "message"), [
    ("nosuch.key=1", "unknown section 'nosuch'"),
    ("kafka.embedded_brokers=three", "expected int, got 'three'"),
    ("paths.nowhere=1", "unknown setting 'nowhere' in \\[paths\\]"),
    ("justakey", "expected key=value"),
    ("spark.use_cached_jars=maybe", "expected bool"),
    ("job.delta_writer=delta-rs", "job.delta_writer: 'delta-rs' is not one of auto, spark"),
    ("policy.capacity_headroom=1", "policy.capacity_headroom: 1.0 is not a fraction in \\[0, 1\\)"),
    ("policy.capacity_headroom=-0.1", "policy.capacity_headroom: -0.1 is not a fraction"),
    ("policy.capacity_headroom=nan", "policy.capacity_headroom: nan is not a fraction"),
])
def test_bad_overrides_name_the_key(override, message):
    with pytest.raises(ConfigError, match=message):
        config.load(overrides=[override])


def test_bad_files_are_named(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[kafka\nx=1")
    with pytest.raises(ConfigError, match="bad.toml: not valid TOML"):
        config.load(bad)
    unknown = tmp_path / "unknown.toml"
    unknown.write_text("[kafka]\nbootstrap = 'x'\n")
    with pytest.raises(ConfigError, match="unknown setting 'bootstrap'"):
        config.load(unknown)
    with pytest.raises(ConfigError, match="does not exist"):
        config.load(tmp_path / "missing.toml")


def test_cluster_ids_never_start_with_a_dash():
    from streaming.embedded.cluster import new_cluster_id

    ids = [new_cluster_id() for _ in range(2000)]
    assert not any(i.startswith("-") for i in ids)
    assert all(len(i) == 22 for i in ids)

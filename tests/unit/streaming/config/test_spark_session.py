"""Which Spark master and settings the job asks for, and that spark-submit runs never start Maven
(no JVM)."""

from __future__ import annotations

import argparse
import subprocess

import pytest

from streaming import config, jvm, spark_session
from streaming.commands import run as run_command
from streaming.commands import smoke as smoke_command
from streaming.kafka_clients import factories as kafka_clients
from streaming.spark_session import LOCAL_ONLY, choose_master, spark_defaults, submit_args_master


def test_configured_master_applies_when_nothing_else_chose_one():
    m = choose_master("local[*]", {}, None)
    assert (m.url, m.source, m.ours, m.local) == ("local[*]", "configuration", True, True)


def test_spark_submit_master_wins_over_the_configured_one():
    m = choose_master("local[*]", {}, "spark://10.0.0.1:7077")
    assert (m.url, m.ours, m.local) == ("spark://10.0.0.1:7077", False, False)


def test_pyspark_submit_args_master_wins_over_the_configured_one():
    m = choose_master("local[*]", {"PYSPARK_SUBMIT_ARGS": "--master spark://h:7077 pyspark-shell"},
                      None)
    assert (m.url, m.source, m.ours) == ("spark://h:7077", "PYSPARK_SUBMIT_ARGS", False)


def test_a_running_context_wins_over_pyspark_submit_args():
    m = choose_master("local[*]", {"PYSPARK_SUBMIT_ARGS": "--master yarn pyspark-shell"},
                      "local[2]")
    assert (m.url, m.source, m.local) == ("local[2]", "running", True)


def test_submit_args_without_a_master_leave_the_configured_one():
    m = choose_master("local[3]", {"PYSPARK_SUBMIT_ARGS": "--driver-memory 1g pyspark-shell"}, None)
    assert (m.url, m.ours) == ("local[3]", True)


@pytest.mark.parametrize(("args", "expected"), [
    ("--master spark://h:7077 pyspark-shell", "spark://h:7077"),
    ("--master=yarn pyspark-shell", "yarn"),
    ("--conf spark.master=k8s://https://api:6443 pyspark-shell", "k8s://https://api:6443"),
    ("-c spark.master=local[2] pyspark-shell", "local[2]"),
    ("--conf=spark.master=local[1] pyspark-shell", "local[1]"),
    # the last one, as spark-submit
    ("--master local[1] --master spark://b:7077 pyspark-shell", "spark://b:7077"),
    ("--conf spark.driver.memory=1g pyspark-shell", None),
    ("--master", None),
    ("", None),
    ("--name 'unbalanced pyspark-shell", None),
])
def test_submit_args_master(args, expected):
    assert submit_args_master(args) == expected


def test_local_master_gets_the_loopback_and_small_settings():
    cfg = config.load(overrides=["spark.use_cached_jars=false"])
    conf = spark_defaults(cfg, local=True)
    assert LOCAL_ONLY.items() <= conf.items()
    assert conf["spark.driver.bindAddress"] == "127.0.0.1" and conf["spark.ui.enabled"] == "false"
    assert "spark.jars" not in conf
    # validation's wide projection is JIT-compiled, not interpreted
    assert all(spark_session.HUGE_METHODS in conf[f"spark.{side}.extraJavaOptions"]
               for side in ("driver", "executor"))


def test_the_jit_options_are_ones_this_jvm_takes_silently():
    # a misspelt -XX option stops the JVM from starting; an unquiet CompileCommand prints on its
    # stdout
    out = subprocess.run([jvm.java_executable(), *spark_session.HUGE_METHODS.split(), "-version"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "CompileCommand" not in out.stdout + out.stderr


def test_cluster_master_gets_none_of_the_local_settings():
    cfg = config.load(overrides=["spark.use_cached_jars=false"])
    conf = spark_defaults(cfg, local=False)
    assert not set(LOCAL_ONLY) & set(conf)
    assert not {"spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions"} & set(conf)
    # what the job needs wherever it runs
    assert conf["spark.sql.extensions"] == "io.delta.sql.DeltaSparkSessionExtension"
    assert conf["spark.sql.streaming.stateStore.providerClass"] == spark_session.ROCKSDB


def test_defaults_follow_the_configured_master_when_not_told():
    cfg = config.load(overrides=["spark.use_cached_jars=false", "spark.master=spark://h:7077"])
    assert "spark.driver.host" not in spark_defaults(cfg)
    cfg = config.load(overrides=["spark.use_cached_jars=false", "spark.master=local[2]"])
    assert spark_defaults(cfg)["spark.driver.host"] == "127.0.0.1"


class Maven(Exception):
    pass


class SparkReached(Exception):
    pass


@pytest.fixture
def no_maven_no_spark(monkeypatch):
    """jvm.resolve and get_spark raise, Kafka is not asked: a command either tried Maven or got as
    far as Spark."""
    def resolve(force: bool = False) -> None:
        raise Maven

    def get_spark(cfg):
        raise SparkReached

    monkeypatch.setattr(jvm, "resolve", resolve)
    monkeypatch.setattr(spark_session, "get_spark", get_spark)
    # `run` checks Kafka before it starts Spark; there is no broker here
    monkeypatch.setattr(kafka_clients, "ensure_rebalancer_topics", lambda cfg: None, raising=False)


def _args(*conf: str, **extra) -> argparse.Namespace:
    return argparse.Namespace(conf=list(conf), **extra)


@pytest.mark.usefixtures("no_maven_no_spark")
def test_run_without_cached_jars_never_runs_maven():
    args = _args("kafka.bootstrap_servers=127.0.0.1:9", "spark.use_cached_jars=false",
                 available_now=True, checkpoint=None)
    with pytest.raises(SparkReached):
        run_command.run(args)


@pytest.mark.usefixtures("no_maven_no_spark")
def test_run_with_cached_jars_resolves_them_first():
    args = _args("kafka.bootstrap_servers=127.0.0.1:9", available_now=True, checkpoint=None)
    with pytest.raises(Maven):
        run_command.run(args)


@pytest.mark.usefixtures("no_maven_no_spark")
def test_smoke_without_cached_jars_on_an_external_cluster_never_runs_maven():
    args = _args("kafka.bootstrap_servers=127.0.0.1:9", "spark.use_cached_jars=false", records=1,
                 keep=False)
    with pytest.raises(SparkReached):
        smoke_command.run(args)


@pytest.mark.usefixtures("no_maven_no_spark")
def test_smoke_on_the_embedded_cluster_still_needs_the_broker_jars():
    args = _args("kafka.bootstrap_servers=embedded", "spark.use_cached_jars=false", records=1,
                 keep=False)
    with pytest.raises(Maven):
        smoke_command.run(args)

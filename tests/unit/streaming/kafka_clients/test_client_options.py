"""Kafka client settings in Kafka's names: .properties files, ${ENV} secrets, the complete
translation for kafka-python (errors name the key, never the value), and secrets kept out of reprs
and logs. No JVM."""

from __future__ import annotations

import argparse
import copy
import logging
import pickle
import socket

import pytest

from streaming import config
from streaming.commands._common import add_config_args, load_config
from streaming.errors import ConfigError
from streaming.java_properties import expand_env, format_properties, parse_properties
from streaming.kafka_clients.properties import Secret, for_spark, spark_options, to_kafka_python

PASSWORD = "s3cr3t-Pa55=w;rd"
JAAS = ('org.apache.kafka.common.security.scram.ScramLoginModule required username="job" '
        f'password="{PASSWORD}";')
SCRAM_SSL = {
    "security.protocol": "SASL_SSL",
    "sasl.mechanism": "SCRAM-SHA-512",
    "sasl.jaas.config": JAAS,
    "ssl.truststore.type": "PEM",
    "ssl.truststore.location": "/etc/kafka/ca.pem",
}


# -- .properties -----------------------------------------------------------------------------------

def test_properties_syntax_as_java_reads_it() -> None:
    text = (
        "# a comment\n"
        "! another\n"
        "  bootstrap.servers = h1:9093,h2:9093\n"
        "security.protocol:SASL_SSL\n"
        "sasl.mechanism SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        "    username=\"u\" password=\"p\";\n"
        "tab\\tkey=\\u0041\\n\n"
        "empty=\n"
    )
    assert parse_properties(text) == {
        "bootstrap.servers": "h1:9093,h2:9093",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config":
            'org.apache.kafka.common.security.scram.ScramLoginModule required username="u" '
            'password="p";',
        "tab\tkey": "A\n",
        "empty": "",
    }


def test_properties_written_are_read_back_unchanged() -> None:
    props = {"sasl.jaas.config": JAAS, "key with=:#!": " leading space \\ back\\slash\nnewline",
             "x": "#not a comment"}
    assert parse_properties(format_properties(props)) == props


def test_malformed_unicode_escape_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="uXXXX"):
        parse_properties("k=\\u12\n")


# -- ${ENV} ----------------------------------------------------------------------------------------

def test_env_references_are_expanded_and_a_missing_one_names_key_and_variable() -> None:
    opts = {"sasl.jaas.config": 'M required username="u" password="${KP}";', "acks": "all"}
    assert (expand_env(opts, {"KP": PASSWORD})["sasl.jaas.config"]
            == f'M required username="u" password="{PASSWORD}";')
    with pytest.raises(ConfigError) as e:
        expand_env(opts, {})
    assert "kafka.sasl.jaas.config" in str(e.value) and "${KP}" in str(e.value)


# -- translation -----------------------------------------------------------------------------------

def test_scram_over_tls_translates_completely() -> None:
    opts = to_kafka_python(SCRAM_SSL | {"bootstrap.servers": "h1:9093,h2:9093",
                                        "request.timeout.ms": "5000"}, "consumer")
    assert opts == {
        "bootstrap_servers": ["h1:9093", "h2:9093"], "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512", "sasl_plain_username": "job",
        "sasl_plain_password": PASSWORD,
        "ssl_cafile": "/etc/kafka/ca.pem", "ssl_check_hostname": True, "request_timeout_ms": 5000,
    }
    assert isinstance(opts["sasl_plain_password"], Secret)


def test_plain_module_explicit_credentials_keystore_and_hostname_check() -> None:
    plain = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
             "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required '
                                 'username="a\\"b" password="pw";'}
    opts = to_kafka_python(plain, "admin")
    assert (opts["sasl_plain_username"], opts["sasl_plain_password"]) == ('a"b', "pw")
    explicit = to_kafka_python({"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-256",
                                "sasl.username": "u", "sasl.password": "p",
                                "ssl.keystore.type": "PEM", "ssl.keystore.location": "/k.pem",
                                "ssl.key.password": "kp",
                                "ssl.endpoint.identification.algorithm": ""}, "producer")
    assert explicit["sasl_plain_username"] == "u" and explicit["sasl_plain_password"] == "p"
    assert explicit["ssl_certfile"] == explicit["ssl_keyfile"] == "/k.pem"
    assert explicit["ssl_password"] == "kp" and explicit["ssl_check_hostname"] is False


def test_settings_are_typed_per_client_and_java_only_ones_go_to_spark_alone() -> None:
    opts = {"max.poll.records": "500", "enable.idempotence": "false", "fetch.max.wait.ms": "10",
            "socket.connection.setup.timeout.ms": "3000", "compression.type": "none"}
    consumer = to_kafka_python(opts, "consumer")
    assert consumer["max_poll_records"] == 500 and consumer["fetch_max_wait_ms"] == 10
    assert ("enable_idempotence" not in consumer
            and "socket_connection_setup_timeout_ms" not in consumer)
    producer = to_kafka_python(opts, "producer")
    assert producer["enable_idempotence"] is False and producer["compression_type"] is None
    assert "max_poll_records" not in producer
    assert spark_options(config.KafkaSettings(options=opts))[
        "kafka.socket.connection.setup.timeout.ms"] == "3000"


@pytest.mark.parametrize(("extra", "key"), [
    ({"ssl.truststore.type": "JKS"}, "ssl.truststore.location"),
    ({"ssl.truststore.certificates": "-----BEGIN CERTIFICATE-----"}, "ssl.truststore.certificates"),
    ({"ssl.keystore.location": "/k.p12", "ssl.keystore.type": "PKCS12"}, "ssl.keystore.location"),
    ({"ssl.cipher.suites": "TLS_AES_128_GCM_SHA256"}, "ssl.cipher.suites"),
    ({"sasl.login.module.typo": "x"}, "sasl.login.module.typo"),
    ({"sasl.mechanism": "GSSAPI"}, "sasl.mechanism"),
    ({"sasl.mechanism": "PLAIN"}, "sasl.jaas.config"),
    ({"request.timeout.ms": f"{PASSWORD}"}, "request.timeout.ms"),
    ({"sasl.jaas.config": f'com.example.Custom required password="{PASSWORD}";'},
     "sasl.jaas.config"),
    ({"sasl.jaas.config": f'not a jaas line password={PASSWORD}'}, "sasl.jaas.config"),
])
def test_what_kafka_python_cannot_use_is_an_error_naming_the_key_not_the_value(extra, key) -> None:
    with pytest.raises(ConfigError) as e:
        to_kafka_python(SCRAM_SSL | extra, "consumer")
    assert f"kafka.{key}" in str(e.value)
    assert PASSWORD not in str(e.value) and "Pa55" not in str(e.value)


def test_sasl_without_credentials_is_an_error() -> None:
    with pytest.raises(ConfigError, match="neither kafka.sasl.jaas.config"):
        to_kafka_python({"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN"}, "admin")


def test_python_only_credentials_become_a_jaas_line_for_spark() -> None:
    spark = for_spark({"sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "u",
                       "sasl.password": 'p"w'})
    assert "sasl.username" not in spark and "sasl.password" not in spark
    assert spark["sasl.jaas.config"] == (
        'org.apache.kafka.common.security.scram.ScramLoginModule required '
        'username="u" password="p\\"w";')
    assert for_spark(SCRAM_SSL) == SCRAM_SSL


# -- loading: --command-config and ${ENV} ----------------------------------------------------------

def _client_properties(tmp_path) -> str:
    path = tmp_path / "client.properties"
    path.write_text(
        "bootstrap.servers=127.0.0.1:9093\n"
        "security.protocol=SASL_SSL\n"
        "sasl.mechanism=SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        "  username=\"job\" password=\"${KAFKA_PASSWORD}\";\n"
        "ssl.truststore.type=PEM\n"
        "ssl.truststore.location=/etc/kafka/ca.pem\n")
    return str(path)


def test_command_config_with_env_secret_reaches_spark_and_kafka_python_but_no_repr(
        tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("KAFKA_PASSWORD", PASSWORD)
    parser = argparse.ArgumentParser()
    add_config_args(parser)
    cfg = load_config(parser.parse_args(["--command-config", _client_properties(tmp_path),
                                         "--conf", "kafka.client.id=rebalancer-job"]))
    assert cfg.kafka.bootstrap_servers == "127.0.0.1:9093"
    spark = spark_options(cfg.kafka)
    assert (spark["kafka.bootstrap.servers"] == "127.0.0.1:9093"
            and spark["kafka.client.id"] == "rebalancer-job")
    assert f'password="{PASSWORD}"' in spark["kafka.sasl.jaas.config"]
    assert to_kafka_python(cfg.kafka.options, "admin")["sasl_plain_password"] == PASSWORD
    for shown in (repr(cfg), str(cfg), repr(cfg.kafka), str(cfg.kafka.redacted())):
        assert PASSWORD not in shown


def test_unreadable_trust_store_is_a_config_error_naming_the_setting(tmp_path) -> None:
    from streaming.kafka_clients.security import check_access

    opts = to_kafka_python(SCRAM_SSL | {"bootstrap.servers": "127.0.0.1:9",
                                        "ssl.truststore.location": str(tmp_path / "absent.pem")},
                           "admin")
    with pytest.raises(ConfigError, match="kafka.ssl.truststore.location"):
        check_access(opts)


def test_unset_env_secret_and_missing_file_are_config_errors(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("KAFKA_PASSWORD", raising=False)
    with pytest.raises(ConfigError, match=r"\$\{KAFKA_PASSWORD\}"):
        config.load(None, command_config=_client_properties(tmp_path))
    with pytest.raises(ConfigError, match="no such file"):
        config.load(None, command_config=str(tmp_path / "absent.properties"))


def test_toml_kafka_options_take_env_references(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("KAFKA_PASSWORD", PASSWORD)
    toml = tmp_path / "r.toml"
    toml.write_text('[kafka]\nbootstrap_servers = "h:9093"\n[kafka.options]\n'
                    '"sasl.mechanism" = "SCRAM-SHA-512"\n"sasl.username" = "job"\n'
                    '"sasl.password" = "${KAFKA_PASSWORD}"\n'
                    '"security.protocol" = "SASL_PLAINTEXT"\n')
    cfg = config.load(toml)
    assert to_kafka_python(cfg.kafka.options, "consumer")["sasl_plain_password"] == PASSWORD
    assert f'password="{PASSWORD}"' in spark_options(cfg.kafka)["kafka.sasl.jaas.config"]


# -- secrets never printed -------------------------------------------------------------------------

def test_secret_prints_as_stars_everywhere_but_keeps_its_characters() -> None:
    s = Secret(PASSWORD)
    assert PASSWORD not in (f"{s} {s!r} {s:>30}" + "%s %r" % (s, s)  # noqa: UP031
                            + str({"p": s}) + str([s]))
    assert s.encode() == PASSWORD.encode() and s == PASSWORD and s.reveal() == PASSWORD
    assert "\0".join(["u", s]).endswith(PASSWORD)  # as kafka-python's PLAIN builds its message
    for clone in (copy.copy(s), copy.deepcopy(s), pickle.loads(pickle.dumps(s))):
        assert clone.encode() == PASSWORD.encode()


def test_kafka_python_debug_logs_never_show_the_password(caplog, tmp_path) -> None:
    """At DEBUG, a kafka-python client built from SCRAM settings logs its configuration (and, with
    no broker to reach, its failed attempts): the password and the JAAS line appear in no record."""
    from kafka import KafkaAdminClient

    from streaming.embedded.sasl_ssl import EmbeddedSecurity
    from streaming.kafka_clients import factories as kafka_clients

    tls = EmbeddedSecurity(tmp_path)
    tls.make_certificates()
    with socket.socket() as closed:  # bound, never listening: every connection is refused at once
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
        cfg = config.load(None, {"kafka.bootstrap_servers": f"127.0.0.1:{port}",
                                 **{f"kafka.{k}": v for k, v in SCRAM_SSL.items()},
                                 "kafka.ssl.truststore.location": str(tls.ca_file)})
        caplog.set_level(logging.DEBUG)
        # `rebalancer` (cli.main, other tests) sets it to WARNING
        caplog.set_level(logging.DEBUG, logger="kafka")
        opts = kafka_clients.python_client_options(cfg, "admin")
        # kafka-python's timeout; the logs are the point
        with pytest.raises(Exception):  # noqa: B017
            KafkaAdminClient(**(opts | {"bootstrap_timeout_ms": 300, "client_id": "t"}))
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "Starting KafkaAdminClient with configuration" in logged
    assert "sasl_plain_password" in logged  # the dump is there, its value is not
    assert PASSWORD not in logged and "Pa55" not in logged


def test_redaction_filter_covers_kafka_loggers_at_every_level(caplog) -> None:
    from streaming.kafka_clients.security import install_log_redaction, register_secret

    register_secret("another-secret-value")
    install_log_redaction()
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="kafka")
    for name in ("kafka", "kafka.admin.client", "kafka.net.connection"):
        logging.getLogger(name).debug("jaas=%s", 'password="another-secret-value";')
        logging.getLogger(name).error("raw another-secret-value")
    assert len(caplog.records) == 6
    assert all("another-secret-value" not in r.getMessage() and "***" in r.getMessage()
               for r in caplog.records)

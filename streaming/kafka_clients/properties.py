"""Kafka client settings in Kafka's own names, translated once, completely, for kafka-python and for
Spark (read from .properties files and with ``${ENV}`` references expanded by
:mod:`streaming.java_properties`).

Spark's Kafka source and sink take the settings as they are (``kafka.``-prefixed). kafka-python
spells them differently and reads TLS material as PEM files only, so :func:`to_kafka_python` maps
every setting it knows; a setting that only Java clients understand (:data:`JAVA_ONLY`) is left to
Spark; anything else is a :class:`~streaming.errors.ConfigError` that names the key (never the
value). A password travels as a :class:`Secret`, which never prints itself.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from streaming.config import KafkaSettings
from streaming.errors import ConfigError

REDACTED = "***"


class Secret(str):
    """A string that never prints itself: ``repr``, ``str()``, ``%s`` and f-strings show ``***``.
    Its characters are still there for whoever encodes it (``secret.encode()``), as SASL and TLS
    do."""

    __slots__ = ()

    def __repr__(self) -> str:
        return repr(REDACTED)

    def __str__(self) -> str:
        return REDACTED

    def __format__(self, spec: str) -> str:
        return REDACTED

    def reveal(self) -> str:
        return str.__str__(self)


# keys whose values are secrets (also: any key hinting at one, see config.SECRET_HINTS)
SECRET_KEYS = frozenset({"sasl.jaas.config", "sasl.password", "ssl.key.password",
                         "ssl.keystore.password", "ssl.truststore.password", "ssl.keystore.key"})

# Settings meaningful to Java clients only: Spark gets them, kafka-python has no equivalent and
# ignores them.
JAVA_ONLY = frozenset({
    "default.api.timeout.ms", "socket.connection.setup.timeout.ms",
    "socket.connection.setup.timeout.max.ms", "interceptor.classes", "metric.reporters",
    "metrics.num.samples", "metrics.recording.level", "metrics.sample.window.ms",
    "auto.include.jmx.reporter", "enable.metrics.push", "partitioner.class",
    "partitioner.ignore.keys", "partitioner.adaptive.partitioning.enable", "check.crcs",
    "sasl.login.class", "sasl.login.callback.handler.class", "sasl.client.callback.handler.class",
    "sasl.login.refresh.window.factor", "sasl.login.refresh.window.jitter",
    "sasl.login.refresh.min.period.seconds", "sasl.login.refresh.buffer.seconds",
    "sasl.login.connect.timeout.ms", "sasl.login.read.timeout.ms", "sasl.login.retry.backoff.ms",
    "sasl.login.retry.backoff.max.ms",
    "ssl.keymanager.algorithm", "ssl.trustmanager.algorithm", "ssl.secure.random.implementation",
    "ssl.engine.factory.class", "ssl.provider", "ssl.protocol", "ssl.enabled.protocols",
    # a PEM trust store has no password; a password-protected JKS/PKCS12 one is refused below anyway
    "ssl.truststore.password", "ssl.keystore.password",
})

# Settings kafka-python takes under its own name: Java name -> (kafka-python name, parse).
_as_int: Callable[[str], Any] = int
_AS_IS: Callable[[str], Any] = str


def _as_bool(v: str) -> bool:
    if v.lower() not in ("true", "false"):
        raise ValueError(v)
    return v.lower() == "true"


def _acks(v: str) -> Any:
    return v if v == "all" else int(v)


def _compression(v: str) -> str | None:
    return None if v == "none" else v


GENERAL = {k: (k.replace(".", "_"), parse) for k, parse in {
    "client.id": _AS_IS, "client.dns.lookup": _AS_IS, "request.timeout.ms": _as_int,
    "reconnect.backoff.ms": _as_int, "reconnect.backoff.max.ms": _as_int,
    "retry.backoff.ms": _as_int, "metadata.max.age.ms": _as_int,
    "connections.max.idle.ms": _as_int, "send.buffer.bytes": _as_int,
    "receive.buffer.bytes": _as_int,
    # consumers
    "session.timeout.ms": _as_int, "heartbeat.interval.ms": _as_int,
    "max.poll.interval.ms": _as_int, "max.poll.records": _as_int, "fetch.min.bytes": _as_int,
    "fetch.max.bytes": _as_int, "fetch.max.wait.ms": _as_int,
    "max.partition.fetch.bytes": _as_int, "auto.commit.interval.ms": _as_int,
    "isolation.level": _AS_IS, "client.rack": _AS_IS, "exclude.internal.topics": _as_bool,
    # producers
    "acks": _acks, "linger.ms": _as_int, "batch.size": _as_int, "max.request.size": _as_int,
    "buffer.memory": _as_int, "max.block.ms": _as_int, "retries": _as_int,
    "enable.idempotence": _as_bool, "delivery.timeout.ms": _as_int,
    "compression.type": _compression,
    "max.in.flight.requests.per.connection": _as_int,
}.items()}

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
LOGIN_MODULES = {
    "org.apache.kafka.common.security.scram.ScramLoginModule": ("SCRAM-SHA-256", "SCRAM-SHA-512"),
    "org.apache.kafka.common.security.plain.PlainLoginModule": ("PLAIN",),
}
# python-only spellings of the credentials (as librdkafka has them); Spark gets a JAAS line instead
PYTHON_ONLY = ("sasl.username", "sasl.password")

_JAAS = re.compile(
    r'^\s*(?P<module>[\w.$]+)\s+(?P<flag>required|requisite|sufficient|optional)'
    r'(?P<opts>.*?);?\s*$', re.DOTALL)
_JAAS_OPT = re.compile(
    r'\s*(?P<key>[\w.-]+)\s*=\s*(?:"(?P<quoted>(?:[^"\\]|\\.)*)"|(?P<bare>[^\s";]+))')


# -- translation -----------------------------------------------------------------------------------

def parse_jaas(value: str) -> tuple[str, dict[str, str]]:
    """``Module required key="value" ...;`` -> (module, options). Errors never quote the value."""
    m = _JAAS.match(value)
    if not m:
        raise ConfigError("kafka.sasl.jaas.config is not a JAAS line (`<LoginModule> required "
                          "key=\"value\" ...;`)")
    opts: dict[str, str] = {}
    rest = m.group("opts")
    pos = 0
    while rest[pos:].strip():
        om = _JAAS_OPT.match(rest, pos)
        if not om:
            raise ConfigError(
                "kafka.sasl.jaas.config: cannot read its options (expected key=\"value\" pairs)")
        raw = om.group("quoted")
        opts[om.group("key")] = (re.sub(r"\\(.)", r"\1", raw) if raw is not None
                                 else om.group("bare"))
        pos = om.end()
    return m.group("module"), opts


def credentials(options: Mapping[str, str]) -> tuple[str, str] | None:
    """(username, password) from sasl.jaas.config or sasl.username/sasl.password; None without
    SASL."""
    mechanism = options.get("sasl.mechanism", "GSSAPI")
    if "sasl.jaas.config" in options:
        module, opts = parse_jaas(options["sasl.jaas.config"])
        if module not in LOGIN_MODULES:
            raise ConfigError(
                f"kafka.sasl.jaas.config: kafka-python cannot use the login module {module} (it "
                f"supports {', '.join(sorted(LOGIN_MODULES))})")
        if mechanism not in LOGIN_MODULES[module]:
            raise ConfigError(
                f"kafka.sasl.jaas.config: {module.rsplit('.', 1)[-1]} does not go with "
                f"sasl.mechanism={mechanism}")
        missing = [k for k in ("username", "password") if k not in opts]
        if missing:
            raise ConfigError(f"kafka.sasl.jaas.config has no {' or '.join(missing)}")
        return opts["username"], opts["password"]
    if "sasl.username" in options or "sasl.password" in options:
        missing = [k for k in PYTHON_ONLY if k not in options]
        if missing:
            raise ConfigError(
                f"kafka.{missing[0]} is missing (sasl.username and sasl.password go together)")
        return options["sasl.username"], options["sasl.password"]
    return None


def to_kafka_python(options: Mapping[str, str], client: str) -> dict[str, Any]:
    """``options`` (Kafka's names, without ``kafka.``) as keyword arguments of kafka-python's
    ``client`` (``admin``, ``producer`` or ``consumer``). Raises ConfigError naming the first key it
    cannot use."""

    known = _kafka_python_defaults(client)
    out: dict[str, Any] = {}
    if "bootstrap.servers" in options:
        out["bootstrap_servers"] = options["bootstrap.servers"].split(",")
    protocol = options.get("security.protocol", "PLAINTEXT").upper()
    if protocol not in PROTOCOLS:
        raise ConfigError(f"kafka.security.protocol must be one of {', '.join(PROTOCOLS)}")
    out["security_protocol"] = protocol
    if protocol.startswith("SASL_"):
        mechanism = options.get("sasl.mechanism", "GSSAPI")
        if mechanism not in MECHANISMS:
            raise ConfigError(f"kafka.sasl.mechanism={mechanism}: kafka-python here supports "
                              f"{', '.join(MECHANISMS)}")
        creds = credentials(options)
        if creds is None:
            raise ConfigError(
                "kafka.security.protocol is SASL_* but neither kafka.sasl.jaas.config nor "
                "kafka.sasl.username/kafka.sasl.password is set")
        out |= {"sasl_mechanism": mechanism, "sasl_plain_username": creds[0],
                "sasl_plain_password": Secret(creds[1])}
    if protocol in ("SSL", "SASL_SSL"):
        out |= _tls(options)
    for key, value in options.items():
        if key in _HANDLED or key in JAVA_ONLY:
            continue
        if key in GENERAL:
            name, parse = GENERAL[key]
            if name not in known:  # a consumer setting while building an admin client, say
                continue
            try:
                out[name] = parse(value)
            except ValueError:
                raise ConfigError(f"kafka.{key}: not a valid value for kafka-python") from None
            continue
        raise ConfigError(f"kafka.{key} has no kafka-python equivalent (and is not a Java-only "
                          "setting this project passes to Spark alone)")
    return out


_HANDLED = frozenset({
    "bootstrap.servers", "security.protocol", "sasl.mechanism", "sasl.jaas.config", *PYTHON_ONLY,
    "ssl.truststore.type", "ssl.truststore.location", "ssl.keystore.type", "ssl.keystore.location",
    "ssl.key.password", "ssl.endpoint.identification.algorithm",
})


def _tls(options: Mapping[str, str]) -> dict[str, Any]:

    out: dict[str, Any] = {}
    for inline in ("ssl.truststore.certificates", "ssl.keystore.certificate.chain",
                   "ssl.keystore.key"):
        if inline in options:
            raise ConfigError(f"kafka.{inline}: kafka-python reads PEM files only; put it in a "
                              "file and set the matching .location with .type=PEM")
    if "ssl.truststore.location" in options:
        if options.get("ssl.truststore.type", "JKS").upper() != "PEM":
            raise ConfigError(
                "kafka.ssl.truststore.location: kafka-python reads PEM trust stores only; use a "
                "PEM file and set ssl.truststore.type=PEM")
        out["ssl_cafile"] = options["ssl.truststore.location"]
    if "ssl.keystore.location" in options:
        if options.get("ssl.keystore.type", "JKS").upper() != "PEM":
            raise ConfigError(
                "kafka.ssl.keystore.location: kafka-python reads PEM key stores only; use a PEM "
                "file (key and certificate chain) and set ssl.keystore.type=PEM")
        out["ssl_certfile"] = out["ssl_keyfile"] = options["ssl.keystore.location"]
        if "ssl.key.password" in options:
            out["ssl_password"] = Secret(options["ssl.key.password"])
    algorithm = options.get("ssl.endpoint.identification.algorithm", "https").lower()
    if algorithm not in ("https", ""):
        raise ConfigError("kafka.ssl.endpoint.identification.algorithm must be https or empty")
    out["ssl_check_hostname"] = algorithm == "https"
    return out


def spark_options(kafka: KafkaSettings) -> dict[str, str]:
    """The settings as Spark's Kafka source and sink take them (``kafka.`` prefixed)."""
    return {"kafka.bootstrap.servers": kafka.bootstrap_servers} | {
        f"kafka.{k}": v for k, v in for_spark(kafka.options).items()}


def for_spark(options: Mapping[str, str]) -> dict[str, str]:
    """``options`` as Java clients take them: python-only credentials become a JAAS line."""
    out = {k: v for k, v in options.items() if k not in PYTHON_ONLY}
    if ("sasl.jaas.config" not in options and "sasl.username" in options
            and "sasl.password" in options):
        mechanism = options.get("sasl.mechanism", "PLAIN")
        module = next((m for m, mechs in LOGIN_MODULES.items() if mechanism in mechs), None)
        if module is not None:
            user, password = (options[k].replace("\\", "\\\\").replace('"', '\\"')
                              for k in PYTHON_ONLY)
            out["sasl.jaas.config"] = f'{module} required username="{user}" password="{password}";'
    return out


def _kafka_python_defaults(client: str) -> Mapping[str, Any]:
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer

    try:
        return {"admin": KafkaAdminClient, "producer": KafkaProducer,
                "consumer": KafkaConsumer}[client].DEFAULT_CONFIG
    except KeyError:
        raise ValueError(f"unknown kafka-python client {client!r}") from None

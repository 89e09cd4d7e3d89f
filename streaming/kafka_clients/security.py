"""Keeping Kafka secrets secret, and saying clearly when authentication or TLS fails.

- :class:`~streaming.kafka_clients.properties.Secret` (beside the settings it wraps): kafka-python
  gets passwords as Secrets, so its DEBUG dump of a client's configuration cannot show them;
- :func:`install_log_redaction`: a filter on every ``kafka`` and ``py4j`` logger (py4j logs the
  commands that carry Spark's Kafka options) that replaces any registered secret in a record with
  ``***``, at every level, registered by the factories that hand the settings to a client
  (kafka-python's in :mod:`streaming.kafka_clients.factories`, Spark's in
  :mod:`streaming.spark_session`), not by loading a configuration;
- :func:`check_access`: before the first kafka-python client of a secured configuration, one TLS
  handshake and one SASL login with a bounded timeout, so a wrong password or an untrusted
  certificate ends at once in :class:`KafkaSecurityError` naming the cause, rather than in retries
  without end.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import socket
import ssl
import threading
import time
from collections.abc import Mapping
from typing import Any

from streaming.errors import KafkaSecurityError, RebalancerError
from streaming.kafka_clients.properties import REDACTED, SECRET_KEYS, parse_jaas

log = logging.getLogger(__name__)

CHECK_TIMEOUT_S = 10.0


_secrets: set[str] = set()
_lock = threading.Lock()


def register_secret(value: str | None) -> None:
    """From now on, ``value`` is replaced by ``***`` in every record of the ``kafka`` loggers."""
    if value:
        with _lock:
            _secrets.add(str.__str__(value))


def register_secrets(options: Mapping[str, str]) -> None:
    """Register the secrets among Kafka client settings (Kafka's names): secret-looking values, and
    the password inside a JAAS line. The log filter is installed too."""
    found = [v for k, v in options.items()
             if k in SECRET_KEYS or any(h in k.lower() for h in ("password", "secret", "token"))]
    if "sasl.jaas.config" in options:
        # not a JAAS line: the whole value is registered anyway
        with contextlib.suppress(RebalancerError):
            found.append(parse_jaas(options["sasl.jaas.config"])[1].get("password", ""))
    for value in found:
        register_secret(value)
    if found:
        install_log_redaction()


class RedactSecrets(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        with _lock:
            known = sorted(_secrets, key=len, reverse=True)
        if not known:
            return True
        try:
            message = record.getMessage()
        except Exception:  # a broken record is the logging module's business, not ours
            return True
        redacted = message
        for s in known:
            redacted = redacted.replace(s, REDACTED)
        if redacted != message:
            record.msg, record.args = redacted, None
        return True


_FILTER = RedactSecrets()


def install_log_redaction() -> None:
    """Put the filter on ``kafka`` and each of its child loggers (a logger's filter sees the records
    made on that very logger only, so each one gets it), and on the root logger's handlers, which
    see a record of any logger created later. Idempotent."""
    # kafka-python's modules create their loggers on import
    import kafka.net.sasl  # noqa: F401

    manager = logging.Logger.manager
    # py4j logs every command it sends to the JVM at DEBUG: Spark's Kafka options included
    names = ["kafka", "py4j",
             *(n for n in list(manager.loggerDict) if n.startswith(("kafka.", "py4j.")))]
    for filtered in [*(logging.getLogger(n) for n in names), *logging.getLogger().handlers]:
        if _FILTER not in filtered.filters:
            filtered.addFilter(_FILTER)


# -- the first connection --------------------------------------------------------------------------

_checked: set[str] = set()


def check_access(opts: Mapping[str, Any], timeout_s: float = CHECK_TIMEOUT_S) -> None:
    """Raise :class:`KafkaSecurityError` if the broker rejects these kafka-python settings' TLS or
    SASL.

    Plaintext settings are not checked; an unreachable broker is left to the caller's own retries
    (it may be starting). Each distinct set of settings is checked once per process."""
    protocol = opts.get("security_protocol", "PLAINTEXT")
    if protocol == "PLAINTEXT":
        return
    key = _fingerprint(opts)
    if key in _checked:
        return
    servers = opts["bootstrap_servers"]
    first = servers[0] if isinstance(servers, list) else servers.split(",")[0]
    host, _, port = first.rpartition(":")
    if protocol in ("SSL", "SASL_SSL") and not _tls_check(opts, host, int(port), timeout_s):
        return
    if protocol.startswith("SASL_") and not _sasl_check(opts, timeout_s):
        return
    _checked.add(key)


def _fingerprint(opts: Mapping[str, Any]) -> str:
    items = sorted((k, str.__str__(v) if isinstance(v, str) else repr(v)) for k, v in opts.items())
    return hashlib.sha256(repr(items).encode()).hexdigest()


def _tls_check(opts: Mapping[str, Any], host: str, port: int, timeout_s: float) -> bool:
    """One TLS handshake as kafka-python would make it; False if the broker cannot be reached at
    all."""
    from streaming.errors import ConfigError

    try:
        ctx = ssl.create_default_context(cafile=opts.get("ssl_cafile"))
    except (OSError, ssl.SSLError) as e:
        raise ConfigError(
            f"kafka.ssl.truststore.location: cannot read it as PEM ({e.strerror or e})") from None
    ctx.check_hostname = bool(opts.get("ssl_check_hostname", True))
    if opts.get("ssl_certfile"):
        password = opts.get("ssl_password")
        try:
            ctx.load_cert_chain(opts["ssl_certfile"], opts.get("ssl_keyfile"),
                                str.__str__(password) if password else None)
        except (OSError, ssl.SSLError) as e:
            raise ConfigError(
                "kafka.ssl.keystore.location: cannot read the key and certificate from it "
                f"({e.strerror or type(e).__name__})") from None
    try:
        sock = socket.create_connection((host, port), timeout=timeout_s)
    except OSError:
        return False
    try:
        with ctx.wrap_socket(sock, server_hostname=host):
            pass
    except ssl.SSLCertVerificationError as e:
        where = opts.get("ssl_cafile") or "the system's trusted CAs"
        raise KafkaSecurityError(
            f"TLS to Kafka at {host}:{port} failed: the broker's certificate is not trusted "
            f"({e.verify_message}; checked against {where}): "
            "check kafka.ssl.truststore.location") from None
    except ssl.SSLError as e:
        raise KafkaSecurityError(f"TLS handshake with Kafka at {host}:{port} failed "
                                 f"({e.reason or e}); is the listener TLS "
                                 "(security.protocol)?") from None
    except OSError:
        return False
    finally:
        sock.close()
    return True


def _sasl_check(opts: Mapping[str, Any], timeout_s: float, attempts: int = 3) -> bool:
    """Single connections to the first bootstrap broker with these credentials, without
    kafka-python's bootstrap loop (which retries a refused login until its timeout). A broker
    answers a wrong password with an error, or (its failed-authentication delay racing the answer)
    by closing the connection in the middle of the SASL exchange; a connection that answered
    ApiVersions and then closed during SASL, on every attempt, counts as refused. False if the
    broker did not get that far."""
    from kafka.errors import KafkaError, SaslAuthenticationFailedError
    from kafka.net.manager import KafkaConnectionManager
    from kafka.net.selector import NetworkSelector

    refused = KafkaSecurityError(
        f"Kafka at {','.join(opts['bootstrap_servers'])} refused SASL {opts.get('sasl_mechanism')} "
        f"authentication as {opts.get('sasl_plain_username')!r}: wrong username or password "
        "(check kafka.sasl.jaas.config)")
    deadline = time.monotonic() + timeout_s
    closed_in_sasl = 0
    for _ in range(attempts):
        left_ms = (deadline - time.monotonic()) * 1000
        if left_ms <= 0:
            break
        net = NetworkSelector()
        manager = KafkaConnectionManager(net,
                                         **(dict(opts) | {"client_id": "rebalancer-auth-check"}))
        node_id = manager.cluster.bootstrap_brokers()[0].node_id
        conns: list[Any] = []

        async def connect_once(m: Any = manager, n: Any = node_id, ms: float = left_ms,
                               out: list = conns) -> None:
            conn = m.get_connection(n, timeout_ms=ms, pop_on_close=False,
                                    refresh_metadata_on_err=False, reset_backoff_on_connect=False)
            out.append(conn)
            await conn

        try:
            net.run(connect_once)
            return True
        except SaslAuthenticationFailedError:
            raise refused from None
        except (KafkaError, OSError) as e:
            # broker_version is known once ApiVersions was answered: the loss came after, during
            # SASL
            if conns and conns[0].broker_version is not None:
                closed_in_sasl += 1
            log.debug("SASL check attempt ended without an answer to the login: %s",
                      type(e).__name__)
            time.sleep(0.2)
        finally:
            manager.close()
            net.close()
    if closed_in_sasl and closed_in_sasl == attempts:
        raise refused
    return False

"""SASL_SSL for the embedded cluster: a CA and broker certificate made on the fly, SCRAM-SHA-512
users created at format time, Kafka's StandardAuthorizer with ACLs per principal, and one client
.properties file per principal (mode 0600) that the rest of the project reads with
``--command-config``.

Listeners (all on loopback):

- ``SASL_SSL`` for clients and between brokers: TLS with the broker certificate, SCRAM-SHA-512; the
  brokers authenticate as ``admin``, the super user;
- ``CONTROLLER`` over ``SSL`` with client certificates required: only holders of the broker
  certificate (principal ``User:CN=broker``, a super user) reach the controllers. SCRAM cannot
  protect this listener (its credentials live in the metadata the controllers serve).

Principals and what the ACLs let them do (``allow.everyone.if.no.acl.found`` stays false):

- ``admin``: everything (super user);
- ``rebalancer`` (the streaming job): read the event topics, write the trigger feed, create all
  four;
- ``collector``: write the event topics, read the member-load topic, describe every topic and group
  (offsets, members, metadata), create the rebalancer topics;
- ``consumer`` (applications): read and describe the trigger feed, nothing else on it; write their
  load reports to the member-load topic (:mod:`streaming.contracts.member_load`); everything on
  topics and groups under the application prefixes.

Passwords are random, live in files only (never in argv: the storage tool reads an ``@``-argument
file that is deleted once formatting is done), and never in a repr.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SUPER_USER = "admin"
BROKER_CERT_PRINCIPAL = "CN=broker"
PRINCIPALS = ("admin", "rebalancer", "collector", "consumer")
MECHANISM = "SCRAM-SHA-512"
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
# topics and groups the `consumer` principal owns: the workload's and the demo's defaults
DEFAULT_APP_PREFIXES = ("workload", "orders")
# Spark's Kafka source names its consumer groups spark-kafka-source-<uuid>...
SPARK_GROUP_PREFIX = "spark-kafka-"


def write_private(path: Path, data: str | bytes) -> None:
    """Write ``data`` to a file only its owner may read (created 0600, never wider for a moment)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)


def jaas_config(username: str, password: str) -> str:
    return f'{SCRAM_MODULE} required username="{username}" password="{password}";'


@dataclass
class EmbeddedSecurity:
    """The TLS material, users and ACLs of one secured embedded cluster, kept under
    ``directory``."""

    directory: Path
    app_prefixes: tuple[str, ...] = DEFAULT_APP_PREFIXES
    topics: tuple[str, str, str, str] = ("rebalancer.lag", "rebalancer.metadata",
                                         "rebalancer.triggers", "rebalancer.member-load")
    """lag, metadata, trigger feed and member-load topic."""
    passwords: dict[str, str] = field(
        default_factory=lambda: {p: secrets.token_urlsafe(24) for p in PRINCIPALS}, repr=False)
    _store_password: str = field(default_factory=lambda: secrets.token_urlsafe(24), repr=False)

    @property
    def ca_file(self) -> Path:
        return self.directory / "ca.pem"

    @property
    def keystore(self) -> Path:
        return self.directory / "broker.p12"

    def properties_file(self, principal: str) -> Path:
        return self.directory / f"{principal}.properties"

    # -- TLS ---------------------------------------------------------------------------------------

    def make_certificates(self) -> None:
        """A CA and a broker certificate for 127.0.0.1/localhost signed by it; the broker's key and
        chain as a PKCS12 keystore, the CA as PEM (Java and kafka-python both read PEM trust
        stores)."""
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.hazmat.primitives.serialization import pkcs12
        from cryptography.x509.oid import NameOID

        now = datetime.datetime.now(datetime.UTC)
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "rebalancer embedded CA")])
        ca_cert = (
            x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
            .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False,
                                         encipher_only=False, decipher_only=False),
                           critical=True)
            .sign(ca_key, hashes.SHA256())
        )
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "broker")]))
            .issuer_name(ca_name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(
                x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                             x509.DNSName("localhost")]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .sign(ca_key, hashes.SHA256())
        )
        write_private(self.ca_file, ca_cert.public_bytes(serialization.Encoding.PEM))
        p12 = pkcs12.serialize_key_and_certificates(
            b"broker", key, cert, [ca_cert],
            serialization.BestAvailableEncryption(self._store_password.encode()))
        write_private(self.keystore, p12)

    # -- broker configuration and formatting -------------------------------------------------------

    def broker_properties(self, port: int, controller_port: int) -> dict[str, str]:
        """server.properties entries replacing the plaintext listeners (the file is written
        0600)."""
        return {
            "listeners": f"SASL_SSL://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
            "advertised.listeners": f"SASL_SSL://127.0.0.1:{port}",
            "listener.security.protocol.map": "CONTROLLER:SSL,SASL_SSL:SASL_SSL",
            "inter.broker.listener.name": "SASL_SSL",
            "sasl.enabled.mechanisms": MECHANISM,
            "sasl.mechanism.inter.broker.protocol": MECHANISM,
            f"listener.name.sasl_ssl.{MECHANISM.lower()}.sasl.jaas.config":
                jaas_config(SUPER_USER, self.passwords[SUPER_USER]),
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": str(self.keystore),
            "ssl.keystore.password": self._store_password,
            "ssl.key.password": self._store_password,
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(self.ca_file),
            "listener.name.controller.ssl.client.auth": "required",
            "authorizer.class.name": AUTHORIZER,
            "super.users": f"User:{SUPER_USER};User:{BROKER_CERT_PRINCIPAL}",
            "allow.everyone.if.no.acl.found": "false",
        }

    def format_argument_file(self) -> Path:
        """The storage tool's SCRAM arguments in a 0600 file, passed as ``@file`` (the java launcher
        expands it), so no password is ever in a process's argv. Delete it after formatting."""
        path = self.directory / "format.args"
        # one file for every node's format run, which may be reading it already
        if not path.exists():
            lines = [f"--add-scram\n{MECHANISM}=[name={p},password={self.passwords[p]}]\n"
                     for p in PRINCIPALS]
            write_private(path, "".join(lines))
        return path

    def grant(self, bootstrap_servers: str) -> None:
        """Once the cluster is up: the ACLs, the clients' .properties files; the format arguments
        go."""
        (self.directory / "format.args").unlink(missing_ok=True)
        self.create_acls(bootstrap_servers)
        self.write_client_properties(bootstrap_servers)

    def client_files(self) -> dict[str, str]:
        return {p: str(self.properties_file(p)) for p in PRINCIPALS}

    # -- clients -----------------------------------------------------------------------------------

    def client_properties(self, principal: str, bootstrap_servers: str) -> dict[str, str]:
        return {
            "bootstrap.servers": bootstrap_servers,
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": MECHANISM,
            "sasl.jaas.config": jaas_config(principal, self.passwords[principal]),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(self.ca_file),
        }

    def write_client_properties(self, bootstrap_servers: str) -> dict[str, Path]:
        """One Kafka-style .properties file per principal (0600); returns principal -> file."""
        from streaming.java_properties import format_properties

        files = {}
        for principal in PRINCIPALS:
            path = self.properties_file(principal)
            write_private(path,
                          format_properties(self.client_properties(principal, bootstrap_servers)))
            files[principal] = path
        return files

    def python_admin_options(self) -> dict[str, Any]:
        """kafka-python options of the super user (the cluster's own readiness checks and ACL
        set-up)."""
        from streaming.kafka_clients.properties import to_kafka_python

        props = self.client_properties(SUPER_USER, "")
        del props["bootstrap.servers"]
        return to_kafka_python(props, "admin")

    # -- ACLs --------------------------------------------------------------------------------------

    def acls(self) -> list[Any]:
        """The ACL bindings of every principal (kafka-python ``ACL`` objects)."""
        from kafka.admin import ACL, ACLOperation, ACLPermissionType, ResourcePattern, ResourceType
        from kafka.admin import ACLResourcePatternType as Pattern

        lag, metadata, feed, load = self.topics

        def allow(principal: str, ops: Iterable[ACLOperation], rtype: ResourceType, name: str,
                  pattern: Pattern = Pattern.LITERAL) -> list[ACL]:
            return [
                ACL(f"User:{principal}", "*", op, ACLPermissionType.ALLOW,
                    ResourcePattern(rtype, name, pattern)) for op in ops]

        Op, T, G = ACLOperation, ResourceType.TOPIC, ResourceType.GROUP
        bindings = []
        for topic in (lag, metadata):
            bindings += allow("rebalancer", (Op.READ, Op.DESCRIBE, Op.CREATE), T, topic)
            bindings += allow("collector", (Op.WRITE, Op.DESCRIBE, Op.CREATE), T, topic)
        bindings += allow("rebalancer", (Op.WRITE, Op.DESCRIBE, Op.CREATE), T, feed)
        bindings += allow("rebalancer", (Op.READ,), G, SPARK_GROUP_PREFIX, Pattern.PREFIXED)
        # the collector creates the feed topic when it starts first, and never writes it
        bindings += allow("collector", (Op.CREATE,), T, feed)
        bindings += allow("collector", (Op.DESCRIBE,), T, "*")
        bindings += allow("collector", (Op.DESCRIBE,), G, "*")
        bindings += allow("collector", (Op.DESCRIBE,), ResourceType.CLUSTER, "kafka-cluster")
        bindings += allow("consumer", (Op.READ, Op.DESCRIBE), T, feed)
        # load reports: the consumers write, the collector reads (no group: it assigns itself)
        bindings += allow("consumer", (Op.WRITE, Op.DESCRIBE), T, load)
        bindings += allow("collector", (Op.READ, Op.CREATE), T, load)
        bindings += allow("rebalancer", (Op.DESCRIBE, Op.CREATE), T, load)
        for prefix in self.app_prefixes:
            bindings += allow("consumer", (Op.ALL,), T, prefix, Pattern.PREFIXED)
            bindings += allow("consumer", (Op.ALL,), G, prefix, Pattern.PREFIXED)
        return bindings

    def create_acls(self, bootstrap_servers: str) -> None:
        from kafka import KafkaAdminClient

        from streaming.errors import KafkaClusterError

        admin = KafkaAdminClient(client_id="rebalancer-acls", request_timeout_ms=10000,
                                 **(self.python_admin_options()
                                    | {"bootstrap_servers": bootstrap_servers}))
        try:
            result = admin.create_acls(self.acls())
        finally:
            admin.close()
        if result.get("failed"):
            raise KafkaClusterError(f"creating ACLs failed: {result['failed'][0]}")

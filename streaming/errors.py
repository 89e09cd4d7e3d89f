"""Errors of the streaming side as a whole (set-up, Kafka, Spark, Delta, configuration, the job's
fatal ones); the packages' own are in their ``errors.py`` (``streaming/state``,
``streaming/collector``, ``streaming/apply``).

All derive from :class:`RebalancerError`, the project's one root (defined in
:mod:`assignors.errors`, the bottom layer, and re-exported here). Each names its cause and, where
there is one, the log file to read. The CLI prints the message and exits with ``exit_status``;
nothing here prints a traceback for a known failure.
"""

from __future__ import annotations

from assignors.errors import RebalancerError

__all__ = ["ConfigError", "JobError", "KafkaClusterError", "KafkaSecurityError",
           "KafkaUnreachableError", "RebalancerError", "SetupError", "UsageError"]


class UsageError(RebalancerError):
    """Bad input from the user: a malformed file, an unknown name, a bad option value."""

    exit_status = 2


class ConfigError(UsageError):
    """The configuration file or a ``--conf`` override is wrong; the message names the key."""


class SetupError(RebalancerError):
    """A prerequisite is missing: Java, Maven, the JVM artifacts, network to Maven Central."""


class KafkaClusterError(RebalancerError):
    """The embedded Kafka cluster could not start, answer or stop."""


class KafkaUnreachableError(RebalancerError):
    """A configured Kafka cluster did not answer within the start retries."""


class KafkaSecurityError(RebalancerError):
    """Kafka refused the credentials, or TLS to it failed: retrying with the same settings cannot
    help."""


class JobError(RebalancerError):
    """The streaming job cannot go on: its tables or checkpoint are not what it wrote, another job
    holds its checkpoint, or it failed again and again without progress. Restarting will not help.

    It stays in this module: :mod:`streaming.operations.supervisor` recognises it in a Py4J
    traceback by its qualified name ``streaming.errors.JobError``."""

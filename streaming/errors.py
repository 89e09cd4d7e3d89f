"""Errors of the streaming side (set-up, Kafka, Spark, Delta, configuration), all in one place.

Each names its cause and, where there is one, the log file to read. The CLI prints the message and
exits with ``exit_status``; nothing here prints a traceback for a known failure.
"""

from __future__ import annotations


class RebalancerError(Exception):
    exit_status = 1

    def __init__(self, message: str, log_file: str | None = None) -> None:
        if log_file:
            message = f"{message} (see {log_file})"
        super().__init__(message)
        self.log_file = log_file


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


class JobError(RebalancerError):
    """The streaming job cannot go on: its tables or checkpoint are not what it wrote, another job holds
    its checkpoint, or it failed again and again without progress. Restarting will not help."""

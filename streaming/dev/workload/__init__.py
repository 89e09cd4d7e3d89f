"""A real workload on Kafka for tests and demos: skewed producers, a live consumer group with racks,
members joining and leaving, replicas moving between racks (see :class:`Workload`)."""

from streaming.dev.workload.consumers import (
    BUILTIN_ASSIGNORS,
    assignors_for,
    builtin_assignor,
    make_consumer,
)
from streaming.dev.workload.producers import partition_rates
from streaming.dev.workload.runner import Workload, WorkloadOptions

__all__ = ["BUILTIN_ASSIGNORS", "Workload", "WorkloadOptions", "assignors_for", "builtin_assignor",
           "make_consumer", "partition_rates"]

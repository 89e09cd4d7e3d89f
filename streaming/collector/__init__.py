"""The collector: reads lag and metadata of consumer groups with kafka-python's admin API and
publishes lag, members and partitions events (see :mod:`streaming.contracts.events`).

- :mod:`.poll` reads the cluster (one snapshot per poll);
- :mod:`.cluster_snapshot` holds what a poll read (:class:`~.cluster_snapshot.ClusterSnapshot`);
- :mod:`.member_metadata` decodes member metadata and finds each member's rack;
- :mod:`.poll_events` decides which events a snapshot produces (pure);
- :mod:`.publisher` writes events to Kafka;
- :mod:`.collector` ties them into :class:`Collector` (``poll_once``, ``run``).
"""

from streaming.collector.collector import Collector, CollectorOptions, PollStats

__all__ = ["Collector", "CollectorOptions", "PollStats"]

"""The operator's view of the cluster's groups: what ``rebalancer describe`` prints, computed from
one live :class:`~streaming.collector.cluster_snapshot.ClusterSnapshot` (pure: a snapshot in, plain
rows out).

- :mod:`.groups`: a group's partition and member rows, as ``kafka-consumer-groups --describe``
  shows them, with racks, lag in seconds, data-loss risk, hot partitions and the consumers needed,
  and its per-group figures; ``rebalancer verify`` compares the rows with the latest
  recommendation and the collector's ``/metrics`` (:mod:`streaming.exporter`) exports the figures;
- :mod:`.sentences`: what describe says of a group's data-loss risk, hot partitions and consumers
  needed, in sentences, from those rows and figures;
- :mod:`.share_groups`: a share group's rows (KIP-932), as ``kafka-share-groups --describe`` shows
  them.

It reads the collector's snapshot types and the lag rules (:mod:`streaming.lag`); it never imports
the exporter, the commands, the state, the policy or the job.
"""

"""Which broker served a benchmark consumer's fetches, and whether it sat on the consumer's rack.

The collector's ``cross_rack_ps`` counts partitions on a consumer whose rack holds no replica of
them: where the replica is, not where the reads went. This counts the reads. kafka-python (3.0.12
here) sends the consumer's ``client_rack`` in every FetchRequest (v11+, KIP-392) and, once a broker
with ``RackAwareReplicaSelector`` names a preferred read replica, fetches from that broker; a
fetch's records come from the broker the request went to. :meth:`Reads.watch` wraps the consumer's
fetch-response handler and, per partition with records in a response, adds their bytes as served by
a broker on the consumer's rack or on another, and by the partition's leader or a follower.

Example: a consumer on rack a owns partition 1 (replicas on brokers 1, 2, 0 at racks b, c, a; leader
1). Its first fetch goes to the leader on rack b (cross-rack, leader) and the broker answers with
its preferred read replica, broker 0; every later fetch goes there (same rack, follower). Without a
replica on rack a all its reads cross racks wherever they go.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from kafka import TopicPartition

FIGURES = ("read_bytes", "cross_rack_read_bytes", "follower_read_bytes")


@dataclass
class Reads:
    """Bytes fetched by one or more consumers: in all, from another rack, from a follower
    (thread-safe)."""

    read_bytes: int = 0
    cross_rack_read_bytes: int = 0
    follower_read_bytes: int = 0

    def __post_init__(self) -> None:
        self._lock = threading.Lock()

    def count(self, size: int, consumer_rack: str | None, broker_rack: str | None,
              from_leader: bool) -> None:
        """``size`` bytes of one partition served by a broker on ``broker_rack`` (a rack unknown on
        either side never counts as cross-rack), by the partition's leader or not."""
        with self._lock:
            self.read_bytes += size
            if consumer_rack and broker_rack and consumer_rack != broker_rack:
                self.cross_rack_read_bytes += size
            if not from_leader:
                self.follower_read_bytes += size

    def add(self, other: Reads) -> None:
        with self._lock:
            for k in FIGURES:
                setattr(self, k, getattr(self, k) + getattr(other, k))

    def figures(self) -> dict[str, int]:
        with self._lock:
            return {k: getattr(self, k) for k in FIGURES}

    def watch(self, consumer: Any, rack: str | None) -> None:
        """Count every fetch response ``consumer`` (a kafka-python ``KafkaConsumer``) handles from
        now on."""
        fetcher = consumer._fetcher
        cluster = fetcher._manager.cluster
        handle = fetcher._handle_fetch_response

        def counted(node_id: Any, fetch_offsets: Any, send_time: Any, response: Any) -> Any:
            broker = cluster.broker_metadata(node_id)
            broker_rack = getattr(broker, "rack", None)
            for topic_data in response.responses:
                for part in topic_data.partitions:
                    size = len(part.records or b"")
                    if size:
                        tp = TopicPartition(topic_data.topic, part.partition_index)
                        leader = cluster.leader_for_partition(tp)
                        self.count(size, rack, broker_rack, leader == node_id)
            return handle(node_id, fetch_offsets, send_time, response)

        fetcher._handle_fetch_response = counted

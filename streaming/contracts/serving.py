"""Which groups can take a recommendation, and why not: the one rule the collector, the
job and ``describe`` share.

A recommendation is partitions per member; it helps only where the group's members place partitions
with an assignor that reads the trigger feed: RecommendationAssignor on the classic protocol
(kafka-python's or Java's, protocol name ``rebalancer``) or the KIP-848 server-side assignor (also
``rebalancer``). Every group falls in one of five kinds, decided from what ListGroups /
DescribeGroups / ConsumerGroupDescribe say of the group (its type, its protocol type, its assignor)
and nothing else:

- :data:`SERVED`: the members apply it at their next rebalance;
- :data:`UNAPPLIED`: read and published, but the members' assignor does not read the feed now (a
  classic group on ``range`` or ``cooperative-sticky``, a KIP-848 group on ``uniform``); the group
  takes it once every member offers ``rebalancer`` (a rolling switch), so it stays on the feed.
  librdkafka (confluent-kafka) has no pluggable assignor on the classic protocol, so its classic
  groups stay here for good: on ``group.protocol=consumer`` with the server-side assignor they are
  served;
- :data:`OBSERVE_ONLY`: read, written to Delta with ``mode = observe`` and never published, because
  its members cannot apply a partition assignment at all: a Kafka Streams application (assignor
  ``stream``: tasks are co-partitioned and placed by Streams' own assignor with its own user data),
  a group that only commits offsets (no members);
- :data:`LAG_ONLY`: read, and only its lag published (no members event), so the job keeps its lag
  and the metrics show it but nothing is ever decided for it, not even in observe mode: share groups
  (KIP-932). The broker hands their records out one delivery at a time and may give one partition to
  several share consumers, so a partition-per-member assignment cannot even state what the group
  does (which an observe-only what-if still can); ``describe`` shows its members and
  share-partitions as Kafka's ``kafka-share-groups`` does;
- :data:`NOT_READ`: the collector skips it and says why in its log and in ``describe``: Kafka
  Connect worker groups (protocol type ``connect``: connectors and tasks, not partitions), KIP-1071
  streams groups (not read yet), any other protocol type.
"""

from __future__ import annotations

from dataclasses import dataclass

SERVED = "served"
UNAPPLIED = "unapplied"
OBSERVE_ONLY = "observe_only"
LAG_ONLY = "lag_only"
NOT_READ = "not_read"
KINDS = (SERVED, UNAPPLIED, OBSERVE_ONLY, LAG_ONLY, NOT_READ)

ASSIGNOR = "rebalancer"
"""The protocol name of RecommendationAssignor (Python and Java) and of the KIP-848
ServerAssignor."""
STREAMS_ASSIGNOR = "stream"
"""The classic protocol name of Kafka Streams' StreamsPartitionAssignor."""
CLASSIC, CONSUMER, SHARE, STREAMS = "classic", "consumer", "share", "streams"
"""Group types as ListGroups v5+ spells them (lower-cased)."""

_SHARE = ("share group (KIP-932): the broker hands records to share consumers itself and may give "
          "one partition to several of them, so there is no partition assignment to recommend; its "
          "share-partition lag (KIP-1226) is read and published")
_NOT_READ_TYPES = {
    STREAMS: "streams group (KIP-1071): not read yet; a Kafka Streams application on the classic "
             "protocol is read (observe-only)",
}
_CONNECT = ("Kafka Connect worker group (protocol type connect): it assigns connectors and tasks "
            "to workers, not partitions; a sink connector's consumers are the consumer group "
            "connect-<connector>, read as any")


@dataclass(frozen=True)
class Serving:
    kind: str
    """one of :data:`KINDS`."""
    reason: str | None = None
    """why the group is not :data:`SERVED` (None when it is)."""

    @property
    def read(self) -> bool:
        """Whether the collector publishes events for the group."""
        return self.kind != NOT_READ

    @property
    def decided(self) -> bool:
        """Whether the collector publishes the group's members, so the job decides for it (and
        writes what it decides, in observe mode when not :attr:`published`)."""
        return self.kind in (SERVED, UNAPPLIED, OBSERVE_ONLY)

    @property
    def published(self) -> bool:
        """Whether its recommendations may go to the trigger feed (``policy.mode`` decides the
        rest)."""
        return self.kind in (SERVED, UNAPPLIED)

    def says(self) -> str:
        """One line for a table or a Delta row: ``served``, or the kind and its reason."""
        return self.kind if self.reason is None else f"{self.kind}: {self.reason}"


def verdict(group_type: str | None, protocol_type: str | None, assignor: str | None) -> Serving:
    """How a group is served, from its ListGroups type (None: not said, a broker before 4.0 or the
    job, which sees only the members event), its protocol type (``consumer``, ``""`` for a group
    that only commits offsets, ``connect``, ...; None: not said, taken as ``consumer``) and its
    assignor (the classic protocol's selected protocol name, or a KIP-848 group's server-side
    assignor; None: not known, no members)."""
    kind = (group_type or "").lower()
    if kind == SHARE:
        return Serving(LAG_ONLY, _SHARE)
    if kind in _NOT_READ_TYPES:
        return Serving(NOT_READ, _NOT_READ_TYPES[kind])
    ptype = CONSUMER if protocol_type is None else protocol_type
    if ptype == "connect":
        return Serving(NOT_READ, _CONNECT)
    if ptype not in (CONSUMER, ""):
        return Serving(NOT_READ, f"protocol type {ptype!r} is not a consumer group's")
    if ptype == "":
        return Serving(OBSERVE_ONLY, "the group only commits offsets (no members: a Flink or Spark "
                                     "job, assign()); nothing joins it to apply a recommendation")
    if assignor == ASSIGNOR:
        return Serving(SERVED)
    if assignor == STREAMS_ASSIGNOR:
        return Serving(OBSERVE_ONLY, "Kafka Streams (assignor stream): tasks are co-partitioned "
                                     "and placed by Streams' own assignor, which does not take a "
                                     "partition assignment")
    if assignor is None:
        return Serving(UNAPPLIED, "no assignor known (no members now): applied once members join "
                                  f"with assignor {ASSIGNOR}")
    if kind == CONSUMER:
        return Serving(UNAPPLIED, f"KIP-848 group on the broker's {assignor!r} assignor: applied "
                                  f"once the brokers run the server-side assignor and the group "
                                  f"uses it (group.remote.assignor={ASSIGNOR}, or the brokers' "
                                  f"default)")
    if kind == CLASSIC:
        return Serving(UNAPPLIED, f"members assign with {assignor!r}: applied once every member "
                                  f"offers {ASSIGNOR} (RecommendationAssignor); librdkafka has no "
                                  "pluggable assignor on the classic protocol: use "
                                  "group.protocol=consumer with the server-side assignor")
    # the job's case: only the members event's assignor, not the protocol, so it names both ways and
    # librdkafka's
    return Serving(UNAPPLIED, f"the group assigns with {assignor!r}: applied once its assignor is "
                              f"{ASSIGNOR} (RecommendationAssignor, Java's or kafka-python's, on "
                              "the classic protocol; the server-side assignor on KIP-848, the only "
                              "way for librdkafka, which has no pluggable assignor on the classic "
                              "protocol: group.protocol=consumer)")

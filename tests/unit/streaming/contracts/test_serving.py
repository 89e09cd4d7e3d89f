"""The one rule of which groups can take a recommendation (streaming.contracts.serving)."""

from __future__ import annotations

import pytest

from streaming.contracts import serving as s


@pytest.mark.parametrize(("group_type", "protocol_type", "assignor", "kind"), [
    # served: the members' assignor reads the feed, on either protocol
    ("classic", "consumer", "rebalancer", s.SERVED),
    ("consumer", "consumer", "rebalancer", s.SERVED),
    (None, None, "rebalancer", s.SERVED),  # the job: only the members event's assignor
    # read and published, not applied by the assignor the members run now
    # librdkafka or Java on the classic protocol
    ("classic", "consumer", "cooperative-sticky", s.UNAPPLIED),
    ("classic", "consumer", "range", s.UNAPPLIED),
    ("consumer", "consumer", "uniform", s.UNAPPLIED),  # KIP-848 without the server-side assignor
    (None, None, "range", s.UNAPPLIED),
    ("classic", "consumer", None, s.UNAPPLIED),  # an Empty group: no assignor now
    # read, never published
    ("classic", "consumer", "stream", s.OBSERVE_ONLY),  # Kafka Streams on the classic protocol
    (None, None, "stream", s.OBSERVE_ONLY),
    ("classic", "", None, s.OBSERVE_ONLY),  # commits offsets only
    # read for its lag, nothing decided: the broker hands out a share group's records
    ("share", "share", None, s.LAG_ONLY),
    ("SHARE", "share", "simple", s.LAG_ONLY),
    # not read
    ("classic", "connect", "sessioned", s.NOT_READ),
    ("streams", "streams", None, s.NOT_READ),
    ("classic", "sometool", "x", s.NOT_READ),
])
def test_kinds(group_type, protocol_type, assignor, kind):
    got = s.verdict(group_type, protocol_type, assignor)
    assert got.kind == kind
    assert (got.reason is None) == (kind == s.SERVED)
    assert got.read == (kind != s.NOT_READ)
    assert got.published == (kind in (s.SERVED, s.UNAPPLIED))
    assert got.decided == (kind in (s.SERVED, s.UNAPPLIED, s.OBSERVE_ONLY))
    assert got.published <= got.decided <= got.read


def test_reasons_name_what_the_operator_can_do():
    assert ("group.protocol=consumer"
            in s.verdict("classic", "consumer", "cooperative-sticky").reason)
    assert "group.remote.assignor=rebalancer" in s.verdict("consumer", "consumer", "uniform").reason
    # the job knows the assignor only: a librdkafka group on cooperative-sticky learns how it can be
    # served
    job = s.verdict(None, None, "cooperative-sticky").reason
    assert "librdkafka" in job and "group.protocol=consumer" in job
    assert "co-partitioned" in s.verdict("classic", "consumer", "stream").reason
    assert "connect-<connector>" in s.verdict("classic", "connect", "sessioned").reason
    assert "KIP-932" in s.verdict("share", "share", None).reason


def test_says_is_one_line():
    assert s.verdict("classic", "consumer", "rebalancer").says() == "served"
    line = s.verdict("classic", "consumer", "stream").says()
    assert line.startswith("observe_only: ") and "\n" not in line

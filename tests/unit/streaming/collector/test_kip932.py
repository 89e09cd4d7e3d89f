"""Share groups (KIP-932) as the collector reads them, from bytes Java's kafka-clients 4.3.1 wrote.

``tests/data/share_group_protocol.json`` is the output of ``tests/java/ShareMember.java protocol``
(ShareGroupDescribe v1, DescribeShareGroupOffsets v0-1); tests/integration/test_share_groups.py
regenerates it and checks it is unchanged.
"""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from kafka.structs import OffsetAndTimestamp

from streaming import config
from streaming.collector import Collector, CollectorOptions, kip848, kip932
from streaming.collector.member_metadata import RackResolver
from streaming.contracts import events as ev
from streaming.contracts import serving

JAVA = json.loads((Path(__file__).parents[3] / "data" / "share_group_protocol.json").read_text())


def _java(name: str) -> bytes:
    return bytes.fromhex(JAVA[name])


def _offsets_response(version: int) -> dict[str, dict]:
    raw = _java(f"describe_share_group_offsets_response_v{version}")
    response = kip932.DescribeShareGroupOffsetsResponse.decode(raw, version=version)
    return {g.group_id: kip848.group_result(g) for g in response.groups}


def _describe_response() -> dict[str, dict]:
    response = kip932.ShareGroupDescribeResponse.decode(_java("share_group_describe_response_v1"),
                                                        version=1)
    return {g.group_id: kip848.group_result(g) for g in response.groups}


def test_our_requests_are_the_bytes_java_writes():
    describe = kip932.ShareGroupDescribeRequest(group_ids=["queue", "gone"],
                                                include_authorized_operations=False)
    describe.API_VERSION = 1
    assert bytes(describe.encode()) == _java("share_group_describe_request_v1")
    for v in (0, 1):
        offsets = kip932.DescribeShareGroupOffsetsRequest(groups=[
            kip932.DescribeShareGroupOffsetsRequest.Group(group_id="queue", topics=None)])
        offsets.API_VERSION = v
        assert bytes(offsets.encode()) == _java(f"describe_share_group_offsets_request_v{v}")


def test_share_partitions_with_the_lag_v1_reports_and_none_before():
    for version, lag in ((1, 250), (0, None)):
        groups = _offsets_response(version)
        assert "GroupIdNotFound" in groups["gone"]["error"]
        offsets, failed = kip932.share_offsets(groups["queue"])
        assert offsets == {("orders", 0): kip932.ShareOffset(100, 3, lag),
                           # not started: nothing known
                           ("orders", 1): kip932.ShareOffset(-1, None, None)}
        assert failed == ["orders-2: error 6 not the leader"]


def test_a_share_partition_without_state_says_nothing_as_kafkas_tool_shows_it():
    # what Kafka 4.3.1 sends for a share-partition nobody acknowledged anything of: the partition's
    # leader epoch
    group = {"topics": [{"topic_name": "t", "partitions": [
        {"partition_index": 0, "start_offset": -1, "leader_epoch": 0, "lag": -1,
         "error_code": 0}]}]}
    assert kip932.share_offsets(group) == ({("t", 0): kip932.ShareOffset(-1, None, None)}, [])


def test_share_members_hold_what_the_broker_gives_them_shared_or_not():
    groups = _describe_response()
    queue = groups["queue"]
    assert (queue["error"], queue["group_state"], queue["assignor_name"], queue["group_epoch"]) == (
        None, "Stable", "simple", 5)
    assert "GroupIdNotFound" in groups["gone"]["error"]
    members = [kip932.member_from(m, RackResolver({"c-2": "c"}, None), 5) for m in queue["members"]]
    got = [(m.member_id, m.client_id, m.host, m.rack, m.topics, m.assigned, m.member_epoch,
            m.target) for m in members]
    assert got == [
        ("s-1", "c-1", "127.0.0.1", "b", ("orders",), (("orders", 0), ("orders", 2)), 4, None),
        ("s-2", "c-2", "127.0.0.2", "c", ("orders",), (("orders", 1), ("orders", 2)), 5, None)]


OFFSETS = st.dictionaries(
    st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 5)),
    st.builds(kip932.ShareOffset, st.integers(-1, 10**6), st.none() | st.integers(0, 9),
              st.none() | st.integers(0, 2 * 10**6)))


@given(OFFSETS, st.dictionaries(st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 5)),
                                st.integers(0, 2 * 10**6)))
def test_a_lag_event_says_exactly_the_brokers_lag_or_nothing(offsets, end):
    got = kip932.positions(offsets, end)
    assert set(got) == {tp for tp, o in offsets.items()
                        if o.lag is not None and tp in end and o.lag <= end[tp]}
    for tp, committed in got.items():
        event = ev.lag_event(0, "g", tp[0], tp[1], committed, end[tp])
        assert event["end_offset"] - event["committed_offset"] == offsets[tp].lag and committed >= 0


class ShareAdmin:
    """A classic-free cluster: share group ``queue`` on topic orders (3 partitions, led by broker 1,
    end 400)."""

    def describe_cluster(self):
        return {"brokers": [{"broker_id": 1, "rack": "a"}]}

    def list_groups(self, broker_ids=None):
        return [{"group_id": "queue", "protocol_type": "share", "group_type": "Share"}]

    def list_group_offsets(self, specs):
        raise AssertionError("OffsetFetch is not asked for a share group")

    def describe_topics(self, topics):
        return [{"name": "orders", "error_code": 0, "partitions": [
            {"partition_index": p, "leader_id": 1, "replica_nodes": [1], "error_code": 0}
            for p in range(3)]}]

    def list_partition_offsets(self, specs):
        return {tp: OffsetAndTimestamp(400, -1, None) for tp in specs}

    def close(self):
        pass


def test_a_share_group_is_read_for_its_lag_and_never_given_members_to_decide_from():
    c = Collector(config.Config(), CollectorOptions(offset_reset="earliest"),
                  admin=lambda: ShareAdmin(), out=None)
    c.reader._describe_share_groups = lambda admin, ids: _describe_response()
    c.reader._share_group_offsets = lambda admin, ids: _offsets_response(1)
    evs = c.poll_once()
    snap = c.last_snapshot
    assert snap.groups["queue"].serving.kind == serving.LAG_ONLY and not snap.skipped
    assert (snap.groups["queue"].group_protocol == "share"
            and snap.groups["queue"].protocol == "simple")
    readings = [r for e in evs if e["type"] in ev.LAG_TYPES for r in ev.readings(e)]
    # partition 0: the broker's lag 250 against end 400; 1 not started, 2 unreadable: no lag event
    assert ([(r["partition"], r["committed_offset"], r["end_offset"]) for r in readings]
            == [(0, 150, 400)])
    assert {e["type"] for e in evs} == {ev.LAG_DENSE, ev.PARTITIONS}
    assert any("orders-2" in w for w in snap.warnings)

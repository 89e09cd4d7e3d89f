"""The collector over a fake admin client: partial failures stay partial, a dead cluster means
backoff."""

from __future__ import annotations

import threading

from kafka import TopicPartition
from kafka.admin import OffsetSpec
from kafka.protocol.consumer.metadata import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)
from kafka.structs import OffsetAndMetadata, OffsetAndTimestamp

from streaming import config
from streaming.collector import Collector, CollectorOptions
from streaming.contracts import events as ev


def _dict(cls, obj):
    return cls.decode(obj.encode()).to_dict()


class FakeAdmin:
    """Topic t: partitions 0, 1 led by broker 1 (rack a), 2 led by broker 2 (rack b). Group g: one
    member."""

    def __init__(self, fail_leaders=(), unreachable_calls=0):
        self.fail_leaders = set(fail_leaders)
        self.unreachable_calls = unreachable_calls
        self.closed = False
        self.committed = {0: 5, 1: 7}

    def describe_cluster(self):
        if self.unreachable_calls > 0:
            self.unreachable_calls -= 1
            raise ConnectionError("no broker answers")
        return {"brokers": [{"broker_id": 1, "rack": "a"}, {"broker_id": 2, "rack": "b"}]}

    def list_groups(self, broker_ids=None):
        return ([{"group_id": "g", "protocol_type": "consumer"},
                 {"group_id": "connect-x", "protocol_type": "connect"},
                 {"group_id": "rebalancer-trigger", "protocol_type": "consumer"}]
                if broker_ids == [1] else [])

    def describe_groups(self, ids):
        sub = _dict(ConsumerProtocolSubscription, ConsumerProtocolSubscription(0, ["t"], b""))
        asg = _dict(ConsumerProtocolAssignment,
                    ConsumerProtocolAssignment(0, [("t", [0, 1, 2])], b""))
        return {"g": {"group_state": "Stable", "protocol_type": "consumer",
                      "protocol_data": "range", "error": None,
                      "members": [{"member_id": "m", "group_instance_id": None,
                                   "client_id": "g-0-rack-b", "client_host": "/10.0.0.1",
                                   "member_metadata": sub, "member_assignment": asg}]}}

    def list_group_offsets(self, specs):
        return {"g": {TopicPartition("t", p): OffsetAndMetadata(o, "", -1)
                      for p, o in self.committed.items()}}

    def describe_topics(self, topics):
        return [{"name": "t", "error_code": 0, "partitions": [
            {"partition_index": p, "leader_id": 1 if p < 2 else 2,
             "replica_nodes": [1 if p < 2 else 2, 3], "error_code": 0} for p in range(3)]}]

    def list_partition_offsets(self, specs):
        leaders = {1 if tp.partition < 2 else 2 for tp in specs}
        if leaders & self.fail_leaders:
            raise TimeoutError("leader did not answer")
        return {tp: OffsetAndTimestamp(20 if spec == OffsetSpec.LATEST else 3, -1, None)
                for tp, spec in specs.items()}

    def close(self):
        self.closed = True


def _collector(admin, **opts):
    return Collector(config.Config(), CollectorOptions(**opts), admin=lambda: admin, out=None)


def _readings(evs):
    return [(e["partition"], e["committed_offset"], e["end_offset"], e.get("no_commit", False))
            for d in evs if d["type"] in ev.LAG_TYPES for e in ev.readings(d)]


def test_a_poll_reads_lag_members_with_rack_and_partitions_with_racks():
    c = _collector(FakeAdmin(), offset_reset="earliest")
    evs = c.poll_once()
    (dense,) = [e for e in evs if e["type"] in ev.LAG_TYPES]  # one record per group, topic and poll
    # every partition's log start offset is read (3), and rides with its reading; the record counts
    # the poll's two metadata events (members, partitions), written before it
    assert dense == ev.dense_lag_event(dense["ts"], "g", "t", [0, 1, 2], [5, 7, 3], [20, 20, 20],
                                       [False, False, True], [3, 3, 3], metadata_events=2)
    assert [e["type"] for e in evs] == ["members", "partitions", ev.LAG_DENSE]
    assert _readings(evs) == [(0, 5, 20, False), (1, 7, 20, False), (2, 3, 20, True)]
    assert c.last_stats.partitions == 3 and c.last_stats.lag_events == 1
    (members,) = [e for e in evs if e["type"] == "members"]
    assert members["members"][0]["rack"] == "b" and members["members"][0]["host"] == "10.0.0.1"
    (parts,) = [e for e in evs if e["type"] == "partitions"]
    assert ([p["replica_racks"] for p in parts["partitions"]]
            == [["a", None], ["a", None], ["b", None]])
    assert {e["group"] for e in evs} == {"g"}  # connect and the rebalancer's own groups are skipped


class ZooAdmin(FakeAdmin):
    """FakeAdmin's group g beside a share group and a Connect worker group."""

    def list_groups(self, broker_ids=None):
        return ([{"group_id": "g", "protocol_type": "consumer", "group_type": "Classic"},
                 {"group_id": "connect-x", "protocol_type": "connect", "group_type": "Classic"},
                 {"group_id": "sh", "protocol_type": "share", "group_type": "Share"}]
                if broker_ids == [1] else [])


def test_skipped_groups_are_said_with_their_reason_once(caplog):
    c = _collector(ZooAdmin())
    c.reader._describe_share_groups = lambda admin, ids: {
        "sh": {"error": None, "group_state": "Empty", "assignor_name": "simple", "members": []}}
    c.reader._share_group_offsets = lambda admin, ids: {"sh": {"error": None, "topics": []}}
    with caplog.at_level("INFO", logger="streaming.collector.poll"):
        evs = c.poll_once()
        c.poll_once()
    assert {e["group"] for e in evs} == {"g"}
    skipped = c.last_snapshot.skipped
    assert {g: v.kind for g, v in skipped.items()} == {"connect-x": "not_read"}
    assert "protocol type connect" in skipped["connect-x"].reason
    said = [r.getMessage() for r in caplog.records if "not read" in r.getMessage()]
    assert [m.split(":")[0] for m in said] == ["group connect-x not read"]  # once
    assert c.last_snapshot.groups["g"].serving.kind == "unapplied"  # range: published, not applied
    assert c.last_snapshot.groups["sh"].serving.kind == "lag_only"  # read: no members, no lag yet


def test_lag_form_partition_writes_the_same_readings_one_event_per_partition():
    c = _collector(FakeAdmin(), offset_reset="earliest", lag_form="partition")
    evs = [e for e in c.poll_once() if e["type"] in ev.LAG_TYPES]
    assert [e["type"] for e in evs] == [ev.LAG] * 3
    assert _readings(evs) == [(0, 5, 20, False), (1, 7, 20, False), (2, 3, 20, True)]
    assert c.last_stats.partitions == 3 and c.last_stats.lag_events == 3


def test_a_leader_that_does_not_answer_leaves_only_its_partitions_out():
    c = _collector(FakeAdmin(fail_leaders={2}))
    evs = c.poll_once()
    assert [r[0] for r in _readings(evs)] == [0, 1]
    assert c.last_stats.warnings >= 1
    assert c.reader._dirty  # the next poll starts with a fresh admin client


def test_an_unreachable_cluster_means_backoff_not_a_crash():
    admin = FakeAdmin(unreachable_calls=2)
    lines = []
    c = _collector(admin, max_backoff_s=0.01, interval_s=0.01)
    c.out = None
    c._say = lines.append
    got = []
    c.sink = got.extend
    assert c.run(polls=2, stop=threading.Event()) == len(got) > 0
    assert sum("unreachable" in ln for ln in lines) == 2
    assert [ln.split(":")[0] for ln in lines if "groups" in ln] == ["poll 3", "poll 4"]


def test_a_failed_publish_forces_a_full_refresh():
    c = _collector(FakeAdmin(), max_backoff_s=0.01, interval_s=0.01)
    calls = []

    def flaky(evs):
        calls.append([e["type"] for e in evs])
        if len(calls) == 1:
            raise TimeoutError("broker down")

    c.sink = flaky
    c._say = lambda line: None
    c.run(polls=1)
    assert "members" in calls[0] and "members" in calls[1]  # not lost with the failed batch


def test_the_members_own_load_rides_in_the_members_event_and_sends_it_again():
    from streaming.collector.member_load import FRESH_S, LoadReports
    from tests.unit.streaming.collector.test_member_load import FakeConsumer, rep

    consumer = FakeConsumer()
    c = Collector(config.Config(), CollectorOptions(), admin=lambda: FakeAdmin(), out=None,
                  loads=LoadReports(lambda: consumer, "rebalancer.member-load"))
    first = [e for e in c.poll_once() if e["type"] == "members"]
    assert first and all("load" not in m for e in first for m in e["members"])
    (member,) = first[0]["members"]
    consumer.queued = [rep(member["client_id"], None, 1, busy=0.8)]
    (again,) = [e for e in c.poll_once() if e["type"] == "members"]  # same members, a report
    assert again["generation"] == first[0]["generation"]
    assert again["members"][0]["load"] == {"ts": again["ts"], "busy": 0.8, "records_per_s": 40.0}
    assert not [e for e in c.poll_once() if e["type"] == "members"]  # nothing new: nothing sent
    c.loads._seen["g"] = {k: (r, at - int(FRESH_S * 1000) - 1)  # the report grows stale
                          for k, (r, at) in c.loads._seen["g"].items()}
    (stale,) = [e for e in c.poll_once() if e["type"] == "members"]
    assert "load" not in stale["members"][0]

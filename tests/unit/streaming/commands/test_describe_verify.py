"""describe's rendering and verify's decision on hand-made snapshots (no Kafka): each status and its
reason, members found as the apply helpers find them, KIP-848 epochs."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from assignors.model import Member
from streaming.collector.cluster_snapshot import ClusterSnapshot, GroupInfo
from streaming.collector.observed import ObservedMember
from streaming.commands import describe, verify
from streaming.operator_view import groups as view
from streaming.operator_view import sentences
from tests.integration.java_client import parse_table

NOW = 1_800_000_000.0


def _snap(owners: dict[str, list[int]], state: str = "Stable",
          epoch: int | None = None) -> ClusterSnapshot:
    members = [ObservedMember(Member(f"{c}-{'0' * 8}-0000-0000-0000-{'0' * 12}", ("t",), None, "a",
                                     tuple(("t", p) for p in ps), client_id=c), "10.0.0.1")
               for c, ps in owners.items()]
    parts = [{"partition_index": p, "leader_id": 1, "replica_nodes": [1]} for p in range(4)]
    return ClusterSnapshot(ts=0, groups={"g": GroupInfo("g", state, "range", members, epoch=epoch)},
                           committed={"g": {("t", p): 1 for p in range(4)}}, topics={"t": parts},
                           broker_racks={1: "a"}, end={("t", p): 5 for p in range(4)})


def _rec(owners: dict[str, list[int]], age_s: float, generation: int = 3) -> dict:
    # the recommendation names members by client id only (as after a restart: member ids changed)
    return {"version": 2, "recommendation_id": "r", "generation": generation,
            "triggers": ["lag_skew"], "event_time": dt.datetime.fromtimestamp(NOW - age_s),
            "assignment": [{"member_id": f"old-{c}", "instance_id": None, "client_id": c,
                            "rack": "a", "partitions": [{"topic": "t", "partition": p} for p in ps]}
                           for c, ps in owners.items()]}


def test_statuses():
    live = {"c0": [0, 1], "c1": [2, 3]}
    other = {"c0": [0, 2], "c1": [1, 3]}
    assert verify.verify(_snap(live), "g", None, 120, NOW)["status"] == "none"
    assert verify.verify(_snap(live), "g", _rec(live, 10), 120, NOW)["status"] == "applied"
    assert verify.verify(_snap(live), "g", _rec(other, 10), 120, NOW)["status"] == "pending"
    assert verify.verify(_snap(live, "PreparingRebalance"), "g", _rec(other, 900), 120,
                         NOW)["status"] == "pending"
    r = verify.verify(_snap(live), "g", _rec(other, 900), 120, NOW)
    assert r["status"] == "diverged"
    assert r["differences"] == [{"partition": "t-1", "now": "c0", "recommended": "c1"},
                                {"partition": "t-2", "now": "c1", "recommended": "c0"}]
    assert "t-1  on c0, recommended c1" in verify.render(r)
    r = verify.verify(_snap(live), "g", _rec({"c0": [0, 1], "c9": [2, 3]}, 10), 120, NOW)
    assert r["status"] == "superseded" and "c9" in r["reason"]
    assert verify.EXIT[r["status"]] == 5


def test_kip848_epoch_decides_pending_or_diverged():
    live, other = {"c0": [0, 1], "c1": [2, 3]}, {"c0": [0, 2], "c1": [1, 3]}
    assert (verify.verify(_snap(live, epoch=3), "g", _rec(other, 900, 3), 120, NOW)["status"]
            == "pending")
    assert (verify.verify(_snap(live, epoch=4), "g", _rec(other, 1, 3), 120, NOW)["status"]
            == "diverged")


def test_describe_table_parses_like_kafka_consumer_groups_output():
    snap = _snap({"c0": [0, 1], "c1": [2]})
    rows = view.partition_rows(snap, "g", {("t", 0): "m"})
    text = describe.render([{"group": "g", "state": "Stable", "group_protocol": "classic",
                             "assignor": "range", "recommendation_version": 2,
                             "partitions": [r.as_dict() for r in rows], "members": []}],
                           members=False)
    parsed = parse_table(text)
    assert [(r["PARTITION"], r["CONSUMER-ID"] != "", r["CROSS-RACK"], r["RECOMMENDED-OWNER"])
            for r in parsed] == [
        ("0", True, "no", "m"), ("1", True, "no", ""), ("2", True, "no", ""), ("3", False, "", "")]
    assert text.splitlines()[0] == "Consumer group 'g' (Stable, classic, range, recommendation v2)"


def test_lag_seconds_from_the_record_at_each_committed_offset(monkeypatch):
    import time

    from streaming.commands import live_read

    snap = _snap({"c0": [0, 1], "c1": [2]})
    snap.groups["h"] = GroupInfo("h", "Stable", "range", [])
    snap.committed = {"g": {("t", 0): 10, ("t", 1): 50, ("t", 2): 5}, "h": {("t", 0): 30}}
    snap.end = {("t", 0): 60, ("t", 1): 50, ("t", 2): 45}
    now_ms = time.time() * 1000
    asked: list = []

    def record_times(cfg, wanted, timeout_s):
        asked.extend(wanted)
        # t-0 at 10 written 90 s ago, at 30 (group h) 30 s ago; t-2 not read in time; a clock ahead:
        # 1 ms
        return {(("t", 0), 10): now_ms - 90_000, (("t", 0), 30): now_ms - 30_000,
                (("t", 9), 1): now_ms}

    monkeypatch.setattr(live_read, "record_times", record_times)
    seconds = describe.lag_seconds(None, snap, 5.0)
    # only partitions with lag
    assert sorted(asked) == [(("t", 0), 10), (("t", 0), 30), (("t", 2), 5)]
    assert seconds["g"][("t", 0)] == pytest.approx(90, abs=1) and ("t", 2) not in seconds["g"]
    assert seconds["h"][("t", 0)] == pytest.approx(30, abs=1)
    rows = view.partition_rows(snap, "g", None, seconds["g"])
    assert [r.lag_seconds for r in rows][:3] == [seconds["g"][("t", 0)], 0.0, None]
    members = view.member_rows(snap, "g", rows)
    # c1's only lag was not read
    assert [m.lag_seconds for m in members] == [seconds["g"][("t", 0)], None]
    text = describe.render([{"group": "g", "state": "Stable", "group_protocol": "classic",
                             "assignor": "range", "recommendation_version": None,
                             "partitions": [r.as_dict() for r in rows],
                             "members": [m.as_dict() for m in members]}], members=True)
    assert [r["LAG-SECONDS"] for r in parse_table(text)] == [f"{seconds['g'][('t', 0)]:.1f}", ""]


def test_partitions_wanted_at_several_offsets_are_read_in_rounds():
    from streaming.commands import live_read

    assert live_read.read_rounds([(("t", 0), 5), (("t", 1), 7), (("t", 0), 9), (("t", 0), 5)]) == [
        {("t", 0): 5, ("t", 1): 7}, {("t", 0): 9}]


def test_members_show_the_capacity_the_latest_recommendation_was_made_with():
    snap = _snap({"c0": [0, 1], "c1": [2], "c2": [3]})
    c0 = snap.groups["g"].members[0].member_id
    # c0 by its member id; c1 rejoined since (found by client id); c2 not in it
    rec = {"member_capacity": [
        {"member_id": c0, "client_id": "c0", "records_per_s": 500.0, "confidence_s": 30.0,
         "measured": True},
        {"member_id": "old-c1", "client_id": "c1", "records_per_s": 250.0, "confidence_s": 0.0,
         "measured": False}]}
    rows = view.partition_rows(snap, "g", None)
    members = view.member_rows(snap, "g", rows, view.recommended_capacity(rec))
    assert ([(m.capacity, m.capacity_confidence_s) for m in members]
            == [(500.0, 30.0), (250.0, 0.0), (None, None)])
    text = describe.render([{"group": "g", "state": "Stable", "group_protocol": "classic",
                             "assignor": "range", "recommendation_version": 2, "partitions": [],
                             "members": [m.as_dict() for m in members]}],
                           members=True)
    assert [(r["CAPACITY"], r["CONFIDENCE-S"]) for r in parse_table(text)] == [
        ("500.0", "30.0"), ("250.0", "0.0"), ("", "")]


def test_describe_says_whether_rack_placement_saves_anything():
    # one replica on broker 1 (rack a); both members on rack a
    snap = _snap({"c0": [0, 1], "c1": [2]})
    rows = view.partition_rows(snap, "g", None)
    members = view.member_rows(snap, "g", rows)
    found = describe.rack_placement(rows, members, True)
    assert (found["verdict"], found["follower_fetching"]) == ("saves-nothing", True)
    assert describe.rack_placement(rows, members, None)["verdict"] == "unknown"
    snap.broker_racks = {1: "b"}  # the only replica on another rack than the members'
    rows = view.partition_rows(snap, "g", None)
    found = describe.rack_placement(rows, members, True)
    assert (found["verdict"], found["decided"], found["partitions"]) == ("decides", 4, 4)
    text = describe.render([{"group": "g", "state": "Stable", "group_protocol": "classic",
                             "assignor": "range", "recommendation_version": None,
                             "rack_placement": found, "partitions": [r.as_dict() for r in rows],
                             "members": []}], members=False)
    assert text.splitlines()[1] == (
        "Rack placement: 4 of 4 partitions lack a replica on some of the 1 member rack "
        "(follower fetching on): placement decides cross-rack reads")
    assert len(parse_table(text)) == 4


def test_describe_names_the_slow_members_of_the_latest_recommendation():
    slow = {"member_id": "C1", "client_id": "c-C1", "records_per_s": 60.0,
            "peers_records_per_s": 150.0}
    rec = {"version": 3, "trigger_details": json.dumps({"lag_skew": {"slow_members": [slow]}})}
    says = sentences.slow_says(rec)
    assert sentences.slow_members(rec) == [slow] and says == [
        "C1 (c-C1) read 60.0/s, its peers 150.0/s: over its capacity when recommendation v3 gave "
        "it less to read"]
    # the skew was the partitions', another trigger, no recommendation yet
    assert sentences.slow_says({"version": 4, "trigger_details": '{"lag_skew": {}}'}) == []
    assert sentences.slow_says({"version": 5, "trigger_details": None}) == []
    assert sentences.slow_says(None) == []
    rows = view.partition_rows(_snap({"c0": [0, 1], "c1": [2, 3]}), "g", None)
    text = describe.render([{"group": "g", "state": "Stable", "group_protocol": "classic",
                             "assignor": "range", "recommendation_version": 3, "slow_says": says,
                             "partitions": [r.as_dict() for r in rows], "members": []}],
                           members=False)
    assert text.splitlines()[1] == "Slow member: " + says[0]
    assert len(parse_table(text)) == 4


def test_follower_fetching_is_read_from_every_brokers_selector(monkeypatch):
    from assignors.rack_placement import RACK_AWARE_SELECTOR
    from streaming.collector import collector
    from streaming.commands import live_read

    class Admin:
        def __init__(self, values):
            self.values, self.asked, self.closed = values, None, False

        def describe_configs(self, resources, config_filter):
            self.asked = ([(r.name, r.configs) for r in resources], config_filter)
            if self.values is None:
                raise PermissionError("no DescribeConfigs on the cluster")
            return {"broker": {str(i): {"replica.selector.class": {"value": v}}
                               for i, v in self.values.items()}}

        def close(self):
            self.closed = True

    for values, want in (({0: RACK_AWARE_SELECTOR, 1: RACK_AWARE_SELECTOR}, True),
                         ({0: None, 1: None}, False), ({0: RACK_AWARE_SELECTOR, 1: None}, None),
                         ({0: RACK_AWARE_SELECTOR}, None), (None, None)):
        admin = Admin(values)
        monkeypatch.setattr(collector, "admin_factory", lambda cfg, a=admin: lambda: a)
        assert live_read.follower_fetching(None, {1: "b", 0: "a"}) is want
        assert admin.asked == ([("0", ["replica.selector.class"]),
                                ("1", ["replica.selector.class"])], "all")
        assert admin.closed
    assert live_read.follower_fetching(None, {}) is None


def test_verify_says_why_a_group_it_does_not_read_has_no_recommendation(monkeypatch, capsys):
    import json

    from streaming.cli import main
    from streaming.commands import live_read
    from streaming.contracts import serving

    found = serving.verdict("share", "share", None)
    monkeypatch.setattr(live_read, "read", lambda cfg, args, group=None, groups=None:
                        ClusterSnapshot(ts=0, skipped={"sh": found}))
    assert main(["verify", "sh", "--bootstrap", "127.0.0.1:9"]) == 6
    assert (capsys.readouterr().out
            == f"Group sh: the collector does not read this group: {found.reason}.\n")
    assert main(["verify", "sh", "--bootstrap", "127.0.0.1:9", "--format", "json"]) == 6
    got = json.loads(capsys.readouterr().out)
    assert (got["status"], got["state"], got["version"]) == ("none", None, None)


def _share_snap() -> ClusterSnapshot:
    """Share group q: two share consumers both given partition 1; partition 0's lag reported, 2 not
    started."""
    from streaming.collector import kip932

    members = [ObservedMember(Member(mid, ("t",), None, None, tuple(("t", p) for p in ps),
                                     client_id=c), "10.0.0.1", member_epoch=e)
               for mid, c, ps, e in (("m1", "c1", [0, 1], 3), ("m2", "c0", [1], 4))]
    offsets = {("t", 0): kip932.ShareOffset(10, 2, 30),
               ("t", 2): kip932.ShareOffset(-1, None, None)}
    parts = [{"partition_index": p, "leader_id": 1, "replica_nodes": [1]} for p in range(3)]
    return ClusterSnapshot(ts=0,
                           groups={"q": GroupInfo("q", "Stable", "simple", members, "share", 4,
                                                  protocol_type="share")},
                           committed={"q": {("t", 0): 20}}, share_offsets={"q": offsets},
                           topics={"t": parts}, broker_racks={1: "a"},
                           end={("t", p): 50 for p in range(3)})


def test_a_share_group_is_described_as_kafka_share_groups_shows_it():
    snap = _share_snap()
    g = describe.share_group(snap, "q")
    assert g["serving"]["kind"] == "lag_only" and not g["serving"]["published"]
    text = describe.render([g], members=False)
    assert text.splitlines()[:2] == ["Share group 'q' (Stable, share, simple)",
                                     f"Recommendations: lag-only: {g['serving']['reason']}"]
    assert parse_table(text) == [
        {"GROUP": "q", "TOPIC": "t", "PARTITION": "0", "LEADER-EPOCH": "2", "START-OFFSET": "10",
         "LAG": "30", "LOG-END-OFFSET": "50"},
        {"GROUP": "q", "TOPIC": "t", "PARTITION": "2", "LEADER-EPOCH": "", "START-OFFSET": "",
         "LAG": "", "LOG-END-OFFSET": "50"}]
    members = parse_table(describe.render([g], members=True))
    assert [(r["CLIENT-ID"], r["#PARTITIONS"], r["MEMBER-EPOCH"], r["ASSIGNMENT"])
            for r in members] == [
        ("c0", "1", "4", "t:1"), ("c1", "2", "3", "t:0,1")]


def test_no_member_owns_a_share_partition_in_the_figures():
    snap = _share_snap()
    rows = view.partition_rows(snap, "q")
    assert [(r.partition, r.lag, r.consumer_id) for r in rows] == [(0, 30, None)]
    f = view.figures(snap, "q", rows)
    assert (f.members, f.lag_by_topic, f.max_member_lag) == (2, {"t": 30}, 0)


def test_an_assignment_cell_is_the_kafka_tools():
    assert describe.assignment_cell([["u", 1], ["t", 2], ["t", 0]]) == "t:0,2;u:1"
    assert describe.assignment_cell([]) == "-"


# -- KIP-848 detail --------------------------------------------------------------------------------

def test_a_member_converges_until_its_epoch_and_partitions_are_the_targets():
    from streaming.collector.kip848 import converging

    held = [("t", 0), ("t", 1)]
    assert converging(5, 5, held, held) is False
    assert converging(4, 5, held, held) is True  # its epoch is behind the target assignment's
    assert converging(5, 5, held, held[:1]) is True  # still to revoke t-1
    assert converging(5, 5, held[:1], held) is True  # still to get t-1
    assert converging(None, 5, held, None) is None  # a classic member


def test_describe_shows_a_kip848_groups_epochs_and_who_is_converging():
    snap = _snap({"c0": [0, 1], "c1": [2, 3]})
    info = snap.groups["g"]
    info.group_protocol, info.epoch, info.assignment_epoch = "consumer", 7, 7
    c0, c1 = info.members
    info.members = [ObservedMember(c0.member, c0.host, 7, member_epoch=7, target=c0.assigned),
                    ObservedMember(c1.member, c1.host, 7, member_epoch=6, target=(("t", 2),))]
    rows = view.partition_rows(snap, "g")
    members = [m.as_dict() for m in view.member_rows(snap, "g", rows)]
    assert [(m["member_epoch"], m["converging"]) for m in members] == [(7, False), (6, True)]
    group = {"group": "g", "state": "Stable", "group_protocol": "consumer", "assignor": "uniform",
             "recommendation_version": None, "group_epoch": 7, "target_assignment_epoch": 7,
             "partitions": [r.as_dict() for r in rows], "members": members}
    text = describe.render([group], members=True)
    assert text.splitlines()[0] == (
        "Consumer group 'g' (Stable, consumer, uniform, group epoch 7, target assignment "
        "epoch 7, 1 of 2 members converging)")
    assert [(r["CLIENT-ID"], r["CURRENT-EPOCH"], r["TARGET-EPOCH"], r["CONVERGING"])
            for r in parse_table(text)] == [
        ("c0", "7", "7", "no"), ("c1", "6", "7", "yes")]
    # a classic group keeps kafka-consumer-groups' columns alone
    classic = describe.render([group | {"group_protocol": "classic", "group_epoch": None}],
                              members=True)
    assert "CURRENT-EPOCH" not in classic and "converging" not in classic

"""Whether rack placement saves anything: the module docstring's worked example and the edge
cases."""

from __future__ import annotations

from assignors import rack_placement
from assignors.model import GroupSnapshot, Member

RACKS = ("a", "b", "c")
THREE = [("a", "b", "c")] * 12
ONE = [("abc"[p % 3],) for p in range(12)]


def test_worked_example():
    assert rack_placement.placement(THREE, RACKS, True).verdict == rack_placement.SAVES_NOTHING
    assert rack_placement.placement(THREE, RACKS, None).verdict == rack_placement.UNKNOWN
    off = rack_placement.placement(THREE, RACKS, False)
    assert (off.verdict, off.decided, off.partitions) == (rack_placement.DECIDES, 12, 12)
    for ff in (True, None, False):
        one = rack_placement.placement(ONE, RACKS, ff)
        assert (one.verdict, one.decided) == (rack_placement.DECIDES, 12)
    assert "rack placement saves nothing" in rack_placement.placement(THREE, RACKS, True).sentence()
    assert rack_placement.placement(ONE, RACKS, True).sentence().startswith(
        "12 of 12 partitions lack a replica")


def test_no_racks_and_partial_racks():
    assert rack_placement.placement(THREE, (None, None), True).verdict == rack_placement.NO_RACKS
    assert rack_placement.placement([(None,), ()], RACKS, True).verdict == rack_placement.NO_RACKS
    # two replicas over the members' racks a and b (c has no member): every member reads locally
    assert (rack_placement.placement([("a", "b")] * 4, ("a", "b", None), True).verdict
            == rack_placement.SAVES_NOTHING)
    # one partition of four on two racks only, with members on three
    mixed = rack_placement.placement([("a", "b", "c")] * 3 + [("a", "b")], RACKS, True)
    assert (mixed.verdict, mixed.decided, mixed.partitions) == (rack_placement.DECIDES, 1, 4)


def test_of_snapshot_reads_subscribed_partitions_and_member_racks():
    members = tuple(Member(f"m{i}", ("t",), rack=r) for i, r in enumerate(RACKS))
    s = GroupSnapshot(topics={"t": 12, "other": 2}, members=members,
                      replica_racks={"t": THREE, "other": [("a",), ("a",)]})
    # "other" is subscribed by nobody
    assert rack_placement.of_snapshot(s, True).verdict == rack_placement.SAVES_NOTHING
    s1 = GroupSnapshot(topics={"t": 12}, members=members, replica_racks={"t": ONE})
    assert rack_placement.of_snapshot(s1, True).verdict == rack_placement.DECIDES
    no_racks = GroupSnapshot(topics={"t": 12}, members=members)
    assert rack_placement.of_snapshot(no_racks, True).verdict == rack_placement.NO_RACKS


def test_follower_fetching_from_the_brokers_selector_class():
    on = rack_placement.RACK_AWARE_SELECTOR
    assert rack_placement.follower_fetching([on, on, on]) is True
    assert rack_placement.follower_fetching([None, "", None]) is False
    # a mix: some leaders serve every fetch
    assert rack_placement.follower_fetching([on, None]) is None
    assert rack_placement.follower_fetching(["com.example.MySelector"]) is None
    assert rack_placement.follower_fetching([]) is None

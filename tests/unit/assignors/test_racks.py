"""Whether rack placement saves anything: the module docstring's worked example and the edge cases."""

from __future__ import annotations

from assignors import racks
from assignors.model import GroupSnapshot, Member

RACKS = ("a", "b", "c")
THREE = [("a", "b", "c")] * 12
ONE = [("abc"[p % 3],) for p in range(12)]


def test_worked_example():
    assert racks.placement(THREE, RACKS, True).verdict == racks.SAVES_NOTHING
    assert racks.placement(THREE, RACKS, None).verdict == racks.UNKNOWN
    off = racks.placement(THREE, RACKS, False)
    assert (off.verdict, off.decided, off.partitions) == (racks.DECIDES, 12, 12)
    for ff in (True, None, False):
        one = racks.placement(ONE, RACKS, ff)
        assert (one.verdict, one.decided) == (racks.DECIDES, 12)
    assert "rack placement saves nothing" in racks.placement(THREE, RACKS, True).sentence()
    assert racks.placement(ONE, RACKS, True).sentence().startswith("12 of 12 partitions lack a replica")


def test_no_racks_and_partial_racks():
    assert racks.placement(THREE, (None, None), True).verdict == racks.NO_RACKS
    assert racks.placement([(None,), ()], RACKS, True).verdict == racks.NO_RACKS
    # two replicas over the members' racks a and b (c has no member): every member reads locally
    assert racks.placement([("a", "b")] * 4, ("a", "b", None), True).verdict == racks.SAVES_NOTHING
    # one partition of four on two racks only, with members on three
    mixed = racks.placement([("a", "b", "c")] * 3 + [("a", "b")], RACKS, True)
    assert (mixed.verdict, mixed.decided, mixed.partitions) == (racks.DECIDES, 1, 4)


def test_of_snapshot_reads_subscribed_partitions_and_member_racks():
    members = tuple(Member(f"m{i}", ("t",), rack=r) for i, r in enumerate(RACKS))
    s = GroupSnapshot(topics={"t": 12, "other": 2}, members=members,
                      replica_racks={"t": THREE, "other": [("a",), ("a",)]})
    assert racks.of_snapshot(s, True).verdict == racks.SAVES_NOTHING  # "other" is subscribed by nobody
    s1 = GroupSnapshot(topics={"t": 12}, members=members, replica_racks={"t": ONE})
    assert racks.of_snapshot(s1, True).verdict == racks.DECIDES
    assert racks.of_snapshot(GroupSnapshot(topics={"t": 12}, members=members), True).verdict == racks.NO_RACKS


def test_follower_fetching_from_the_brokers_selector_class():
    on = racks.RACK_AWARE_SELECTOR
    assert racks.follower_fetching([on, on, on]) is True
    assert racks.follower_fetching([None, "", None]) is False
    assert racks.follower_fetching([on, None]) is None  # a mix: some leaders serve every fetch
    assert racks.follower_fetching(["com.example.MySelector"]) is None
    assert racks.follower_fetching([]) is None

"""The change detectors of the state: membership, rack set, stuck partitions (pure functions)."""

from __future__ import annotations

from assignors.model import Member
from streaming.state import changes, stuck


def test_pieces():
    assert stuck.is_stuck([[1, 5, 9], [2, 5, 10], [3, 5, 12]], 3)
    assert not stuck.is_stuck([[1, 5, 9], [2, 6, 10], [3, 6, 12]], 3)
    assert not stuck.is_stuck([[1, 5, 5], [2, 5, 5], [3, 5, 5]], 3)  # no lag: idle, not stuck
    assert changes.rack_changes([["a", "b"]], [["b", "a"]]) == []
    assert changes.member_identity(Member("m", ("t",), instance_id="i")) == "instance:i"

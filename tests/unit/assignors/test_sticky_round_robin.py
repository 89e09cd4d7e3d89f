"""The constrained builder's bulk whole passes hand out exactly what Kafka's one-at-a-time round
robin does.

:meth:`ConstrainedBuilder._whole_passes` deals whole passes of free partitions to the members below
quota in bulk; the loop of :meth:`ConstrainedBuilder.assign_round_robin` after it is the literal
transcription of Kafka's iterator. With the bulk step switched off every partition goes through that
loop, which makes it the reference: on random equal-subscription groups (owned partitions,
generations, partitions claimed twice, racks) both give the same lists in the same order and the
same transferring partitions in the same order, or fail alike. The bulk step deals wide passes row
by row (blocks of rows, each member's share made at once); with its width threshold lowered, small
groups take that way too.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from assignors.model import GroupSnapshot, Member
from assignors.model import TopicPartition as TP
from assignors.sticky.constrained import ConstrainedBuilder
from assignors.sticky.errors import StickyAssignmentError
from assignors.sticky.inputs import GroupInput
from assignors.sticky.partition_ids import FreeRuns

RACKS = ("a", "b", "c")


class OneAtATime(ConstrainedBuilder):
    """The constrained builder without its bulk step: every free partition through the iterator
    loop."""

    def _whole_passes(self, free: FreeRuns) -> None:
        return None


class RowsAlways(ConstrainedBuilder):
    """The constrained builder dealing every whole pass row by row, in blocks of two rows, with
    generation-1 collections held off (as in a large deal)."""

    ROWS_MIN_WIDTH = 1
    ROWS_PER_BLOCK = 2
    HOLD_FROM = 0


@st.composite
def equal_groups(draw: Any) -> GroupSnapshot:
    topics = {f"t{i}": draw(st.integers(0, 60)) for i in range(draw(st.integers(1, 6)))}
    every = [(t, p) for t, n in topics.items() for p in range(n)]
    subscribed = tuple(draw(st.lists(st.sampled_from(list(topics)), min_size=1, unique=True)))
    with_racks = draw(st.booleans())
    members = []
    for i in range(draw(st.integers(1, 12))):
        owned = draw(st.lists(st.sampled_from(every), unique=True, max_size=30)) if every else []
        generation = draw(st.sampled_from((None, 1, 2, 2))) if owned else None
        rack = draw(st.sampled_from((*RACKS, None))) if with_racks else None
        members.append(Member(member_id=f"c{i}", topics=subscribed, owned=tuple(owned),
                              generation=generation, rack=rack))
    replica_racks = None
    if with_racks:
        replica_racks = {t: [tuple(draw(st.lists(st.sampled_from(RACKS), min_size=1, max_size=2,
                                                 unique=True))) for _ in range(n)]
                         for t, n in topics.items()}
    return GroupSnapshot(topics=topics, members=tuple(members), replica_racks=replica_racks)


def outcome(builder: type[ConstrainedBuilder], snapshot: GroupSnapshot, prefer: bool) -> Any:
    group = GroupInput(snapshot, prefer)
    reconciled = group.reconcile_owned()
    assert reconciled.equal_subscriptions
    try:
        assignment, transferring = builder(group, reconciled).build()
    except StickyAssignmentError as e:
        return str(e)
    return list(assignment.items()), list(transferring.items())


@settings(max_examples=300, deadline=None)
@given(equal_groups(), st.booleans())
def test_property_bulk_passes_equal_the_one_at_a_time_round_robin(
        snapshot: GroupSnapshot, prefer: bool) -> None:
    assert outcome(ConstrainedBuilder, snapshot, prefer) == outcome(OneAtATime, snapshot, prefer)


@settings(max_examples=300, deadline=None)
@given(equal_groups(), st.booleans())
def test_property_passes_dealt_by_rows_equal_the_one_at_a_time_round_robin(snapshot: GroupSnapshot,
                                                                           prefer: bool) -> None:
    assert outcome(RowsAlways, snapshot, prefer) == outcome(OneAtATime, snapshot, prefer)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 7), max_size=6), st.booleans(),
       st.lists(st.integers(0, 9), max_size=8))
def test_property_free_runs_hand_out_their_partitions_in_order(counts: list[int], made: bool,
                                                               takes: list[int]) -> None:
    expected = [(f"t{k}", p) for k, n in enumerate(counts) for p in range(n)]
    runs: list[tuple[str | None, list[Any]]] = [(f"t{k}", list(range(n)))
                                                for k, n in enumerate(counts)]
    free = FreeRuns([(None, list(expected))] if made else runs)
    got: list[TP] = []
    for n in takes:
        n = min(n, len(free))
        got.extend(free.take(n))
        assert len(free) == len(expected) - len(got)
    got.extend(free)
    assert got == expected and len(free) == 0


def test_reference_runs_every_partition_through_the_loop() -> None:
    """The reference really skips the bulk step: on a fresh group the bulk step alone would fill
    everyone."""
    snapshot = GroupSnapshot(topics={"t": 6}, members=(Member("a", ("t",)), Member("b", ("t",))))
    group = GroupInput(snapshot, False)
    builder = OneAtATime(group, group.reconcile_owned())
    builder.keep_owned()
    builder._whole_passes(builder.free_partitions())
    assert builder.assignment == {"a": [], "b": []}
    assert outcome(OneAtATime, snapshot, False)[0] == [("a", [("t", 0), ("t", 2), ("t", 4)]),
                                                       ("b", [("t", 1), ("t", 3), ("t", 5)])]

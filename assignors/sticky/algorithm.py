"""``sticky_assign``: Kafka's AbstractStickyAssignor.assignPartitions, for both sticky assignors.

It reconciles what members own (:mod:`assignors.sticky.inputs`), then runs the constrained builder
when every member subscribes alike (:mod:`assignors.sticky.constrained`) and the general builder
otherwise (:mod:`assignors.sticky.general`).
"""

from __future__ import annotations

from assignors.model import GroupSnapshot, TopicPartition
from assignors.sticky.constrained import ConstrainedBuilder
from assignors.sticky.errors import StickyAssignmentError
from assignors.sticky.general import GeneralBuilder
from assignors.sticky.inputs import GroupInput

TP = TopicPartition


def sticky_assign(snapshot: GroupSnapshot, prefer_rack_aware_logic: bool = False,
                  kafka_bugs: bool = False) -> tuple[dict[str, list[TP]], dict[TP, str] | None]:
    """Kafka's AbstractStickyAssignor on ``snapshot``.

    Returns the assignment (every member, in snapshot order) before any cooperative adjustment, and
    the partitions transferring ownership as the constrained builder records them (``None`` when the
    general builder ran: Kafka leaves that map to the cooperative assignor to work out).

    The general builder always follows Kafka's moves first, including Kafka's one known defect: a
    partition goes back to the member that owned it in an older generation even when that member no
    longer subscribes to its topic. Usually a later move takes it on to a subscriber and the result
    is Kafka's, bit for bit. When it stays with the non-subscriber (an invalid assignment), or Kafka
    would fail (that member holds only unmovable partitions: a NullPointerException), the builder
    runs again skipping such owners, which keeps the assignment valid. ``kafka_bugs=True`` returns
    Kafka's outcome instead, invalid or failing.
    """
    if not snapshot.members:
        return {}, {}
    group = GroupInput(snapshot, prefer_rack_aware_logic)
    reconciled = group.reconcile_owned()
    if reconciled.equal_subscriptions:
        result, transferring = ConstrainedBuilder(group, reconciled).build()
    else:
        transferring = None
        try:
            builder = GeneralBuilder(group, reconciled.owned, reconciled.max_generation,
                                     kafka_bugs=True)
            result = builder.build()
            valid = builder.foreign == 0
        except StickyAssignmentError:
            if kafka_bugs:
                raise
            valid = False
        if not valid and not kafka_bugs:
            # the build consumed the owned lists: reconcile again (rare, so cheaper than copying up
            # front)
            again = group.reconcile_owned()
            result = GeneralBuilder(group, again.owned, again.max_generation,
                                    kafka_bugs=False).build()
    return {m.member_id: result[m.member_id] for m in snapshot.members}, transferring

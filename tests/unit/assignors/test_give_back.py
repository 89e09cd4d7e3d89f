"""One step of giving load back to a member that recovered (:mod:`assignors.give_back`), drawn from
the rule's contract: any rates (0 and broken ones too), capacities, owners, stuck partitions and
subscriptions, any target and share."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from assignors.give_back import give_back
from assignors.model import GroupSnapshot, Member
from assignors.utilisation import member_utilisation

SLACK = 1e-6


@st.composite
def groups(draw) -> tuple[GroupSnapshot, dict, str, float, float]:
    """Two topics of up to 8 partitions each; up to 4 members, the recipient subscribed to ``a``
    and maybe ``b``; every partition owned by a member subscribed to its topic."""
    sizes = {"a": draw(st.integers(1, 8)), "b": draw(st.integers(0, 8))}
    n = draw(st.integers(2, 4))
    topics = [("a", "b") if i else draw(st.sampled_from([("a",), ("a", "b")]))
              for i in range(n)]
    rate = st.one_of(st.just(0.0), st.just(math.nan), st.just(-1.0), st.floats(0.1, 500.0))
    current: dict[str, list] = {f"m{i}": [] for i in range(n)}
    for t, size in sizes.items():
        for p in range(size):
            owners = [i for i in range(n) if t in topics[i]]
            current[f"m{draw(st.sampled_from(owners))}"].append((t, p))
    members = tuple(Member(f"m{i}", topics[i], owned=tuple(current[f"m{i}"])) for i in range(n))
    parts = [(t, p) for t, size in sizes.items() for p in range(size)]
    snapshot = GroupSnapshot(
        topics=sizes, members=members,
        produce_rate={t: draw(st.lists(rate, min_size=k, max_size=k)) for t, k in sizes.items()},
        capacity={m.member_id: draw(st.floats(1.0, 2000.0)) for m in members},
        stuck=frozenset(draw(st.sets(st.sampled_from(parts)))))
    return (snapshot, current, "m0", draw(st.floats(0.3, 1.0)),
            draw(st.sampled_from([0.25, 0.5, 1.0, 2.0])))


def rate_of(snapshot: GroupSnapshot, tp: tuple[str, int]) -> float:
    r = snapshot.produce_rate[tp[0]][tp[1]]
    return r if math.isfinite(r) and r > 0 else 0.0


def fits(snapshot, out, recipient, target, budget, taken, donor, tp) -> bool:
    """Whether moving ``tp`` from ``donor`` is one the rule allows, read from the contract."""
    cap = snapshot.capacity
    load = {mid: sum(rate_of(snapshot, x) for x in tps) for mid, tps in out.items()}
    r = rate_of(snapshot, tp)
    topics = next(m.topics for m in snapshot.members if m.member_id == recipient)
    return (tp[0] in topics and tp not in snapshot.stuck and r > 0
            and load[recipient] + r <= target * cap[recipient] + SLACK
            and (taken == 0 or taken + r <= budget + SLACK)
            and load[donor] / cap[donor] > (load[recipient] + r) / cap[recipient] + SLACK)


@settings(max_examples=300, deadline=None)
@given(groups())
def test_a_step_only_moves_what_fits_to_the_recipient_and_stops_when_nothing_does(drawn) -> None:
    snapshot, current, recipient, target, share = drawn
    out = give_back(snapshot, current, recipient, target, share)
    assert out == give_back(snapshot, current, recipient, target, share)  # deterministic
    moved = set(out[recipient]) - set(current[recipient])
    # nothing else moves: every other member keeps what it had less what went to the recipient
    assert set(current[recipient]) <= set(out[recipient])
    for mid, tps in current.items():
        if mid != recipient:
            assert set(out[mid]) == set(tps) - moved
    assert sorted(tp for tps in out.values() for tp in tps) == sorted(
        tp for tps in current.values() for tp in tps)
    before = member_utilisation(snapshot, current)
    after = member_utilisation(snapshot, out)
    taken = sum(rate_of(snapshot, tp) for tp in moved)
    if moved:
        topics = snapshot.members[0].topics
        assert all(tp[0] in topics and tp not in snapshot.stuck and rate_of(snapshot, tp) > 0
                   for tp in moved)
        assert after[recipient] <= target + SLACK
        budget = share * before[recipient] * snapshot.capacity[recipient]
        assert len(moved) == 1 or taken <= budget + SLACK
        assert max(after.values()) <= max(before.values()) + SLACK  # each move levels
    # maximal: from where it stopped, no partition of any peer fits
    budget = share * before[recipient] * snapshot.capacity[recipient]
    assert not [(d, tp) for d, tps in out.items() if d != recipient for tp in tps
                if fits(snapshot, out, recipient, target, budget, taken, d, tp)]


def test_the_worked_example() -> None:
    """The module's example: m0 (121/s) holds two of twelve 20/s partitions, m1 and m2 (120/s)
    five each; the step gives m0 p2 of m1 and p7 of m2."""
    current = {"m0": [("t", 0), ("t", 1)], "m1": [("t", p) for p in range(2, 7)],
               "m2": [("t", p) for p in range(7, 12)]}
    snapshot = GroupSnapshot(
        topics={"t": 12}, members=tuple(Member(m, ("t",), owned=tuple(tps))
                                        for m, tps in current.items()),
        produce_rate={"t": [20.0] * 12}, capacity={"m0": 121.0, "m1": 120.0, "m2": 120.0})
    out = give_back(snapshot, current, "m0", 0.8, 1.0)
    assert out == {"m0": [("t", 0), ("t", 1), ("t", 2), ("t", 7)],
                   "m1": [("t", p) for p in range(3, 7)], "m2": [("t", p) for p in range(8, 12)]}
    # share 0.5: one partition only (20/s of its 40/s)
    assert give_back(snapshot, current, "m0", 0.8, 0.5)["m0"] == [("t", 0), ("t", 1), ("t", 2)]
    # not recovered (capacity 60): 40/s is 0.67, a partition more is 1.0 > 0.8: nothing moves
    slow = GroupSnapshot(topics=snapshot.topics, members=snapshot.members,
                         produce_rate=snapshot.produce_rate,
                         capacity={"m0": 60.0, "m1": 120.0, "m2": 120.0})
    assert give_back(slow, current, "m0", 0.8, 1.0) == current

"""A slow member left at its capacity with a backlog gets a plan that drains it: the ``utilisation``
trigger fires for a measured member over the target whose last report saw records waiting after
every poll (:func:`streaming.policy.utilisation.draining_slowly`), and only then.

Live (``slowdown``: one of three consumers of 120/s halves to 60/s, 12 partitions of 20/s), a first
shed moved one partition: the slow member kept 60/s, all it can do, reported busy 0.85-0.91 (the
rest of its time was its poll fetching), so records/s over busy said 66-70/s, and nothing moved
again; its backlog stayed for the rest of the run."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from streaming.policy.recommend import process
from streaming.state.group_state import GroupState
from tests.unit.streaming.policy.test_policy import T0
from tests.unit.streaming.policy.test_utilisation import LOADED, POLLS, counts, phase

SHED = [[0, 1, 2], [3, 4, 5, 6, 7], [8, 9, 10, 11]]
CAPS = [60.0, 120.0, 120.0]


def after_first_shed(busy: float, lag_min: int | None, owned: list[list[int]] = SHED,
                     policy=LOADED, peers_busy: float = 0.85) -> tuple[GroupState, list]:
    """The group after the live first shed: m0 holds a backlog of 100 records a partition and
    reads what arrives on them; its report says ``busy`` and ``lag_min`` (records waiting: it read
    all it can, its capacity). The peers keep up, busy ``peers_busy``."""
    offsets = {p: 10**6 for p in range(-12, 12)}
    for p in owned[0]:
        offsets[-p - 1] -= 100
    rates = [min(20.0 * len(parts), cap) for parts, cap in zip(owned, CAPS, strict=True)]
    reports = [(busy, CAPS[0] if lag_min else rates[0]), *((peers_busy, r) for r in rates[1:])]
    events = phase(T0, owned, reports, CAPS, POLLS, offsets)
    if lag_min is not None:
        events[0][0]["members"][0]["load"]["records_lag_min"] = lag_min
    state, recs = GroupState("g"), []
    for batch in events:
        recs += process(state, batch, policy)
    return state, recs


def test_records_waiting_measure_the_member_and_a_plan_within_the_target_drains_it() -> None:
    state, recs = after_first_shed(0.88, 40)
    assert state.reported["client:c0@"][3] == 60.0  # what it reads, not 60 / 0.88
    assert len(recs) == 1, [(r.triggers, counts(r)) for r in recs]
    fig = recs[0].triggers["utilisation"]
    assert [(m["member_id"], m["records_lag_min"]) for m in fig["members"]] == [("m0", 40)]
    assert fig["before"] == 1.0 and fig["after"] <= 0.8
    assert counts(recs[0])["m0"] == 2


def test_without_records_waiting_nothing_says_the_member_is_at_its_capacity() -> None:
    """The residue this rule is for: busy under saturation, no lag growing, no records waiting
    said: a lower bound, no trigger."""
    state, recs = after_first_shed(0.88, None)
    assert state.reported["client:c0@"][3] is None
    assert not [r for r in recs if "utilisation" in r.triggers]
    _, recs = after_first_shed(0.88, 0)  # it ran out of records in the window: it keeps up
    assert not [r for r in recs if "utilisation" in r.triggers]


@settings(max_examples=60, deadline=None)
@given(parts=st.integers(1, 4), lag_min=st.integers(1, 10**6),
       headroom=st.sampled_from([0.0, 0.1, 0.2, 0.3]), peers_busy=st.sampled_from([0.6, 0.85]))
def test_the_backlog_rule_fires_only_over_the_target(parts: int, lag_min: int, headroom: float,
                                                     peers_busy: float) -> None:
    """m0 at ``parts`` x 20/s of its 60/s, records waiting: no utilisation trigger while that is
    within the target (1 - headroom); over it, one whenever the peers have room (busy 0.6: at least
    133/s each), and whatever stands leaves m0 within the target (or, past 1 + RISE, able)."""
    owned = [list(range(parts)), list(range(parts, 8)), list(range(8, 12))]
    policy = dataclasses.replace(LOADED, capacity_headroom=headroom)
    _, recs = after_first_shed(0.9, lag_min, owned, policy, peers_busy)
    used, target = 20.0 * parts / CAPS[0], 1.0 - headroom
    fired = [r for r in recs if "utilisation" in r.triggers]
    if used <= target + 1e-9:
        assert not fired, [r.triggers for r in fired]
        return
    assert fired or peers_busy > 0.6, (used, target)
    for r in fired:
        after = 20.0 * counts(r).get("m0", 0) / CAPS[0]
        assert after <= target + 1e-9 or (used > 1.1 and after <= 1.0), (r.triggers, counts(r))

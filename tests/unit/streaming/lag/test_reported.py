"""A member's measure from its own reports (:func:`streaming.lag.reported.measure`), drawn over the
report's fields at and beyond their bounds: records waiting after every poll measure what it
consumes; a record's cost only moves a measure the member's reports gave when it was slow, half way
in ratio each time, never below what it consumes."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from streaming.lag.reported import BEHIND_BUSY, COST_BUSY, SATURATED_BUSY, measure

busy = st.floats(0.0, 1.0)
rate = st.one_of(st.floats(0.0, 1e6), st.just(0.0))
cost = st.one_of(st.none(), st.floats(1e-6, 10.0), st.sampled_from([0.0, -1.0]))
before = st.one_of(st.none(), st.floats(0.1, 1e6))


@given(busy, rate, before, st.booleans(), cost)
def test_a_cost_moves_only_a_measure_there_is(busy: float, rate: float, was: float | None,
                                              behind: bool, cost: float | None) -> None:
    got = measure(busy, rate, was, behind, cost)
    without = measure(busy, rate, was, behind, None)
    slow = busy >= SATURATED_BUSY or (behind and busy >= BEHIND_BUSY and rate > 0)
    if slow or was is None or cost is None or not cost > 0 or busy >= COST_BUSY:
        assert got == without  # the rules of saturation, or no measure: the cost says nothing
        return
    found = max(1 / cost, rate)
    assert got is not None and math.isclose(got, math.sqrt(was * found), rel_tol=1e-9)
    assert min(was, found) * (1 - 1e-9) <= got <= max(was, found) * (1 + 1e-9)


@given(st.floats(10.0, 1000.0), st.floats(10.0, 1000.0), st.integers(1, 8))
def test_reports_of_one_cost_bring_the_measure_there_half_way_each(
        was: float, speed: float, reports: int) -> None:
    """A member measured at ``was`` reporting, while it keeps up at busy 0.65, a record's cost of
    1/``speed``: after k reports its measure is off by at most the k-th halving (in ratio)."""
    m: float | None = was
    for _ in range(reports):
        m = measure(0.65, min(speed, was) / 2, m, False, 1 / speed)
    assert m is not None
    off = abs(math.log(m / speed))
    assert off <= abs(math.log(was / speed)) / 2**reports * (1 + 1e-9) + 1e-9


@given(busy, rate, before, st.booleans(), cost,
       st.one_of(st.none(), st.integers(0, 2**63 - 1), st.sampled_from([0, 1])))
def test_records_waiting_after_every_poll_measure_what_the_member_consumes(
        busy: float, rate: float, was: float | None, behind: bool, cost: float | None,
        lag: int | None) -> None:
    """A report whose every poll left records waiting measures its member at what it consumed,
    whatever its busy figure or its past; without records waiting the other rules hold as before
    (a member that consumed nothing says nothing of its speed)."""
    got = measure(busy, rate, was, behind, cost, lag)
    if lag is not None and lag > 0 and rate > 0:
        assert got == rate
    else:
        assert got == measure(busy, rate, was, behind, cost)

"""The closed-loop benchmark's oracle (benchmarks/loop/oracle.py): optimal on instances small enough
to check by brute force, capacity-aware, and its LPT fallback a valid assignment."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.loop import oracle
from benchmarks.loop.oracle import Problem

RACKS = "abc"


def brute_force(problem: Problem) -> tuple[float, int]:
    """(least max utilisation, least cross-rack partitions among the assignments that reach it)."""
    parts, consumers = sorted(problem.rates), sorted(problem.capacities)
    scored = []
    for owners in itertools.product(consumers, repeat=len(parts)):
        assignment: dict[int, list[tuple[str, int]]] = {c: [] for c in consumers}
        for p, c in zip(parts, owners, strict=True):
            assignment[c].append(p)
        scored.append((oracle.max_load(problem, assignment),
                       oracle.cross_rack(problem, assignment)))
    best = min(load for load, _ in scored)
    return best, min(cross for load, cross in scored if load <= best * (1 + oracle.TOLERANCE))


@st.composite
def problems(draw: st.DrawFn) -> Problem:
    n_c = draw(st.integers(1, 3))
    n_p = draw(st.integers(1, 6))
    # few distinct values, so ties (and so the cross-rack tie-break) are common
    rates = draw(st.lists(st.sampled_from([0.0, 1.0, 2.0, 3.0, 5.0, 8.0]), min_size=n_p,
                          max_size=n_p))
    caps = draw(st.lists(st.sampled_from([1.0, 1.5, 2.0, 3.0]), min_size=n_c, max_size=n_c))
    p_racks = draw(st.lists(st.sampled_from(RACKS), min_size=n_p, max_size=n_p))
    c_racks = draw(st.lists(st.sampled_from(RACKS), min_size=n_c, max_size=n_c))
    return Problem({("t", i): r for i, r in enumerate(rates)}, dict(enumerate(caps)),
                   dict(enumerate(c_racks)), {("t", i): rack for i, rack in enumerate(p_racks)})


def assert_valid(problem: Problem, solution: oracle.Solution) -> None:
    placed = [p for ps in solution.assignment.values() for p in ps]
    assert sorted(placed) == sorted(problem.rates)  # every partition exactly once
    assert set(solution.assignment) <= set(problem.capacities)


@settings(max_examples=60, deadline=None)
@given(problems())
def test_the_milp_is_optimal_then_least_cross_rack(problem):
    solution = oracle.solve(problem, time_limit_s=5)
    assert_valid(problem, solution)
    best, least_cross = brute_force(problem)
    assert solution.max_load == pytest.approx(best, rel=oracle.TOLERANCE, abs=1e-9)
    assert solution.cross_rack == least_cross
    assert solution.lower_bound <= solution.max_load + 1e-9


@settings(max_examples=60, deadline=None)
@given(problems())
def test_lpt_is_a_valid_assignment_within_twice_the_optimum(problem):
    solution = oracle.lpt(problem)
    assert_valid(problem, solution)
    assert solution.max_load <= 2 * brute_force(problem)[0] + 1e-9


def test_capacity_ratios_are_respected():
    """The module's worked example: 12 x 20/s on capacities 1 : 1.5 : 3 get 2, 3 and 7
    partitions."""
    problem = Problem({("t", p): 20.0 for p in range(12)}, {0: 60.0, 1: 90.0, 2: 180.0})
    solution = oracle.solve(problem)
    assert {c: len(ps) for c, ps in solution.assignment.items()} == {0: 2, 1: 3, 2: 7}
    assert solution.max_load == pytest.approx(140 / 180) and solution.method == "milp"
    # the busiest partition goes to the fastest consumer
    skewed = Problem({("t", 0): 90.0, ("t", 1): 10.0, ("t", 2): 10.0}, {0: 30.0, 1: 100.0})
    assert oracle.solve(skewed).assignment[1] == [("t", 0)]


def test_equal_rates_on_one_rack_go_to_that_racks_consumer():
    problem = Problem({("t", p): 10.0 for p in range(6)}, {0: 30.0, 1: 30.0, 2: 30.0},
                      dict(enumerate(RACKS)), {("t", p): RACKS[p % 3] for p in range(6)})
    solution = oracle.solve(problem)
    assert solution.cross_rack == 0 and solution.max_load == pytest.approx(20 / 30)
    assert solution.assignment == {c: [("t", c), ("t", c + 3)] for c in range(3)}


def test_too_big_or_degenerate_problems(monkeypatch):
    big = Problem({("t", p): 1.0 for p in range(10)}, {0: 1.0, 1: 1.0})
    assert oracle.solve(big).method == "milp"
    monkeypatch.setattr(oracle, "MAX_BINARIES", 10)
    assert oracle.solve(big).method == "lpt" and oracle.solve(big).max_load == 5.0
    assert oracle.solve(Problem({}, {0: 1.0})).assignment == {0: []}
    with pytest.raises(ValueError):
        oracle.solve(Problem({("t", 0): 1.0}, {}))
    with pytest.raises(ValueError):
        oracle.solve(Problem({("t", 0): 1.0}, {0: 0.0}))


def test_least_cross_rack_at_a_given_balance_and_the_floor_over_a_run():
    from benchmarks.loop import cross_floor

    # four partitions of 1/s, all on rack a; three consumers of 2/s on racks a, b, c
    four = oracle.Problem({("t", p): 1.0 for p in range(4)}, {0: 2.0, 1: 2.0, 2: 2.0},
                          {0: "a", 1: "b", 2: "c"}, {("t", p): "a" for p in range(4)})
    assert oracle.solve(four).max_load == 1.0
    assert oracle.least_cross_rack(four, 1.0) == 2  # consumer a takes two at most
    assert oracle.least_cross_rack(four, 2.0) == 0  # all four on a, twice as busy
    assert oracle.least_cross_rack(four, 0.5) is None  # no assignment is that balanced
    floor = cross_floor.Floor(lambda phase, members: four)
    # busiest at 1.0, three cross-rack
    spread = {0: [("t", 0)], 1: [("t", 1), ("t", 2)], 2: [("t", 3)]}
    assert floor.of(0, spread) == 2
    # mid-rebalance: no lower than the best balance
    assert floor.of(0, {0: [("t", 0)], 1: [], 2: []}) == 2
    one = {0: [("t", p) for p in range(4)], 1: [], 2: []}
    assert floor.of(0, one) == 0
    assert cross_floor.floor_ps([(0.0, 0, spread), (10.0, 0, one), (15.0, 0, one)], floor) == 20.0

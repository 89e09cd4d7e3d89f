"""The closed-loop benchmark's workloads of consumers not alike (benchmarks/loop/workloads.py) and
the oracle's plan for each stretch of a run (benchmarks/loop/oracle_schedule.py)."""

from __future__ import annotations

import dataclasses

import pytest

from benchmarks.loop.oracle_schedule import OracleSchedule, phases, problem
from benchmarks.loop.workloads import suite
from streaming.dev.workload.consumers import ConsumerWorker


def test_capacities_per_consumer_and_which_workloads_have_them():
    s = suite()
    assert [s["hetero"].capacity_of(i) for i in range(3)] == [60.0, 90.0, 180.0]
    assert s["zipf"].capacity_of(2) == 150.0
    assert {n for n, w in s.items() if w.heterogeneous} == {"hetero", "slowdown", "wide",
                                                             "recover", "all-slow"}
    wide = s["wide"]
    assert (wide.consumers == 8 and sum(t.partitions for t in wide.topics) == 48
            and len(wide.topics) == 2)
    assert wide.capacity == pytest.approx(sum(wide.capacities) / 8)  # the mean: lag in seconds


def test_the_oracle_plans_by_capacity():
    s = suite()
    hetero = OracleSchedule(s["hetero"])
    assert {c: len(ps) for c, ps in hetero.assignment([0, 1, 2]).items()} == {0: 2, 1: 3, 2: 7}
    assert hetero.summary()[0]["max_load"] == pytest.approx(0.7778, abs=1e-4)
    wide = OracleSchedule(s["wide"]).summary()
    assert wide == [{"at": 0.0, "label": "start", "members": list(range(8)), "max_load": 0.75,
                     "lower_bound": 0.75, "cross_rack": wide[0]["cross_rack"], "method": "milp"}]


def test_slowdown_replans_when_c0_halves():
    plan = OracleSchedule(suite()["slowdown"])
    before = plan.assignment([0, 1, 2])
    assert sorted(len(ps) for ps in before.values()) == [4, 4, 4]
    plan.advance()
    after = plan.assignment([0, 1, 2])
    assert (len(after[0]) == 2
            and plan.summary()[1]["max_load"] == pytest.approx(100 / 120, abs=1e-4))
    plan.advance()  # past the last phase: it stays there
    assert plan.assignment([0, 1, 2]) == after


def test_recover_gives_c0_its_share_back_and_all_slow_has_no_assignment_that_keeps_up():
    plan = OracleSchedule(suite()["recover"])
    shares = []
    for _ in range(3):
        shares.append(sorted(len(ps) for ps in plan.assignment([0, 1, 2]).values()))
        plan.advance()
    assert shares == [[4, 4, 4], [2, 5, 5], [4, 4, 4]]
    slow = suite()["all-slow"]
    assert not slow.moves_help and not slow.skewed
    # 240/s for 3 x 70/s: the best assignment is 80/s each, over every consumer's capacity
    assert OracleSchedule(slow).summary()[-1]["max_load"] == pytest.approx(80 / 70, abs=1e-4)


def test_churn_phases_follow_members_and_improvise_for_others():
    w = suite()["churn"]
    assert [sorted(ph.capacities) for ph in phases(w)] == [[0, 1, 2], [0, 1], [0, 1, 2]]
    plan = OracleSchedule(w)
    plan.advance()
    assert set(plan.assignment([0, 1])) == {0, 1}
    # a membership the schedule does not foresee (the group forming): LPT, every partition once
    alone = plan.assignment([1])
    assert list(alone) == [1] and len(alone[1]) == 12


def test_problems_weigh_stuck_partitions_nothing_and_follow_replica_moves():
    s = suite()
    stuck = problem(s["stuck"], phases(s["stuck"])[0], [0, 1, 2])
    assert stuck.rates[("t", 5)] == 0.0 and stuck.rates[("t", 0)] > 0
    move = s["rack-move"]
    before, after = (problem(move, ph, [0, 1, 2]) for ph in phases(move))
    assert before.partition_racks[("t", 0)] == "a" and after.partition_racks[("t", 0)] == "b"
    assert OracleSchedule(move).summary()[1]["cross_rack"] == 0


def test_a_consumer_changes_its_rate_midway():
    w = ConsumerWorker(lambda: None, ["t"], 120.0, "c0", "a")
    assert w.batch() == 12
    w.set_rate(60)
    assert w.rate == 60.0 and w.batch() == 6
    with pytest.raises(ValueError):
        w.set_rate(-1)


def test_the_follower_workload_has_a_replica_on_every_rack_and_nothing_is_cross_rack():
    w = suite()["follower"]
    p = problem(w, phases(w)[0], [0, 1, 2])
    assert p.partition_racks == {} and OracleSchedule(w).summary()[0]["cross_rack"] == 0
    with pytest.raises(ValueError):
        dataclasses.replace(w, replicas=2)

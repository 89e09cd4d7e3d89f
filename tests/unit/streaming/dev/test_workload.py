"""Pure parts of the workload generator: skewed partition rates, replica shifts, assignor specs,
client ids."""

from __future__ import annotations

import pytest

from streaming.dev.workload.consumers import assignors_for, client_id_for
from streaming.dev.workload.producers import partition_rates
from streaming.dev.workload.reassign import shifted_replicas


def test_zipf_rates_follow_the_law_and_sum_to_the_total():
    rates = partition_rates(4, 1000, zipf=1.0)
    assert [round(r) for r in rates] == [480, 240, 160, 120]
    assert sum(rates) == pytest.approx(1000)
    assert partition_rates(3, 30, zipf=0) == pytest.approx([10, 10, 10])


def test_hot_partitions():
    rates = partition_rates(4, 130, hot=(2,), hot_factor=10)
    assert rates == pytest.approx([10, 10, 100, 10])
    with pytest.raises(ValueError):
        partition_rates(4, 10, hot=(4,))


def test_shifted_replicas_land_on_other_brokers():
    assert shifted_replicas([1], [1, 2, 3]) == [2]
    assert shifted_replicas([3, 1], [1, 2, 3]) == [1, 2]
    assert shifted_replicas([1, 2], [1, 2, 3], shift=2) == [3, 1]


def test_assignor_specs_give_fresh_instances():
    a = assignors_for("sticky")
    b = assignors_for(["range", "roundrobin"])
    assert [x.name for x in a] == ["sticky"] and [x.name for x in b] == ["range", "roundrobin"]
    custom = assignors_for("cooperative-sticky")[0]
    assert assignors_for(custom) == [custom]
    assert [x.name for x in assignors_for(lambda: assignors_for("range"))] == ["range"]
    with pytest.raises(ValueError):
        assignors_for("lag")


def test_client_ids_name_the_rack():
    assert client_id_for("orders", 2, "b") == "orders-2-rack-b"
    assert client_id_for("orders", 2, None) == "orders-2"


def test_a_planned_assignor_hands_out_the_plan_by_client_id_once_each():
    from assignors.model import GroupSnapshot, Member
    from streaming.dev.workload.strategies import RebalanceLog, planned_assignor

    asked: list[list[str]] = []

    def plan(client_ids):
        asked.append(list(client_ids))
        return {"g-0": [("t", 0), ("t", 1)], "g-1": [("t", 2)]}

    assignor = planned_assignor(plan, "g-0", "a", RebalanceLog())
    snapshot = GroupSnapshot({"t": 3}, (Member("m1", ("t",), client_id="g-1"),
                                        Member("m0", ("t",), client_id="g-0"),
                                        Member("m0-again", ("t",), client_id="g-0")))
    assert assignor.assign_fn(snapshot) == {"m1": [("t", 2)], "m0": [("t", 0), ("t", 1)],
                                            "m0-again": []}
    assert asked == [["g-0", "g-1"]] and assignor.name == "oracle" and not assignor.cooperative

"""What a recommendation gave each consumer (:mod:`benchmarks.loop.given`), read through the load
model's own reader: with capacities, without them (null members), and without a model."""

from __future__ import annotations

from benchmarks.loop.given import per_consumer

MODEL = {"version": 1, "horizon_s": 60.0,
         "topics": [{"topic": "t", "lag": [0, 0, 0], "rate": [20.0, 20.0, None]}],
         "members": [{"member_id": "m0", "instance_id": None, "client_id": "c-0",
                      "records_per_s": 57.6},
                     {"member_id": "m1", "instance_id": None, "client_id": "c-1",
                      "records_per_s": 100.0}]}
ASSIGNMENT = [{"client_id": "c-0", "partitions": [["t", 0], ["t", 1]]},
              {"client_id": "c-1", "partitions": [["t", 2]]}]


def test_each_consumer_by_index_with_its_partitions_rates_and_capacity() -> None:
    got = per_consumer({"assignment": ASSIGNMENT, "load_model": MODEL}, {"c-0": 0, "c-1": 1})
    assert got == {"given": {0: {"partitions": 2, "rate": 40.0, "capacity": 57.6},
                             1: {"partitions": 1, "rate": 0.0, "capacity": 100.0}}}


def test_unknown_capacities_or_no_model_leave_the_capacity_null() -> None:
    alike = {"assignment": ASSIGNMENT, "load_model": {**MODEL, "members": None}}
    assert per_consumer(alike, {"c-0": 0, "c-1": 1})["given"][0] == {
        "partitions": 2, "rate": 40.0, "capacity": None}
    none = per_consumer({"assignment": ASSIGNMENT}, {"c-0": 0})["given"]
    assert none == {0: {"partitions": 2, "rate": 0, "capacity": None},
                    "c-1": {"partitions": 1, "rate": 0, "capacity": None}}
    assert per_consumer({}, {}) == {}

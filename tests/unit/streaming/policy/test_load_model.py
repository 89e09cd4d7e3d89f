"""The load model a recommendation publishes (streaming.policy.outcome.load_model_of): the lags,
rates and capacities the decision used, in the feed message and the Delta row's feed_value; a leader
reads back the loads balanced used."""

from __future__ import annotations

import dataclasses
import json

from assignors.balanced.options import BalancedOptions
from assignors.balanced.problem import Problem
from streaming.apply import fallback
from streaming.contracts import load_model
from streaming.state.snapshot import to_snapshot

from .test_policy import POLICY, SKEWED, STEP, T0, TWO, poll, run

HORIZON = dataclasses.replace(POLICY, rate_horizon_s=60.0)


def _recommend(policy=HORIZON):
    state, recs = run([TWO] + [e for i in range(3) for e in poll(T0 + i * STEP, SKEWED)], policy)
    assert len(recs) == 1
    return state, recs[0]


def test_the_recommendation_carries_the_lags_rates_and_capacities_it_was_made_with():
    _, rec = _recommend()
    # committed offsets move 100 per 10 s poll and lags hold, so each partition is produced at 10/s
    assert rec.load_model == {
        "version": 1, "horizon_s": 60.0,
        "topics": [{"topic": "t0", "lag": [9000, 8000, 100, 100],
                    "rate": [10.0, 10.0, 10.0, 10.0]}],
        "members": [{"member_id": "C0", "instance_id": None, "client_id": "c-C0",
                     "records_per_s": 20.0},
                    {"member_id": "C1", "instance_id": None, "client_id": "c-C1",
                     "records_per_s": 20.0}]}
    assert ([(c["member_id"], c["records_per_s"]) for c in rec.member_capacity]
            == [("C0", 20.0), ("C1", 20.0)])


def test_the_model_is_in_the_feed_message_and_the_delta_row():
    _, rec = _recommend()
    message = rec.feed_message()
    assert message["schema"] == 1 and message["load_model"] == rec.load_model
    assert json.loads(rec.to_row()["feed_value"])["load_model"] == rec.load_model
    old = dataclasses.replace(rec, load_model=None).feed_message()
    assert "load_model" not in old and set(message) - set(old) == {"load_model"}  # additive


def test_the_leader_reads_back_the_loads_balanced_used():
    state, rec = _recommend()
    model = load_model.read(json.loads(json.dumps(rec.feed_message()))["load_model"])
    assert model is not None
    snapshot = to_snapshot(state, HORIZON.stuck_observations,
                           HORIZON.capacity_headroom)
    assert snapshot is not None
    problem = Problem(snapshot, BalancedOptions(horizon_s=60.0))
    assert (fallback.loads(model, [("t0", p) for p in range(4)]) == problem.part_load_list
            == [9600, 8600, 700, 700])


def test_the_horizon_is_the_assignors_own_when_it_has_one():
    _, rec = _recommend(dataclasses.replace(HORIZON, assignor_options={"horizon_s": 5.0}))
    assert rec.load_model is not None and rec.load_model["horizon_s"] == 5.0
    _, rec = _recommend(dataclasses.replace(HORIZON, assignor="lag"))
    # lag has none: the figures'
    assert rec.load_model is not None and rec.load_model["horizon_s"] == 60.0

"""The load-model fallback (streaming/apply/fallback.py): the shared vectors in tests/data/fallback
(the Java LoadModel passes the same files: tests/integration/test_java_assignor.py,
test_server_assignor.py), and properties of the rule on drawn groups and models."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assignors.model import Member
from streaming.apply import fallback
from streaming.apply.plan import decide, parse_recommendation
from streaming.contracts import load_model
from streaming.contracts.recommendation import recommendation_id

VECTORS = sorted((Path(__file__).parents[3] / "data" / "fallback").glob("*.json"))


def members_of(case: dict) -> list[Member]:
    return [Member(member_id=m["member_id"], topics=tuple(m["topics"]),
                   instance_id=m.get("instance_id"),
                   client_id=m.get("client_id"), rack=m.get("rack")) for m in case["members"]]


@pytest.mark.parametrize("path", VECTORS, ids=[p.stem for p in VECTORS])
def test_the_leader_falls_back_as_the_vector_says(path):
    case = json.loads(path.read_text())
    rec = parse_recommendation(json.dumps(case["recommendation"]))
    decision = decide(case["group"], rec, members_of(case), case["topics"])
    assert not decision.applied
    if case["expect"]["fallback"] == "default":
        assert decision.assignor == "sticky", case["description"]  # no lag source: today's fallback
    else:
        assert decision.assignor == fallback.NAME
        assert {k: [list(tp) for tp in v] for k, v in decision.assignment.items()} == \
            case["expect"]["assignment"], case["description"]


def test_the_vectors_cover_both_outcomes():
    kinds = [json.loads(p.read_text())["expect"]["fallback"] for p in VECTORS]
    assert kinds.count("load-model") >= 10 and kinds.count("default") >= 5


def _model(topics: dict[str, int], caps: dict[str, float] | None,
           horizon: float = 60.0) -> load_model.LoadModel:
    value = load_model.build(horizon,
                             {t: [100 * (p + 1) for p in range(n)] for t, n in topics.items()},
                             {t: [float(n - p) for p in range(n)] for t, n in topics.items()},
                             None if caps is None else [load_model.MemberCapacity(m, None, m, c)
                                                        for m, c in caps.items()])
    model = load_model.read(value)
    assert model is not None
    return model


def test_a_faster_member_takes_proportionally_more():
    model = _model({"t": 12}, {"fast": 300.0, "slow": 100.0})
    members = [Member("fast", ("t",), client_id="fast"), Member("slow", ("t",), client_id="slow")]
    out = fallback.assign(model, members, {"t": 12})
    load = {m: sum(fallback.partition_load(model, t, p) or 0 for t, p in tps)
            for m, tps in out.items()}
    assert load["fast"] / 300 == pytest.approx(load["slow"] / 100, rel=0.25)
    assert load["fast"] > 2 * load["slow"]


def test_a_new_member_takes_the_median_capacity_and_unknown_partitions_the_median_load():
    model = _model({"t": 4}, {"a": 100.0, "b": 200.0, "c": 600.0})
    now = [Member("a", ("t",)), Member("b", ("t",)), Member("c", ("t",)), Member("new", ("t",))]
    assert fallback.capacities(model, now) == {"a": 100.0, "b": 200.0, "c": 600.0, "new": 200.0}
    known = sorted(fallback.loads(model, [("t", p) for p in range(4)]))
    assert fallback.loads(model, [("t", 5), ("u", 0)]) == [(known[1] + known[2]) / 2] * 2


def test_the_model_round_trips_through_the_feed_message():
    value = load_model.build(30.0, {"t": [2**63 - 1, 0]}, {"t": [1.23456, float("nan")]},
                             [load_model.MemberCapacity("m", None, "c", 150.0)])
    assert value is not None
    model = load_model.read(json.loads(json.dumps(value)))
    assert model == load_model.LoadModel(30.0, {"t": [2**63 - 1, 0]}, {"t": [1.235, None]},
                                         (load_model.MemberCapacity("m", None, "c", 150.0),))


def test_a_group_too_large_publishes_no_model():
    assert load_model.build(0.0, {"t": [0] * (load_model.MAX_PARTITIONS + 1)}, {}, None) is None
    assert load_model.build(load_model.MAX_HORIZON_S * 2, {"t": [0]}, {}, None) is None


@st.composite
def groups(draw):
    topics = {f"t{i}": draw(st.integers(0, 9)) for i in range(draw(st.integers(1, 3)))}
    names = draw(st.lists(st.sampled_from(["a", "b", "c", "d", "e", "\u00e9", "\U0001F600"]),
                          min_size=1, max_size=5, unique=True))
    members = [Member(n, tuple(draw(st.lists(st.sampled_from(sorted(topics)), min_size=1,
                                             unique=True))),
                      client_id=draw(st.sampled_from([None, "x", n])))
               for n in names]
    # topics the model lacks: median loads
    known = {t: n for t, n in topics.items() if draw(st.booleans())}
    lag = {t: draw(st.lists(st.integers(0, 2**63 - 1) | st.just(0), min_size=n, max_size=n))
           for t, n in known.items()}
    rate = {t: draw(st.lists(st.none() | st.floats(0, 1e6), min_size=n, max_size=n))
            for t, n in known.items()}
    caps = draw(st.none()
                | st.dictionaries(st.sampled_from([*names, "gone"]), st.floats(0.001, 1e6)))
    value = load_model.build(draw(st.sampled_from([0.0, 60.0])), lag, rate,
                             None if caps is None else [
        load_model.MemberCapacity(m, None, m, c) for m, c in caps.items()])
    model = load_model.read(json.loads(json.dumps(value)))
    assert model is not None
    return model, members, topics


@settings(max_examples=200, deadline=None)
@given(groups(), st.randoms(use_true_random=False))
def test_every_partition_goes_once_to_a_subscriber_whatever_the_member_order(group, rnd):
    model, members, topics = group
    out = fallback.assign(model, members, topics)
    wanted = sorted((t, p) for t in {t for m in members for t in m.topics}
                    for p in range(topics[t]))
    assert sorted(tp for tps in out.values() for tp in tps) == wanted
    subs = {m.member_id: set(m.topics) for m in members}
    assert set(out) == set(subs) and all(t in subs[m] for m, tps in out.items() for t, _ in tps)
    shuffled = list(members)
    rnd.shuffle(shuffled)
    # deterministic: the listing order does not matter
    assert fallback.assign(model, shuffled, topics) == out


@settings(max_examples=100, deadline=None)
@given(groups())
def test_plan_uses_the_model_of_a_recommendation_that_no_longer_fits(group):
    model, members, topics = group
    raw = {"version": 1, "horizon_s": model.horizon_s,
           "topics": [{"topic": t, "lag": list(model.lag[t]), "rate": list(model.rate[t])}
                      for t in model.lag],
           "members": None if model.members is None else [
               {"member_id": m.member_id, "instance_id": m.instance_id, "client_id": m.client_id,
                "records_per_s": m.records_per_s} for m in model.members]}
    rec = parse_recommendation({"group": "g", "version": 2,
                                "recommendation_id": recommendation_id("g", 2),
                                "assignment": [{"member_id": "gone", "client_id": "gone",
                                                "partitions": []}],
                                "load_model": raw})
    decision = decide("g", rec, members, topics)
    assert (decision.source, decision.assignor) == ("fallback", fallback.NAME)
    assert decision.assignment == fallback.assign(load_model.read(raw), members, topics)

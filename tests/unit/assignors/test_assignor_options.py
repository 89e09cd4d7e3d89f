"""Assignor options: what the registry declares, how values are checked, and how the configuration's
``[policy.assignor_options]`` reaches the recommendation's assignor."""

from __future__ import annotations

import dataclasses
import inspect

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assignors import registry
from assignors.balanced import BalancedOptions
from assignors.metrics import compute_metrics
from assignors.model import GroupSnapshot, Member
from assignors.scenario import call_assignor
from streaming import config
from streaming.config import PolicySettings
from streaming.contracts import events as ev
from streaming.errors import ConfigError
from streaming.policy.recommend import process
from streaming.state.group_state import GroupState

T0 = 1_763_700_000_000


def test_balanced_declares_exactly_the_fields_of_its_options_class() -> None:
    declared = registry.options("balanced")
    fields = {f.name: f.default for f in dataclasses.fields(BalancedOptions)}
    assert {k: s.default for k, s in declared.items()} == fields


# balanced: checked above
@pytest.mark.parametrize("name", sorted(set(registry.names()) - {"balanced"}))
def test_every_declared_option_is_a_keyword_the_assignor_names(name: str) -> None:
    # a **kwargs catch-all would swallow a misspelt declaration silently: each option must be named
    module = inspect.getmodule(registry.get(name))
    named = {p for f in (module.assign, getattr(module, "assign_with_transfers", None)) if f
             for p in inspect.signature(f).parameters}
    assert set(registry.options(name)) <= named


@pytest.mark.parametrize("name", registry.names())
def test_every_default_is_valid_and_accepted_by_the_assignor(name: str) -> None:
    specs = registry.options(name)
    defaults = {k: s.default for k, s in specs.items()}
    assert registry.validate_options(name, defaults) == defaults
    snap = _snapshot({"t": [5, 1, 0, 3]})
    assert sorted(tp for tps in registry.assign(name, snap, **defaults).values() for tp in tps) == [
        ("t", p) for p in range(4)]


@given(st.integers(min_value=0, max_value=10**6))
def test_integer_option_from_text_or_value(k: int) -> None:
    spec = registry.options("balanced")["max_count_skew"]
    assert spec.parse(str(k)) == k == spec.parse(k) == spec.parse(float(k))


@given(st.integers(max_value=-1))
def test_negative_integer_option_is_refused(k: int) -> None:
    with pytest.raises(registry.InvalidOption,
                       match=r"max_count_skew: must be an integer >= 0 or none"):
        registry.validate_options("balanced", {"max_count_skew": str(k)})


@given(st.floats(min_value=0, max_value=1e9, allow_nan=False))
def test_float_option_round_trips_through_text(x: float) -> None:
    assert (registry.validate_options("balanced", {"load_tolerance": repr(x)})
            == {"load_tolerance": x})


@pytest.mark.parametrize(("name", "given", "message"), [
    ("balanced", {"prefer_rack_aware_logic": True},
     "prefer_rack_aware_logic: not an option of the balanced assignor; it takes max_count_skew, "
     "load_tolerance, cross_rack_cost, move_cost, horizon_s, target_utilisation"),
    ("lag", {"horizon_s": 1}, "horizon_s: not an option of the lag assignor; it takes none"),
    ("balanced", {"max_count_skew": 1.5},
     "max_count_skew: must be an integer >= 0 or none, got 1.5"),
    ("balanced", {"load_tolerance": "nan"}, "load_tolerance: must be a number >= 0, got nan"),
    ("balanced", {"move_cost": "-1"}, "move_cost: must be a number >= 0, got -1"),
    ("balanced", {"horizon_s": "none"}, "horizon_s: must be a number >= 0, got none"),
    ("balanced", {"cross_rack_cost": True}, "cross_rack_cost: must be a number >= 0, got True"),
    ("sticky", {"prefer_rack_aware_logic": "maybe"},
     "prefer_rack_aware_logic: must be true or false, got 'maybe'"),
])
def test_bad_option_names_the_key_and_what_is_allowed(name: str, given: dict, message: str) -> None:
    with pytest.raises(registry.InvalidOption) as err:
        registry.validate_options(name, given)
    assert str(err.value) == message


def test_scenario_flags_reach_only_the_assignors_that_take_them() -> None:
    snap = _snapshot({"t": [5, 1, 0, 3]})
    scenario_options = {"prefer_rack_aware_logic": True,
                        "java_member_iteration_order": ["C0", "C1"]}
    # balanced used to get every scenario option and fail with TypeError on this one
    for name in registry.names():
        result = call_assignor(registry.get(name), snap, scenario_options)
        assert sum(len(v) for v in result.values()) == 4, name
    assert registry.applicable("range", scenario_options) == {"prefer_rack_aware_logic": True}
    assert registry.applicable("balanced", scenario_options) == {}


# -- configuration ---------------------------------------------------------------------------------


def test_toml_table_is_typed_and_checked(tmp_path) -> None:
    f = tmp_path / "r.toml"
    f.write_text('[policy]\nassignor = "balanced"\n[policy.assignor_options]\nmax_count_skew = 1\n'
                 "load_tolerance = 0.05\n")
    cfg = config.load(f)
    assert cfg.policy.assignor_options == {"max_count_skew": 1, "load_tolerance": 0.05}
    assert (cfg.policy.assignor_kwargs()
            == {"horizon_s": 0.0, "target_utilisation": 0.8, "max_count_skew": 1,
                "load_tolerance": 0.05})
    f.write_text('[policy.assignor_options]\nload_tolerance = "lots"\n')
    with pytest.raises(ConfigError,
                       match=r"^policy\.assignor_options\.load_tolerance: must be a number >= 0, "
                                          r"got 'lots'$"):
        config.load(f)


def test_overrides_set_and_clear_the_table() -> None:
    cfg = config.load(overrides=["policy.assignor_options.max_count_skew=0",
                                 "policy.rate_horizon_s=30", "policy.capacity_headroom=0.25"])
    assert cfg.policy.assignor_kwargs() == {"horizon_s": 30.0, "target_utilisation": 0.75,
                                            "max_count_skew": 0}
    # an explicit horizon_s or target wins for the assignor; rate_horizon_s stays its default
    cfg = cfg.with_overrides(["policy.assignor_options.horizon_s=5",
                              "policy.assignor_options.target_utilisation=none"])
    assert cfg.policy.assignor_kwargs() == {"horizon_s": 5.0, "target_utilisation": None,
                                            "max_count_skew": 0}
    cfg = cfg.with_overrides(["policy.assignor_options=", "policy.assignor=lag"])
    assert cfg.policy.assignor_kwargs() == {}  # lag takes neither


@pytest.mark.parametrize(("overrides", "message"), [
    (["policy.assignor_options.max_count_skew=-2"],
     "policy.assignor_options.max_count_skew: must be an integer >= 0 or none, got -2"),
    (["policy.assignor_options.max_count_skew=1", "policy.assignor=range"],
     "policy.assignor_options.max_count_skew: not an option of the range assignor; it takes "
     "prefer_rack_aware_logic (to switch assignor, clear the table first: --conf "
     "policy.assignor_options=)"),
    (["policy.assignor=fastest"], "policy.assignor: unknown assignor 'fastest'; known: range"),
    (["policy.assignor_options=x"],
     "--conf policy.assignor_options: expected policy.assignor_options.KEY=VALUE"),
])
def test_bad_override_is_a_config_error(overrides: list[str], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        config.load(overrides=overrides)
    assert str(err.value).startswith(message)


def test_recommendation_uses_the_configured_options() -> None:
    """Same skewed group, with and without a hard bound on partition counts."""
    base = PolicySettings(assignor="balanced", skew_threshold=1.5, skew_observations=1,
                          min_total_lag=1000, min_improvement=0.2, stuck_observations=3)
    spreads = {}
    for skew in (None, 0):
        policy = dataclasses.replace(base, assignor_options={"max_count_skew": skew})
        members = ev.members_event(T0, "g", 1, "range", [
            ev.member_entry("C0", ["t0"], [("t0", 0), ("t0", 1)], client_id="c0"),
            ev.member_entry("C1", ["t0"], [("t0", 2), ("t0", 3)], client_id="c1")])
        lags = {0: 9000, 1: 8000, 2: 100, 3: 100}
        polls = [ev.lag_event(T0 + i * 10_000, "g", "t0", p, 10, 10 + lag) for i in range(2)
                 for p, lag in lags.items()]
        recs = process(GroupState("g"), [members, *polls], policy)
        assert len(recs) == 1 and recs[0].assignor == "balanced"
        counts = sorted(len(m["partitions"]) for m in recs[0].assignment)
        spreads[skew] = counts[-1] - counts[0]
    # load alone puts the two hottest partitions apart and the three cold ones together ...
    assert spreads[None] == 2
    # ... the bound keeps counts within one
    assert spreads[0] == 0


def _snapshot(lags: dict[str, list[int]]) -> GroupSnapshot:
    topics = {t: len(v) for t, v in lags.items()}
    return GroupSnapshot(topics=topics,
                         members=(Member("C0", tuple(topics)), Member("C1", tuple(topics))),
                         lag={t: tuple(v) for t, v in lags.items()})


def test_metrics_follow_the_horizon() -> None:
    snap = dataclasses.replace(_snapshot({"t": [5, 1]}), produce_rate={"t": (1.0, 0.0)})
    assert compute_metrics(snap, {"C0": [("t", 0)], "C1": [("t", 1)]}, horizon_s=10).max_load == 15

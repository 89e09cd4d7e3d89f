"""The collector's options: offset-reset policies, group selection, and the `collect` command's
parsing."""

from __future__ import annotations

import pytest

from streaming.collector import CollectorOptions


def test_collector_options_validate_policies_and_select_groups():
    with pytest.raises(ValueError):
        CollectorOptions(offset_reset="none")
    with pytest.raises(ValueError):
        CollectorOptions(group_offset_reset={"g": "middle"})
    o = CollectorOptions(group_offset_reset={"g": "earliest"})
    assert o.policy("g") == "earliest" and o.policy("h") == "latest"


def test_collect_command_parses_its_options():
    from streaming.cli import build_parser
    from streaming.commands.collect import _options

    args = build_parser().parse_args([
        "collect", "--interval", "2", "--groups", "^orders", "--exclude", "test$",
        "--rack-map", "c1=a",
        "--group-offset-reset", "orders-app=earliest", "--full-refresh-every", "5", "--polls", "3"])
    o = _options(args)
    assert (o.interval_s, o.include, o.exclude,
            o.full_refresh_every) == (2.0, "^orders", "test$", 5)
    assert o.rack_map == ("c1=a",) and o.policy("orders-app") == "earliest"


def test_lag_form_is_dense_unless_told_otherwise():
    from streaming.cli import build_parser
    from streaming.commands.collect import _options

    assert _options(build_parser().parse_args(["collect"])).lag_form == "dense"
    assert (_options(build_parser().parse_args(["collect", "--lag-form", "partition"])).lag_form
            == "partition")
    with pytest.raises(ValueError):
        CollectorOptions(lag_form="sparse")

"""A recommendation's per-member figures (streaming.policy.member_figures) through the real policy:
each is the member's share of a figure of the row (the max or the sum is the row's), and ``owned``
is what each member held."""

from __future__ import annotations

import dataclasses
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from streaming.contracts import events as ev
from streaming.proposals import diff

from .test_policy import POLICY, STEP, T0, run

RACKS = ("a", "b", "c")


def _group(owners: list[int], racks: list[str | None], gen: int, extra: int = 0) -> dict:
    """Members M0.. with the partitions ``owners`` gives them (and ``extra`` members owning
    nothing)."""
    specs = [ev.member_entry(f"M{i}", ["t0"], [("t0", p) for p, o in enumerate(owners) if o == i],
                             client_id=f"c{i}", rack=racks[i]) for i in range(len(racks))]
    specs += [ev.member_entry(f"N{i}", ["t0"], [], client_id=f"n{i}", rack="a")
              for i in range(extra)]
    event = ev.members_event(T0, "g", gen, "range", specs)
    return event


def _events(owners, racks, replicas, lags, rates, polls=4):
    """Lag polls of constant lag, each partition consumed at its rate (records/s), then a member
    joins."""
    out = [_group(owners, racks, 1),
           ev.partitions_event(T0, "g", "t0",
                               [ev.partition_entry(p, 1, [1], r) for p, r in enumerate(replicas)])]
    for i in range(polls):
        ts = T0 + i * STEP
        for p, (lag, rate) in enumerate(zip(lags, rates, strict=True)):
            committed = 10**6 + rate * i * STEP // 1000
            out.append(ev.lag_event(ts, "g", "t0", p, committed, committed + lag))
    joined = _group(owners, racks, 2, extra=1)
    joined["ts"] = T0 + polls * STEP
    # the next poll closes the join's observation: it is decided on then
    closing = ev.lag_event(T0 + (polls + 1) * STEP, "g", "t0", 0, 10**6, 10**6)
    return [*out, joined, closing]


@st.composite
def groups(draw):
    n = draw(st.integers(2, 4))
    parts = draw(st.integers(2, 8))
    owners = draw(st.lists(st.integers(0, n - 1), min_size=parts, max_size=parts))
    racks = draw(st.lists(st.sampled_from([*RACKS, None]), min_size=n, max_size=n))
    replicas = draw(st.lists(st.lists(st.sampled_from(RACKS), min_size=1, max_size=2),
                             min_size=parts, max_size=parts))
    lags = draw(st.lists(st.integers(0, 50_000), min_size=parts, max_size=parts))
    rates = draw(st.lists(st.integers(0, 30), min_size=parts, max_size=parts))
    return owners, racks, replicas, lags, rates


@settings(max_examples=60, deadline=None)
@given(groups(), st.sampled_from([0.0, 30.0]))
def test_each_member_figure_is_its_share_of_the_rows(group, horizon):
    owners, racks, replicas, lags, rates = group
    policy = dataclasses.replace(POLICY, rate_horizon_s=horizon, mode="approve")
    _, recs = run(_events(owners, racks, replicas, lags, rates), policy)
    assert recs, "a member joined: a membership_change recommendation"
    for rec in recs:
        row = rec.to_row()
        figures = json.loads(row["member_figures"])
        assert [f["member_id"] for f in figures] == sorted(f["member_id"] for f in figures)
        assert max(f["load_before"] for f in figures) == row["before_max_lag"]
        assert max(f["load_after"] for f in figures) == row["after_max_lag"]
        assert sum(f["cross_rack_before"] for f in figures) == row["before_cross_rack"]
        assert sum(f["cross_rack_after"] for f in figures) == row["after_cross_rack"]
        for when in ("before", "after"):
            each = [f[f"catch_up_{when}_s"] for f in figures]
            # null for a member (unbounded, or unknown) and the row's is null too; else the row's is
            # the max
            assert row[f"{when}_catch_up_s"] == (None if None in each else max(each))
        # what each member held when it was made, and the rates of what it holds before and after
        held = {f"M{i}": sorted(("t0", p) for p, o in enumerate(owners) if o == i)
                for i in range(len(racks))}
        # the membership change's (not an earlier skew's)
        if any(f["member_id"] == "N0" for f in figures):
            held["N0"] = []
        assert {f["member_id"]: sorted((o["topic"], o["partition"]) for o in f["owned"])
                for f in figures} == held
        gets = {m["member_id"]: m["partitions"] for m in rec.assignment}
        for f in figures:  # every partition produced to at its consume rate: lag stays put
            assert abs(f["rate_before"] - sum(rates[p] for _, p in held[f["member_id"]])) < 1e-3
            assert abs(f["rate_after"] - sum(rates[p] for _, p in gets[f["member_id"]])) < 1e-3
        # the review of it: the moves are the row's
        assert diff.of_row({**row, "assignment": rec.assignment,
                            "member_figures": figures}).moved == row["partitions_moved"]


def test_the_docstring_example():
    """M0 owns t-0, t-1 (9,000 and 8,000 of lag), M1 t-2, t-3 (100 each), each partition produced to
    and consumed at 10/s; M0 is behind, so both are taken at its 20/s. The recommendation splits the
    two hot partitions."""
    events = _events([0, 0, 1, 1], ["a", "b"], [["a"], ["b"], ["b"], ["b"]], [9000, 8000, 100, 100],
                     [10, 10, 10, 10])
    rec = run(events, dataclasses.replace(POLICY, mode="approve"))[1][0]
    assert list(rec.triggers) == ["lag_skew"]  # at the third skewed poll, before anyone joins
    figures = {f["member_id"]: f for f in json.loads(rec.to_row()["member_figures"])}
    gets = {m["member_id"]: sorted(tuple(tp) for tp in m["partitions"]) for m in rec.assignment}
    m0, m1 = figures["M0"], figures["M1"]
    assert (m0["load_before"], m1["load_before"]) == (17_000, 200)
    assert (m0["rate_before"], m1["rate_before"]) == (20.0, 20.0)
    assert m0["capacity"] == m1["capacity"] == 20.0
    assert (m0["catch_up_before_s"], m1["catch_up_before_s"]) == (850.0, 10.0)
    # t-1's only replica is on rack b
    assert (m0["cross_rack_before"], m1["cross_rack_before"]) == (1, 0)
    lags = [9000, 8000, 100, 100]
    for f in (m0, m1):
        mine = gets[f["member_id"]]
        assert f["load_after"] == sum(lags[p] for _, p in mine)
        assert f["catch_up_after_s"] == f["load_after"] / 20.0
    assert max(m0["load_after"], m1["load_after"]) == rec.after["max_member_lag"] < 17_000

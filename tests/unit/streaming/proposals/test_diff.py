"""The review of a recommendation member by member (streaming.proposals.diff): gains and losses
conserve the partitions, moves are the partitions that change owner, new ones are those nobody
owned."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streaming.proposals import diff


def _row(owned: dict[str, list[int]], wanted: dict[str, list[int]], **figures) -> dict:
    parts = lambda ps: [{"topic": "t", "partition": p} for p in ps]  # noqa: E731
    return {"group": "g", "version": 3,
            "assignment": [{"member_id": m, "instance_id": None, "client_id": f"c-{m}", "rack": "a",
                            "partitions": parts(ps)} for m, ps in wanted.items()],
            "member_figures": [{"member_id": m, "owned": parts(ps), **figures.get(m, {})}
                               for m, ps in owned.items()]}


def test_the_docstring_example():
    found = diff.of_row(_row({"C0": [0, 1], "C1": [2, 3]}, {"C0": [0], "C1": [1, 2, 3, 4]},
                             C0={"load_before": 17_000, "load_after": 9_000,
                                 "catch_up_before_s": 850.0, "catch_up_after_s": None,
                                 "cross_rack_before": 1, "cross_rack_after": 0}))
    c0, c1 = found.members
    assert (c0.label, c0.gains, c0.loses, c0.keeps) == ("c-C0", (), (("t", 1),), 1)
    assert (c1.label, c1.gains, c1.loses, c1.keeps) == ("c-C1", (("t", 1), ("t", 4)), (), 2)
    assert (found.moved, found.new) == (1, 1)
    assert (c0.load, c0.catch_up_s, c0.cross_rack) == ((17_000, 9_000), (850.0, None), (1, 0))
    assert c1.load == (None, None)  # no figures given: unknown, not 0
    assert found.as_dict()["members"][1]["gains"] == ["t-1", "t-4"]


def test_a_row_from_before_member_figures_says_so():
    row = _row({}, {"C0": [0]})
    with pytest.raises(diff.NoFigures, match="v3 of group g was made before per-member figures"):
        diff.of_row({**row, "member_figures": None})


@st.composite
def assignments(draw):
    members = [f"m{i}" for i in range(draw(st.integers(1, 5)))]
    parts = draw(st.integers(0, 12))
    # every partition once
    wanted = draw(st.lists(st.sampled_from(members), min_size=parts, max_size=parts))
    # None: unowned
    owned = draw(st.lists(st.sampled_from([*members, None]), min_size=parts, max_size=parts))
    by = lambda owners: {m: [p for p, o in enumerate(owners) if o == m]  # noqa: E731
                         for m in members}
    return by(owned), by(wanted)


@settings(max_examples=200, deadline=None)
@given(assignments())
def test_gains_and_losses_conserve_the_partitions(pair):
    owned, wanted = pair
    found = diff.of_row(_row(owned, wanted))
    by = {m.member_id: m for m in found.members}
    was = {p: m for m, ps in owned.items() for p in ps}
    now = {p: m for m, ps in wanted.items() for p in ps}
    lost = [tp for m in found.members for tp in m.loses]
    gained = [tp for m in found.members for tp in m.gains]
    assert len(set(lost)) == len(lost) and len(set(gained)) == len(gained)
    # each partition lost is gained by its new owner; each gained was lost by its old one, or was
    # nobody's
    assert sorted(lost) == sorted(("t", p) for p, m in was.items() if now[p] != m)
    assert sorted(gained) == sorted(("t", p) for p, m in now.items() if was.get(p) != m)
    assert found.moved == len(lost) and found.new == sum(1 for p in now if p not in was)
    assert len(gained) == found.moved + found.new
    for m, member in by.items():
        assert member.keeps + len(member.loses) == len(owned[m])
        assert member.keeps + len(member.gains) == len(wanted[m])

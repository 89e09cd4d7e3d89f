"""The pure parts of side files that survive a kill: parsing, the Delta-log evidence, fault point
arming."""

from __future__ import annotations

import pytest

from streaming.job.buckets import layout, parse_layout
from streaming.operations import faults, recover
from streaming.operations.lease import UNREADABLE, holder_state
from streaming.operations.recover import Txn

APP = "kafka-rebalancer-" + "0123456789abcdef" * 2
OTHER = "kafka-rebalancer-" + "f" * 32


NOT_UTF8 = b'{"g": \xff\xfe3}'.decode(errors="replace")
"""a side file whose bytes are not UTF-8, as hfs.read_text reads it"""


@pytest.mark.parametrize("text", [None, "", " \n", "{", "[1]", '{"g": "3"}', '{"g": true}',
                                  '{"g": 1.5}', NOT_UTF8])
def test_an_empty_or_damaged_floors_file_parses_to_none(text):
    assert recover.parse_floors(text) is None


def test_floors_parse():
    assert recover.parse_floors("{}") == {}
    assert recover.parse_floors('{"a": 3, "b": 0}') == {"a": 3, "b": 0}


@pytest.mark.parametrize("text", [None, "", "\n", "kafka-rebalancer-", "kafka-rebalancer-xyz",
                                  APP[:-1], APP + "0", APP[:-1] + "\ufffd"])
def test_an_empty_or_damaged_app_id_is_none_never_empty(text):
    assert recover.parse_app_id(text) is None


def test_app_id_parse_strips_the_newline():
    assert recover.parse_app_id(APP + "\n") == APP


def test_candidates_are_the_app_ids_that_wrote_since_the_checkpoint_began():
    txns = [Txn(1, f"{OTHER}/recommendations", 100), Txn(2, f"{APP}/recommendations", 200),
            Txn(3, f"{APP}/rejected_events", 300), Txn(4, "someone-else/x", 400)]
    assert recover.candidates(txns, 150) == {APP}
    assert recover.candidates(txns, 50) == {APP, OTHER}
    assert recover.candidates(txns, 500) == set()


def test_first_commit_of_an_app():
    txns = [Txn(5, f"{APP}/recommendations", 0), Txn(3, f"{APP}/recommendations", 0),
            Txn(2, f"{OTHER}/recommendations", 0)]
    assert recover.first_commit(txns, f"{APP}/recommendations") == 3
    assert recover.first_commit(txns, f"{APP}/rejected_events") is None


@pytest.mark.parametrize("text", ["", "{", "[]", NOT_UTF8, '{"keyed_by": "bucket"}',
                                  '{"keyed_by": "bucket", "buckets": 0}',
                                  '{"keyed_by": "bucket", "buckets": 8}'])
def test_an_empty_or_damaged_layout_parses_to_none(text):
    assert parse_layout(text) is None


def test_layout_parse():
    assert parse_layout('{"keyed_by": "group"}') == layout(0)
    assert parse_layout('{"buckets": 8, "format": "RBK1", "keyed_by": "bucket"}') == layout(8)


def test_an_unreadable_lease_is_nobodys():
    assert holder_state({"run_id": UNREADABLE}, 1_000_000, 1_000_000, 60, "h1", 10) == "stale"


def test_fault_parse_and_fire():
    assert faults.parse(None) is None and faults.parse("") is None
    with pytest.raises(ValueError, match="unknown fault point"):
        faults.parse("nowhere@3")
    batch = faults.parse("feed:before@3")
    hits: dict[str, int] = {}
    assert not faults.should_fire(batch, "feed:before", 2, hits)
    assert not faults.should_fire(batch, "feed:after", 3, hits)
    assert faults.should_fire(batch, "feed:before", 3, hits)
    nth = faults.parse("delta_app_id:after-rename@2")
    assert ([faults.should_fire(nth, "delta_app_id:after-rename", None, hits) for _ in range(3)]
            == [False, True, False])
    first = faults.parse("stateful")
    assert faults.should_fire(first, "stateful", None, {}) and first.hold_s is None
    assert faults.parse("batch:start@4~2.5") == faults.Fault("batch:start", 4, 2.5)
    assert faults.parse("stateful~600") == faults.Fault("stateful", None, 600.0)


def test_a_held_point_sleeps_and_says_so(monkeypatch, capsys):
    slept: list[float] = []
    monkeypatch.setattr(faults, "_armed", faults.parse("feed:before@2~30"))
    monkeypatch.setattr(faults.time, "sleep", slept.append)
    monkeypatch.setattr(faults.os, "killpg", lambda *a: pytest.fail("a held point must not kill"))
    faults.hit("feed:before", 1)
    faults.hit("feed:before", 2)
    assert slept == [30.0]
    assert capsys.readouterr().err == "REBALANCER_FAULT: holding at feed:before for 30 s\n"


def test_every_side_file_has_its_points():
    from streaming.job import buckets
    from streaming.operations import delta_tables, lease

    for name in (lease.LEASE_FILE, buckets.LAYOUT_FILE, recover.APP_ID_FILE,
                 delta_tables.FLOORS_FILE):
        assert f"{name}:before-rename" in faults.POINTS and f"{name}:after-rename" in faults.POINTS


def test_an_unarmed_hit_does_nothing():
    assert faults._armed is None  # the test process has no REBALANCER_FAULT
    faults.hit("batch:start", 0)
    faults.hit("not registered, and unarmed costs nothing")


def test_the_job_group_is_this_processs_without_a_jvm_ancestor():
    import os

    assert faults.job_group() == os.getpgid(0)


def test_the_stateful_step_is_wrapped_only_when_its_point_is_armed(monkeypatch):
    def update(key, chunks, state):
        return "rows"

    assert faults.in_worker(update) is update
    monkeypatch.setattr(faults, "_armed", faults.parse("stateful@1000000"))
    wrapped = faults.in_worker(update)
    # the 1st hit of 1000000: no kill
    assert wrapped is not update and wrapped(None, None, None) == "rows"

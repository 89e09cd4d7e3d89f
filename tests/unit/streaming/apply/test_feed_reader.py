"""The trigger feed's reader cannot be knocked over: every malformed message is skipped and
counted."""

from __future__ import annotations

import json
import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streaming.apply.feed import LatestRecommendations
from streaming.contracts.recommendation import recommendation_id
from streaming.text import printable


def rec(version: int = 1, group: str = "g", **over) -> dict:
    body = {"group": group, "version": version,
            "recommendation_id": recommendation_id(group, version),
            "assignment": [{"member_id": "m", "instance_id": None, "client_id": "c", "rack": "a",
                            "partitions": [["t", 0]]}]}
    return body | over


DEEP = "[" * 100_000 + "]" * 100_000

MALFORMED = {
    "not json": b"\xff\xfe not json",
    "json array": b"[1, 2]",
    "json string": b'"g"',
    "json null": b"null",
    "deep nesting": DEEP.encode(),
    "deep nesting inside": json.dumps(rec()).replace('"rack": "a"', '"rack": ' + DEEP).encode(),
    "missing group": json.dumps({k: v for k, v in rec().items() if k != "group"}),
    "unhashable group": json.dumps(rec(group=["g"]) | {"recommendation_id": "x"}),
    "group object": json.dumps(rec() | {"group": {"a": 1}}),
    "empty group": json.dumps(rec(group="")),
    "version string": json.dumps(rec() | {"version": "2"}),
    "version bool": json.dumps(rec() | {"version": True}),
    "version float": json.dumps(rec() | {"version": 2.0}),
    "version zero": json.dumps(rec(version=0)),
    "version negative": json.dumps(rec(version=-5)),
    "version 2^70": json.dumps(rec() | {"version": 2**70}),
    "version 1e400": '{"group": "g", "version": 1e400, "assignment": []}',
    "forged id": json.dumps(rec() | {"recommendation_id": "0" * 32}),
    "assignment object": json.dumps(rec() | {"assignment": {"m": []}}),
    "entry without partitions": json.dumps(rec() | {"assignment": [{"member_id": "m"}]}),
    "partition string": json.dumps(rec() | {"assignment": [{"partitions": [["t", "0"]]}]}),
    "partition negative": json.dumps(rec() | {"assignment": [{"partitions": [["t", -1]]}]}),
    "partition 2^31": json.dumps(rec() | {"assignment": [{"partitions": [["t", 2**31]]}]}),
    "topic number": json.dumps(rec() | {"assignment": [{"partitions": [[5, 0]]}]}),
    "member id number": json.dumps(rec() | {"assignment": [{"member_id": 5, "partitions": []}]}),
}


@pytest.mark.parametrize("kind", sorted(MALFORMED))
def test_malformed_message_is_skipped_and_counted(kind: str) -> None:
    feed = LatestRecommendations()
    assert feed.offer(MALFORMED[kind], b"g") is None
    assert feed.rejected == 1
    # the reader goes on: the next good message is taken
    assert feed.offer(json.dumps(rec(version=1)), b"g") is not None
    assert feed.latest("g")["version"] == 1


def test_key_must_name_the_group() -> None:
    feed = LatestRecommendations()
    assert feed.offer(json.dumps(rec(group="g")), b"other") is None
    assert feed.offer(json.dumps(rec(group="g")), b"\xff") is None  # a key that is not UTF-8
    assert feed.rejected == 2 and feed.latest("g") is None and feed.latest("other") is None
    assert feed.offer(json.dumps(rec(group="g")), b"g") is not None


def test_version_moves_forward_by_a_bounded_step() -> None:
    feed = LatestRecommendations(max_version_step=10)
    assert feed.offer(json.dumps(rec(version=5)))
    assert feed.offer(json.dumps(rec(version=5_000_000))) is None  # would pin the group for good
    assert feed.rejected == 1 and feed.latest("g")["version"] == 5
    assert feed.offer(json.dumps(rec(version=15)))
    assert feed.latest("g")["version"] == 15


def test_each_reason_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    feed = LatestRecommendations()
    with caplog.at_level(logging.WARNING, logger="streaming.apply.feed"):
        for _ in range(50):
            feed.offer(b"not json at all")
    assert feed.rejected == 50
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 1


def test_names_from_data_cannot_forge_log_lines(caplog: pytest.LogCaptureFixture) -> None:
    feed = LatestRecommendations()
    with caplog.at_level(logging.WARNING, logger="streaming.apply.feed"):
        feed.offer(json.dumps(rec(group="g")), b"g\n2026-01-01 ERROR forged\x1b[2J")
    text = caplog.text
    assert "\n2026-01-01 ERROR forged" not in text and "\x1b" not in text
    assert "\\n2026-01-01 ERROR forged\\x1b[2J" in text


@settings(max_examples=300, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
                    lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=30))
def test_any_json_value_never_raises(value) -> None:
    feed = LatestRecommendations()
    for candidate in (value, {"group": "g", "version": 1, "assignment": value},
                      rec() | {"assignment": [value]}):
        try:
            raw = json.dumps(candidate)
        except ValueError:
            continue
        feed.offer(raw, b"g")  # must not raise, whatever it holds
        feed.offer(candidate if isinstance(candidate, dict) else raw)


@given(st.text())
def test_printable_is_one_line_without_control_characters(text: str) -> None:
    out = printable(text)
    assert all(not (ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F or c in "\u2028\u2029") for c in out)
    assert "\n" not in out and len(out) <= 200 * 6 + 40

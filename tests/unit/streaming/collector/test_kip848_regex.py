"""A KIP-848 member subscribed with a regex the broker matches (Java's SubscriptionPattern) is
described with the regex, not the topics: the collector gives it the cluster's topics the regex
matches whole."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from streaming.collector import kip848
from streaming.collector.member_metadata import RackResolver

TOPICS = ["orders-eu", "orders-us", "audit", "xorders-eu", "orders"]


def _member(**described):
    return {"member_id": "m-1", "client_id": "c-1", "client_host": "/10.0.0.1", "rack_id": "b",
            "assignment": {"topic_partitions": [{"topic_name": "orders-eu", "partitions": [0]}]},
            **described}


def test_a_regex_member_subscribes_to_the_topics_its_regex_matches_whole():
    warned: list[str] = []
    matching = kip848.regex_matcher(lambda: TOPICS, warned.append)
    got = kip848.member_from(_member(subscribed_topic_names=[], subscribed_topic_regex="orders-.*"),
                             RackResolver.parse((), None), 7, matching)
    assert (got.topics == ("orders-eu", "orders-us") and got.assigned == (("orders-eu", 0),)
            and not warned)
    named = kip848.member_from(_member(subscribed_topic_names=["audit"],
                                       subscribed_topic_regex=None),
                               RackResolver.parse((), None), 7, matching)
    assert named.topics == ("audit",)


def test_the_topic_list_is_read_once_and_failures_are_warned_not_raised():
    calls: list[int] = []

    def listing():
        calls.append(1)
        return TOPICS

    warned: list[str] = []
    matching = kip848.regex_matcher(listing, warned.append)
    assert matching("audit") == {"audit"} and matching("orders") == {"orders"} and len(calls) == 1
    assert matching("(unclosed") == set() and "is not one Python reads" in warned[0]

    def broken():
        raise TimeoutError("no answer")
    warned.clear()
    assert kip848.regex_matcher(broken, warned.append)("orders-.*") == set()
    assert warned == [
        "topic list unreadable (TimeoutError: no answer); regex members' topics unknown this poll"]


@given(st.lists(st.text("ab-.", min_size=1, max_size=6), max_size=12), st.text("ab-.", max_size=3))
def test_a_prefix_regex_matches_the_topics_with_that_prefix(names, prefix):
    assert kip848.regex_matcher(lambda: names, [].append)(re.escape(prefix) + ".*") == \
        {n for n in names if n.startswith(prefix)}

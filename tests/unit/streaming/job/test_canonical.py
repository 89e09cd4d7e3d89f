"""The fast path's positions come from the contract's field order: every field of an event the
collector encodes sits where :data:`streaming.job.canonical.PIECES` says (no Spark: the same split
in Python)."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from streaming.contracts import events as ev
from streaming.job import canonical

# encode() escapes what is not printable ASCII (json.dumps), and an escaped text takes the general
# path
names = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E,
                                       blacklist_characters='"\\'),
                min_size=1)
topics = st.text(alphabet="abcXYZ019._-", min_size=1, max_size=249)
longs = st.integers(0, 10**18 - 1)


@given(ts=longs, group=names, topic=topics, partition=st.integers(0, 2**31 - 1), committed=longs,
       end=longs, no_commit=st.booleans(), start=st.none() | longs,
       count=st.sampled_from([0, 1, 2**31 - 1]) | st.integers(0, 2**31 - 1))
def test_every_field_sits_at_its_derived_piece(ts, group, topic, partition, committed, end,
                                               no_commit, start, count):
    event = ev.lag_event(ts, group, topic, partition, committed, end, no_commit, start, count)
    text = ev.encode(event)[1].decode()
    # Java's \A and \z are Python's \A and \Z
    assert re.match(canonical.CANONICAL_LAG.replace(r"\z", r"\Z"), text)
    pieces = text.split('"')
    for name in ev.LAG_FIELDS:
        piece = pieces[canonical.PIECES[name] - 1]
        value = piece if canonical.LAG_KINDS[name] == "STRING" else int(piece.strip(":,}"))
        assert value == event[name], name
    # the piece after end_offset's value names the log start when there is one, its value the next
    has_start = (len(pieces) > canonical.LAST_PIECE + 1
                 and pieces[canonical.LAST_PIECE] == ev.LOG_START)
    assert has_start == (start is not None)
    if has_start:
        assert int(pieces[canonical.LAST_PIECE + 1].strip(":,}")) == start
    # the count closes the text when there is one; no_commit comes just before it, or closes it
    has_count = pieces[-2] == ev.METADATA_EVENTS
    assert has_count == (count > 0)
    if has_count:
        assert int(pieces[-1].strip(":}")) == count
    flag = -4 if has_count else -2
    assert (pieces[flag] == "no_commit") == no_commit
    if no_commit:
        assert pieces[flag + 1].startswith(":t")


def test_the_builder_writes_the_contract_order():
    assert (tuple(ev.lag_event(1, "g", "t", 0, 1, 2, no_commit=True))
            == (*ev.LAG_FIELDS, "no_commit"))
    assert (tuple(ev.lag_event(1, "g", "t", 0, 1, 2, True, 0))
            == (*ev.LAG_FIELDS, ev.LOG_START, "no_commit"))
    assert (tuple(ev.lag_event(1, "g", "t", 0, 1, 2, True, 0, 3))
            == (*ev.LAG_FIELDS, ev.LOG_START, "no_commit", ev.METADATA_EVENTS))


def test_a_count_past_ten_digits_takes_the_general_path():
    """The regex admits the count up to 10 digits (an INT's range); a longer one is judged by the
    general path (and rejected there)."""
    whole = canonical.CANONICAL_LAG.replace(r"\z", r"\Z")
    text = ev.encode(ev.lag_event(1, "g", "t", 0, 1, 2, metadata_events=10**9))[1].decode()
    assert re.match(whole, text)
    assert not re.match(whole, text.replace(str(10**9), str(10**10)))


@given(ts=longs, group=names, topic=topics,
       entries=st.lists(st.tuples(st.integers(0, 2**31 - 1), longs, longs, st.booleans(), longs),
                        min_size=1, max_size=5),
       flags=st.booleans(), starts=st.booleans(), count=st.integers(0, 2**31 - 1))
def test_the_dense_fast_path_reads_the_fields_in_the_encoders_order(ts, group, topic, entries,
                                                                    flags, starts, count):
    """The round trip (to_json of the read struct) gives the text back only when the struct lists
    the fields in the order the collector writes them: the order of
    :data:`canonical.DENSE_TYPES`."""
    p, c, e, n, s = (list(x) for x in zip(*entries, strict=True))
    event = ev.dense_lag_event(ts, group, topic, p, c, e, n if flags else None,
                               s if starts else None, count)
    text = ev.encode(event)[1].decode()
    assert text.startswith(canonical.DENSE_PREFIX)
    order = list(canonical.DENSE_TYPES)
    assert list(event) == [name for name in order if name in event]
    assert set(order) >= set(event) and set(order) - set(event) <= {"no_commit", ev.LOG_STARTS,
                                                                     ev.METADATA_EVENTS}

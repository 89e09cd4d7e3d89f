"""Log start offsets in the state: both lag forms bring the same ones, they survive the state's
bytes (layout 6), and a state of layout 5 (no log starts) reads with every one unknown and goes
on."""

from __future__ import annotations

import json
import struct

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from streaming.contracts import events as ev
from streaming.lag.history import UNKNOWN
from streaming.policy.recommend import process
from streaming.state.group_state import GroupState
from tests.unit.streaming.policy.test_policy import POLICY, STEP, T0, TWO
from tests.unit.streaming.state.test_size import _lz4, _raw

readings = st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 10**6),
                              st.integers(0, 10**6) | st.none()),
                    min_size=4, max_size=4)


def _polls(rows_per_poll: list[list[tuple[int, int, int | None]]]) -> list[dict]:
    out = []
    for i, rows in enumerate(rows_per_poll):
        for p, (start, lag, committed_gap) in enumerate(rows):
            c = start + (committed_gap or 0)
            out.append(ev.lag_event(T0 + i * STEP, "g", "t0", p, c, c + lag,
                                    log_start_offset=start if committed_gap is not None else None))
    return out


@settings(max_examples=30, deadline=None)
@given(st.lists(readings, min_size=1, max_size=4))
def test_both_forms_give_the_same_log_starts_and_they_survive_the_bytes(polls):
    per_partition, dense = GroupState("g"), GroupState("g")
    events = _polls(polls)
    process(per_partition, [TWO, *events], POLICY)
    process(dense, [TWO, *ev.dense(events)], POLICY)
    a, b = per_partition.lag["t0"], dense.lag["t0"]
    for name in ("ids", "ts", "committed", "end", "n"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    # a dense poll carries log starts only when every entry's is known; the per-partition form, each
    # its own
    for i, rows in enumerate(polls):
        expected = [start if gap is not None else UNKNOWN for start, _, gap in rows]
        assert a.start[:, i].tolist() == expected
        assert b.start[:, i].tolist() == (expected if UNKNOWN not in expected else [UNKNOWN] * 4)
    again = GroupState.from_bytes(per_partition.to_bytes())
    assert again == per_partition and np.array_equal(again.lag["t0"].start, a.start)


def _as_layout_5(state: GroupState) -> bytes:
    """``state``'s bytes as layout 5 wrote them: the same, without the log start arrays."""
    raw = _raw(state.to_bytes())
    (size,) = struct.unpack_from("<I", raw)
    header = json.loads(raw[4:4 + size]) | {"_v": 5}
    header.pop("risk_ts")
    at = 4 + size
    (members,) = struct.unpack_from("<I", raw, at)
    at += 4 + members
    head = json.dumps(header).encode()
    out = [struct.pack("<I", len(head)), head, raw[4 + size:at]]
    for hist in state.lag.values():
        out += [a.tobytes() for a in (hist.ids, hist.ts, hist.committed, hist.end, hist.n)]
    return _lz4(b"".join(out))


def test_a_layout_5_state_reads_with_unknown_log_starts_and_goes_on():
    state = GroupState("g")
    process(state, [TWO, *_polls([[(0, 100, 50)] * 4, [(10, 100, 45)] * 4])], POLICY)
    old = GroupState.from_bytes(_as_layout_5(state))
    hist = old.lag["t0"]
    assert ((hist.start == UNKNOWN).all()
            and np.array_equal(hist.committed, state.lag["t0"].committed))
    assert np.isnan(hist.retention().seconds).all()  # no log start known: no risk read
    # a newer poll (ts of poll 2) brings log starts
    process(old, _polls([[(0, 0, 0)] * 4] * 3)[-4:], POLICY)
    hist = old.lag["t0"]
    assert (hist.start[:, hist.n[0] - 1].tolist() == [0, 0, 0, 0]
            and (hist.start[:, 0] == UNKNOWN).all())

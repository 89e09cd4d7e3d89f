"""Order and duplicates in the per-group state: late metadata is ignored and counted, each lag
observation counts once towards the skew streak however it is batched or re-sent, and late lag never
moves offsets back."""

from __future__ import annotations

from streaming.contracts import events as ev
from streaming.policy.recommend import process
from streaming.state.group_state import GroupState
from tests.unit.streaming.policy.test_policy import POLICY, SKEWED, STEP, T0, TWO, members, poll

QUIET = {p: 100 for p in range(4)}
THREE = members(("C0", [("t0", 0)], None), ("C1", [("t0", 1), ("t0", 2)], None),
                ("C2", [("t0", 3)], None), gen=2)


def at(event, ts, **extra):
    return {**event, "ts": ts, **extra}


def batches(*parts, state=None):
    """Run each batch through the state as the job does (serialized in between); all
    recommendations."""
    state = state or GroupState("g")
    out = []
    for batch in parts:
        state = GroupState.from_bytes(state.to_bytes())
        out += process(state, batch, POLICY)
    return state, out


def test_an_older_members_event_after_a_newer_one_is_ignored_and_counted():
    newer = at(THREE, T0 + STEP)
    # the membership change is decided on when the next poll closes its observation
    state, recs = batches([TWO, *poll(T0, QUIET)], [newer], poll(T0 + 2 * STEP, QUIET))
    assert [list(r.triggers) for r in recs] == [["membership_change"]]
    # the generation-1 event re-sent after generation 2: no spurious "C2 left" and nothing
    # recommended
    state, recs = batches([TWO], state=state)
    assert recs == []
    assert {m.member_id for m in state.members} == {"C0", "C1", "C2"} and state.generation == 2
    assert state.counters["late_metadata"] == 1
    # the held event again is a duplicate, not a change
    state, recs = batches([newer], state=state)
    assert recs == [] and state.counters["duplicate_metadata"] == 1


def test_members_events_of_one_ts_are_ordered_by_generation():
    state, recs = batches([at(THREE, T0), *poll(T0, QUIET)], [at(TWO, T0, generation=1)])
    assert recs == [] and state.generation == 2 and state.counters["late_metadata"] == 1
    # a higher generation at the same ts is newer
    state, recs = batches([at(TWO, T0, generation=3)], state=state)
    assert state.generation == 3 and [list(r.triggers) for r in recs] == [["membership_change"]]


def test_an_older_partitions_event_is_ignored():
    parts = lambda n, ts: ev.partitions_event(ts, "g", "t0", [  # noqa: E731
        ev.partition_entry(p, 1, [1], [None]) for p in range(n)])
    state, recs = batches([TWO, parts(4, T0), parts(6, T0 + STEP)], [parts(4, T0)],
                          poll(T0 + 2 * STEP, QUIET))
    assert (len(recs) == 1 and state.partition_count("t0") == 6
            and state.counters["late_metadata"] == 1)


def test_a_resent_poll_does_not_advance_the_streak():
    state, _ = batches([TWO, *poll(T0, SKEWED)], poll(T0, SKEWED), poll(T0, SKEWED))
    assert state.skew_streak == 1
    state, recs = batches(poll(T0 + STEP, SKEWED), poll(T0 + STEP, SKEWED), poll(T0, SKEWED),
                          state=state)
    assert recs == [] and state.skew_streak == 2
    # the T0 copy arrived after T0 + STEP: older than each partition's newest
    assert state.counters["late_lag"] == 4


def test_a_poll_split_across_batches_counts_once_and_is_read_whole():
    clean, clean_recs = batches([TWO] + [e for i in range(3) for e in poll(T0 + i * STEP, SKEWED)])
    split = []
    for i in range(3):
        p = poll(T0 + i * STEP, SKEWED)
        split += [p[:1], p[1:]]
    split[0] = [TWO, *split[0]]
    state, recs = batches(*split)
    # reset by the recommendation at the third poll
    assert state.skew_streak == clean.skew_streak == 0
    assert [r.to_row() for r in recs] == [r.to_row() for r in clean_recs]
    # a first piece that alone would read as calm (total lag under min_total_lag) and reset the
    # streak is not read at all; the whole poll is, as in the clean run
    flipped = {0: 100, 1: 100, 2: 9000, 3: 8000}
    first = poll(T0 + STEP, flipped)
    state, _ = batches([TWO, *poll(T0, SKEWED)], first[:2])
    # held undecided: not read until the rest of the poll (or the next one) comes
    assert state.skew_streak == 1 and state.undecided[0] == T0 + STEP
    state, _ = batches(first[2:], state=state)
    assert state.undecided is None
    clean, _ = batches([TWO, *poll(T0, SKEWED), *first])
    assert state.skew_streak == clean.skew_streak == 2


def test_metadata_of_an_observation_arriving_a_batch_late_rereads_it():
    same_members_new_assignment = members(("C0", [("t0", 0), ("t0", 2)], None),
                                          ("C1", [("t0", 1), ("t0", 3)], None), gen=2)
    # under the new assignment the lag is balanced (9000 + 100 vs 8000 + 100): the streak must
    # restart
    clean, _ = batches([TWO, *poll(T0, SKEWED), at(same_members_new_assignment, T0 + STEP),
                        *poll(T0 + STEP, SKEWED)])
    late, _ = batches([TWO, *poll(T0, SKEWED), *poll(T0 + STEP, SKEWED)],
                      [at(same_members_new_assignment, T0 + STEP)])
    assert clean.skew_streak == late.skew_streak == 0


def test_late_lag_never_moves_offsets_back():
    state, _ = batches([TWO, *poll(T0 + STEP, {0: 50}, committed={0: 1000})],
                       poll(T0, {0: 9000}, committed={0: 10}))
    hist = state.lag["t0"]
    assert hist.latest_lag().tolist() == [50] and hist.n.tolist() == [1]
    # the same observation re-sent with smaller offsets keeps the furthest
    state, _ = batches(poll(T0 + STEP, {0: 10}, committed={0: 900}), state=state)
    assert int(state.lag["t0"].committed[0, 0]) == 1000


def test_counters_survive_serialization():
    state, _ = batches([at(THREE, T0 + STEP)], [TWO])
    again = GroupState.from_bytes(state.to_bytes())
    assert again.counters == state.counters and again.counters["late_metadata"] == 1
    assert again.members_ts == T0 + STEP

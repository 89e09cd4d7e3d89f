"""The trigger policy and the per-group state, without Spark: events in, recommendations out."""

from __future__ import annotations

import dataclasses
import itertools
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from streaming.config import PolicySettings
from streaming.contracts import events as ev
from streaming.policy import lag_skew
from streaming.policy.recommend import process
from streaming.state.group_state import GroupState

T0 = 1_763_700_000_000
STEP = 10_000
POLICY = PolicySettings(assignor="balanced", skew_threshold=1.5, skew_observations=3,
                        min_total_lag=1000, min_improvement=0.2, cooldown_s=300,
                        stuck_observations=3)


def members(*specs, gen=1, group="g"):
    return ev.members_event(T0, group, gen, "range", [
        ev.member_entry(mid, ["t0"], assigned, client_id=f"c-{mid}", rack=rack)
        for mid, assigned, rack in specs])


def poll(ts, lags, committed=None, group="g"):
    out = []
    for p, lag in lags.items():
        c = (committed or {}).get(p, ts // 100)
        out.append(ev.lag_event(ts, group, "t0", p, c, c + lag))
    return out


TWO = members(("C0", [("t0", 0), ("t0", 1)], None), ("C1", [("t0", 2), ("t0", 3)], None))
SKEWED = {0: 9000, 1: 8000, 2: 100, 3: 100}


def run(events, policy=POLICY, state=None):
    state = state or GroupState("g")
    return state, process(state, events, policy)


def test_first_snapshot_is_a_baseline():
    _, recs = run([TWO, *poll(T0, {p: 100 for p in range(4)})])
    assert recs == []


def test_skew_needs_n_consecutive_observations():
    events = [TWO] + [e for i in range(2) for e in poll(T0 + i * STEP, SKEWED)]
    state, recs = run(events)
    assert recs == [] and state.skew_streak == 2
    _, recs = run(poll(T0 + 2 * STEP, SKEWED), state=state)
    assert [r.triggers.keys() for r in recs] == [{"lag_skew"}]
    rec = recs[0]
    assert rec.before["max_member_lag"] == 17000 and rec.after["max_member_lag"] == 9000
    # C0 holds its lag while keeping pace: hot partitions, no slow member
    assert "slow_members" not in rec.triggers["lag_skew"]
    assert "slow_members" not in rec.feed_message()
    assert rec.event_ts == T0 + 2 * STEP and rec.version == 1


def test_spike_resets_the_streak():
    events = [TWO]
    for i, lags in enumerate([SKEWED, SKEWED, {p: 2000 for p in range(4)}, SKEWED, SKEWED]):
        events += poll(T0 + i * STEP, lags)
    state, recs = run(events)
    assert recs == [] and state.skew_streak == 2


def test_cooldown_then_again():
    events = [TWO] + [e for i in range(60) for e in poll(T0 + i * STEP, SKEWED)]
    _, recs = run(events)
    # the group never applies it, so skew persists: one recommendation per cooldown (300 s = 30
    # polls)
    assert [r.event_ts for r in recs] == [T0 + 2 * STEP, T0 + 32 * STEP]
    assert [r.version for r in recs] == [1, 2]


def test_no_improvement_no_recommendation():
    # one partition holds all lag: nobody can do better than the member holding it
    _, recs = run([TWO] + [e for i in range(5)
                           for e in poll(T0 + i * STEP, {0: 50000, 1: 0, 2: 0, 3: 0})])
    assert recs == []


def test_low_total_lag_is_never_skew():
    _, recs = run([TWO] + [e for i in range(5)
                           for e in poll(T0 + i * STEP, {0: 500, 1: 1, 2: 1, 3: 1})])
    assert recs == []


def test_stuck_partition_is_reported_and_not_chased():
    # t0p0 (9000) never moves its committed offset: stuck, and its owner C0 gets through none of it,
    # so it weighs nothing there. C0 also holds t0p1 and t0p2 (4000 each) against C1's 100: the
    # recommendation gives C1 one of them, and C0 keeps the other and the stuck one (counting the
    # stuck lag it would keep none).
    three_one = members(("C0", [("t0", 0), ("t0", 1), ("t0", 2)], None), ("C1", [("t0", 3)], None))
    events = [three_one] + [e for i in range(6)
                            for e in poll(T0 + i * STEP, {0: 9000, 1: 4000, 2: 4000, 3: 100},
                                          {0: 42})]
    _, recs = run(events)
    assert len(recs) == 1
    rec = recs[0]
    assert rec.event_ts == T0 + 2 * STEP  # stuck from the third observation on (K = 3)
    assert rec.stuck_partitions == [("t0", 0)]
    assert (rec.before["max_member_lag"], rec.after["max_member_lag"]) == (8000, 4100)
    owner = {tuple(p): m["member_id"] for m in rec.assignment for p in m["partitions"]}
    assert owner[("t0", 0)] == "C0"
    assert sorted(owner[("t0", p)] for p in (1, 2)) == ["C0", "C1"]


def test_a_stuck_partition_beside_the_heaviest_one_weighs_nothing_and_stays():
    # C0: t0p0 stuck (9000) and t0p1 (8000); C1: 100 + 100. In plain records no assignment has a max
    # below 8000 (handing t0p1 to C1 only moves the 8000; it was "recommended" while the stuck lag
    # counted as load). But every partition here is consumed at 10/s: C0, behind, is measured at
    # 10/s, C1 (keeping up) consumes 20/s, so at the fastest rate C0's 8000 weigh 16,000 and t0p1
    # goes to C1 (8,100), the stuck one stays with C0.
    events = [TWO] + [e for i in range(6) for e in poll(T0 + i * STEP, SKEWED, {0: 42})]
    _, recs = run(events)
    rec, = recs
    assert rec.member_capacity == [
        {"member_id": "C0", "client_id": "c-C0", "records_per_s": 10.0, "confidence_s": 20.0,
         "measured": True},
        {"member_id": "C1", "client_id": "c-C1", "records_per_s": 20.0, "confidence_s": 0.0,
         "measured": False}]
    assert rec.triggers["lag_skew"]["max_member_lag_at_fastest_rate"] == 16_000
    assert rec.triggers["lag_skew"]["improvement"] == round(1 - 8_100 / 16_000, 4)
    assert {m["member_id"]: m["partitions"] for m in rec.assignment} == {
        "C0": [("t0", 0), ("t0", 3)], "C1": [("t0", 1), ("t0", 2)]}
    # plain records
    assert (rec.before["max_member_lag"], rec.after["max_member_lag"]) == (8_000, 8_100)


def test_only_a_stuck_partition_skewing_the_group_gives_nothing():
    # all the lag sits on one stuck partition: left out of the reading, the group is balanced
    lags = {0: 50000, 1: 600, 2: 600, 3: 600}
    events = [TWO] + [e for i in range(6) for e in poll(T0 + i * STEP, lags, {0: 42})]
    state, recs = run(events)
    # the first two observations are skewed before p0 counts as stuck; then the streak resets
    assert recs == [] and state.skew_streak == 0


def test_membership_change_recommends_for_the_new_shape():
    joined = members(("C0", [("t0", 0), ("t0", 1)], None), ("C1", [("t0", 2), ("t0", 3)], None),
                     ("C2", [], None), gen=2)
    joined["ts"] = T0 + STEP
    _, recs = run([TWO, *poll(T0, {p: 100 for p in range(4)}), joined,
                   *poll(T0 + STEP, {p: 100 for p in range(4)})])
    assert len(recs) == 1
    assert recs[0].triggers["membership_change"] == {"joined": ["client:c-C2@"], "left": []}
    assert recs[0].generation == 2
    rec = recs[0]
    assert {m["member_id"] for m in rec.assignment} == {"C0", "C1", "C2"}
    assigned = sorted(tuple(p) for m in rec.assignment for p in m["partitions"])
    assert assigned == [("t0", p) for p in range(4)]
    # 4 x 100 over 3 members: 200 is the integral optimum (the fractional lower bound is 133.3)
    assert rec.after["max_member_lag"] == 200 >= rec.lower_bound


def test_same_members_new_generation_is_not_a_change():
    again = members(("C0", [("t0", 0), ("t0", 2)], None), ("C1", [("t0", 1), ("t0", 3)], None),
                    gen=2)
    again["ts"] = T0 + STEP
    _, recs = run([TWO, again])
    assert recs == []


def test_partition_count_change():
    parts = lambda n: ev.partitions_event(T0, "g", "t0", [  # noqa: E731
        ev.partition_entry(p, 1, [1], [None]) for p in range(n)])
    grown = parts(6)
    grown["ts"] = T0 + STEP
    # metadata alone at T0 + STEP: decided on once the next poll closes that observation
    _, recs = run([TWO, parts(4), grown])
    assert recs == []
    _, recs = run([TWO, parts(4), grown, *poll(T0 + 2 * STEP, {p: 100 for p in range(6)})])
    assert len(recs) == 1 and recs[0].event_ts == T0 + STEP
    assert recs[0].triggers == {"partition_count_change": {"t0": {"before": 4, "after": 6}}}
    assigned = sorted(tuple(p) for m in recs[0].assignment for p in m["partitions"])
    assert assigned == [("t0", p) for p in range(6)]


def test_rack_change_only_when_cross_rack_drops():
    parts = lambda racks, ts: {**ev.partitions_event(ts, "g", "t0", [  # noqa: E731
        ev.partition_entry(p, 1, [1, 2], r) for p, r in enumerate(racks)])}
    group = members(("A", [("t0", 0), ("t0", 1)], "a"), ("B", [("t0", 2), ("t0", 3)], "b"))
    base = [["a", "b"]] * 4
    # racks change but every partition still has a replica on both racks: nothing to gain
    same_gain = [["a", "b", "c"]] + [["a", "b"]] * 3
    closing = poll(T0 + 2 * STEP, {p: 100 for p in range(4)})  # the next poll: T0 + STEP is whole
    _, recs = run([group, parts(base, T0), parts(same_gain, T0 + STEP), *closing])
    assert recs == []
    # t0p0 and t0p1 leave rack a: A now reads them across racks; a swap fixes it
    moved = [["b", "c"], ["b", "c"], ["a", "c"], ["a", "c"]]
    _, recs = run([group, parts(base, T0), parts(moved, T0 + STEP), *closing])
    assert len(recs) == 1
    assert (recs[0].before["cross_rack_partitions"] == 4
            and recs[0].after["cross_rack_partitions"] == 0)
    # one replica of each partition missing on a member's rack: placement decides (the row says so)
    assert recs[0].rack_placement == "decides" and recs[0].to_row()["rack_placement"] == "decides"
    # a member joins where every partition has a replica on both members' racks: placement saves
    # nothing if follower fetching is on, which the job does not know
    joined = members(("A", [("t0", 0), ("t0", 1)], "a"), ("B", [("t0", 2), ("t0", 3)], "b"),
                     ("C", [], "a"), gen=2)
    joined["ts"] = T0 + STEP
    _, recs = run([group, parts(base, T0), joined, *closing])
    assert len(recs) == 1 and recs[0].to_row()["rack_placement"] == "unknown"


def test_state_round_trips_through_bytes():
    state, _ = run([TWO, *poll(T0, SKEWED), *poll(T0 + STEP, SKEWED)])
    again = GroupState.from_bytes(state.to_bytes())
    assert again == state


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 5))
def test_same_events_in_any_batching_give_the_same_recommendations(seed, cuts):
    rng = random.Random(seed)
    events = [TWO]
    for i in range(20):
        events += poll(T0 + i * STEP, {p: rng.choice([100, 2000, 9000]) for p in range(4)})
    _, whole = run(events)
    # cut the (shuffled) events into batches at observation boundaries and replay through serialized
    # state
    rng.shuffle(events)
    ts_cuts = sorted(rng.sample(range(1, 20), min(cuts, 19)))
    state = GroupState("g")
    pieces = []
    bounds = [T0 - 1, *[T0 + c * STEP - 1 for c in ts_cuts], T0 + 20 * STEP]
    for lo, hi in itertools.pairwise(bounds):
        batch = [e for e in events if lo < e["ts"] <= hi or (lo == T0 - 1 and e["ts"] == T0)]
        state = GroupState.from_bytes(state.to_bytes())
        pieces += process(state, batch, POLICY)
    assert [r.to_row() for r in pieces] == [r.to_row() for r in whole]


def test_pieces():
    assert lag_skew.next_streak(2, lag_skew.SkewReading(2.0, 5000, 4000), 1.5, 1000) == 3
    assert lag_skew.next_streak(2, lag_skew.SkewReading(1.2, 5000, 4000), 1.5, 1000) == 0
    assert (lag_skew.in_cooldown(T0 + 1000, T0, 300)
            and not lag_skew.in_cooldown(T0 + 300_000, T0, 300))
    assert lag_skew.improves(100, 79, 0.2) and not lag_skew.improves(100, 81, 0.2)
    assert dataclasses.replace(POLICY).assignor == "balanced"


def _copy_at(event, ts):
    return {**event, "ts": ts}


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 6), st.integers(0, 12))
def test_resent_late_and_reordered_events_give_the_same_recommendations(seed, cuts, resends):
    """The clean run: every event once, in order, one batch. The other run: the same events cut into
    batches at observation boundaries, shuffled within each batch, with copies of earlier events
    (lag rows, whole polls, members and partitions events, so older metadata arriving after newer)
    re-sent in the same or later batches, and unchanged metadata refreshes arriving a batch late."""
    rng = random.Random(seed)
    polls = 20
    parts = lambda ts: ev.partitions_event(ts, "g", "t0", [  # noqa: E731
        ev.partition_entry(p, 1, [1, 2], ["a", "b"]) for p in range(4)])
    gen2 = members(("C0", [("t0", 0)], None), ("C1", [("t0", 2), ("t0", 3)], None),
                   ("C2", [("t0", 1)], None), gen=2)
    change_at = rng.randrange(3, polls - 3)
    clean = [TWO, parts(T0)]
    refreshes = []
    for i in range(polls):
        ts = T0 + i * STEP
        if i == change_at:
            clean.append(_copy_at(gen2, ts))
        elif i > 0 and i % 5 == 0:  # a full refresh: the same metadata, a new ts
            refresh = [parts(ts), _copy_at(TWO if i < change_at else gen2, ts)]
            refreshes += refresh
            clean += refresh
        clean += poll(ts, {p: rng.choice([100, 2000, 9000]) for p in range(4)})
    _, whole = run(clean)

    ts_cuts = sorted(rng.sample(range(1, polls), min(cuts, polls - 1)))
    bounds = [T0 - 1, *[T0 + c * STEP - 1 for c in ts_cuts], T0 + polls * STEP]
    batches = [[e for e in clean if lo < e["ts"] <= hi] for lo, hi in itertools.pairwise(bounds)]
    # an unchanged refresh at a batch's last observation arrives in the next batch instead
    for b in range(len(batches) - 1):
        last = max(e["ts"] for e in batches[b])
        late = [e for e in batches[b] if e in refreshes and e["ts"] == last and rng.random() < 0.5]
        batches[b] = [e for e in batches[b] if not any(e is x for x in late)]
        batches[b + 1] = late + batches[b + 1]
    # copies of earlier events re-sent into the same or a later batch: single rows, whole polls,
    # metadata
    for _ in range(resends):
        src = rng.randrange(len(batches))
        dst = rng.randrange(src, len(batches))
        pick = rng.choice(batches[src])
        copies = ([e for e in batches[src] if e["ts"] == pick["ts"]] if rng.random() < 0.3
                  else [pick])
        batches[dst] = batches[dst] + [dict(e) for e in copies]
    state = GroupState("g")
    pieces = []
    for batch in batches:
        rng.shuffle(batch)
        state = GroupState.from_bytes(state.to_bytes())
        pieces += process(state, batch, POLICY)
    assert [r.to_row() for r in pieces] == [r.to_row() for r in whole]
    assert any("membership_change" in r.triggers for r in whole)


def _skewed_run(protocol, mode="auto"):
    group = {**TWO, "protocol": protocol}
    policy = dataclasses.replace(POLICY, mode=mode)
    return run([group] + [e for i in range(3) for e in poll(T0 + i * STEP, SKEWED)], policy)[1]


def test_a_group_whose_members_cannot_apply_it_gets_it_observe_only_with_the_reason():
    # Kafka Streams on the classic protocol: the row is written, never published (mode observe), and
    # says why
    (rec,) = _skewed_run("stream")
    assert rec.mode == "observe" and rec.feed_message()["status"] == "observed"
    assert rec.to_row()["serving"].startswith("observe_only: Kafka Streams")
    # the same group on RecommendationAssignor is served; on range it is published and says who
    # would apply it
    (served,) = _skewed_run("rebalancer")
    assert served.mode == "auto" and served.to_row()["serving"] == "served"
    (unapplied,) = _skewed_run("range")
    assert unapplied.mode == "auto" and unapplied.serving.startswith("unapplied: ")
    # a group configured to observe stays so whatever its assignor
    assert _skewed_run("rebalancer", mode="observe")[0].mode == "observe"

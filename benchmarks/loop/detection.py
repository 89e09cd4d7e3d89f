"""How soon the job can decide, offline: a loop workload's group through the real stateful step, no
Kafka.

The live benchmark's first recommendations come 11-22 s after the start or an event on the
equal-consumer workloads and ~60 s (or never) on the heterogeneous ones. This replays a workload's
production and its consumers as lag events (polls every ``--poll-s``, commits every ``--commit-s``)
through :func:`streaming.policy.recommend.process` under the loop's policy
(``streaming.dev.demo.loop.loop_config``), and prints per workload when each member's capacity
became known and when the first recommendation came, so the time the rules need can be told apart
from the time Kafka, Spark and the consumers' rebalance add live, and how many consumers the group
is said to need at the end (:mod:`streaming.lag.sizing`, as ``describe`` and the collector's
``/consumers`` endpoint size it).

Model: every partition receives its rate; each consumer drains its partitions' backlog at its
capacity (shared in proportion to their backlog, everything that arrived when it has room), and
commits what it processed every ``--commit-s`` (the loop's consumers commit after each 0.1 s batch;
Kafka's clients by default every 5 s). Consumers start from a count-balanced split (range on one
topic), as the rebalancer's group does before its first recommendation; of the events, rate and
capacity changes are replayed (leaves, joins, replica moves and stuck partitions are not).
``--least-s`` and ``--confident-s`` replace :data:`streaming.lag.capacity.LEAST_S` and
``CONFIDENT_S`` for a what-if; ``balanced`` (everyone keeps up, +-20% noise) is the false-positive
check. ``--closed`` applies each recommendation at once (a new generation of the group with its
assignment) and lists them all: what the rules decide after their first move.

Example:
``python -m benchmarks.loop.detection --workloads hetero,slowdown,balanced --commit-s 0.1,5``.
"""

from __future__ import annotations

import argparse
import dataclasses
import random
from collections.abc import Sequence

import numpy as np

from benchmarks.loop import decided
from benchmarks.loop.workloads import Workload, suite
from streaming import config
from streaming.contracts import events as ev
from streaming.dev.demo.loop import RATE_HORIZON_S
from streaming.lag import capacity as rule
from streaming.lag import sizing
from streaming.policy.recommend import process
from streaming.state.group_state import GroupState

T0 = 1_763_700_000_000
TICK_S = 0.1


def policy() -> config.PolicySettings:
    """The loop's policy (benchmarks.loop.run.Suite: cooldown 30 s, min_total_lag 200)."""
    return dataclasses.replace(config.load().policy, skew_observations=3, cooldown_s=30.0,
                               min_total_lag=200, skew_threshold=1.5, min_improvement=0.2,
                               rate_horizon_s=RATE_HORIZON_S, mode=config.AUTO, mode_overrides={})


def _split(n: int, consumers: int) -> list[list[int]]:
    """Range's split of ``n`` partitions of one topic (the first consumers take the remainder)."""
    base, extra = divmod(n, consumers)
    out, p = [], 0
    for i in range(consumers):
        k = base + (1 if i < extra else 0)
        out.append(list(range(p, p + k)))
        p += k
    return out


class Replay:
    """A workload's partitions (every topic's, in order), their owners under range, and the
    consumers' progress."""

    def __init__(self, w: Workload, p: config.PolicySettings) -> None:
        self.w, self.policy = w, p
        self.tps = [(t.name, q) for t in w.topics for q in range(t.partitions)]
        self.owners: list[list[int]] = [[] for _ in range(w.consumers)]
        first = 0
        for t in w.topics:
            for i, parts in enumerate(_split(t.partitions, w.consumers)):
                self.owners[i] += [first + q for q in parts]
            first += t.partitions
        self.caps = [w.capacity_of(i) for i in range(w.consumers)]
        self.rates = np.concatenate([np.array(t.rates, dtype=float) for t in w.topics])
        self.end, self.done, self.committed = (np.zeros(len(self.tps)) for _ in range(3))
        self.rng = random.Random(w.seed)
        self.state = GroupState("g")
        self.generation = 1
        process(self.state, [self._members(T0)], p)

    def _members(self, ts: int) -> dict:
        """The members event of the group as it is now (its owners, its generation)."""
        topics = [t.name for t in self.w.topics]
        entries = [ev.member_entry(f"c{i}", topics, [self.tps[q] for q in parts],
                                   client_id=f"c{i}")
                   for i, parts in enumerate(self.owners)]
        return ev.members_event(ts, "g", self.generation, "range", entries)

    def apply(self, assignment: Sequence[dict], ts: int) -> None:
        """A recommendation's ``assignment`` applied at once, as the group's next generation."""
        index = {tp: q for q, tp in enumerate(self.tps)}
        held = {a["member_id"]: sorted(index[(t, q)] for t, q in a["partitions"])
                for a in assignment}
        self.owners = [held.get(f"c{i}", []) for i in range(self.w.consumers)]
        self.generation += 1
        process(self.state, [self._members(ts)], self.policy)

    def max_lag(self) -> int:
        """The group's max member lag now (records)."""
        return max(int(sum(self.end[q] - self.committed[q] for q in parts))
                   for parts in self.owners)

    def events_at(self, t: float) -> None:
        """Apply the workload's capacity and rate changes due at ``t``, and its noise."""
        for e in self.w.events:
            if abs(t - e.at * self.w.duration_s) < TICK_S / 2:
                if e.kind == "capacity":
                    self.caps[e.index] = e.capacity
                elif e.kind == "rates":
                    self._set_rates({e.topic: e.rates})
        if self.w.noise and round(t / TICK_S) % round(self.w.noise_every_s / TICK_S) == 1:
            self._set_rates(self.w.noisy_rates(self.rng))

    def _set_rates(self, by_topic: dict[str, tuple[float, ...]]) -> None:
        first = 0
        for topic in self.w.topics:
            if topic.name in by_topic:
                self.rates[first:first + topic.partitions] = by_topic[topic.name]
            first += topic.partitions

    def run_tick(self) -> None:
        """One tick: production, then each consumer drains its backlog at its capacity (in
        proportion)."""
        self.end += self.rates * TICK_S
        for i, parts in enumerate(self.owners):
            backlog = self.end[parts] - self.done[parts]
            total = backlog.sum()
            if total > 0:
                self.done[parts] += backlog * min(1.0, self.caps[i] * TICK_S / total)

    def poll(self, t: float, closed: bool = False) -> list[str]:
        """A collector poll at ``t`` through the stateful step: the triggers of each recommendation
        it made (``closed``: each applied at once, and the partitions it gives each member)."""
        ts = T0 + round(t * 1000)
        lag = [ev.lag_event(ts, "g", topic, q, int(c), int(e))
               for (topic, q), c, e in zip(self.tps, self.committed, self.end, strict=True)]
        out = []
        for rec in process(self.state, lag, self.policy):
            out.append(", ".join(sorted(rec.triggers)))
            if closed:
                self.apply(rec.assignment, ts + 1)
                out[-1] += " -> " + ", ".join(str(len(parts)) for parts in self.owners)
        return out


def simulate(w: Workload, poll_s: float, commit_s: float, p: config.PolicySettings,
             closed: bool = False) -> dict:
    """Seconds (from the start) when each member's capacity was first known and of each
    recommendation; ``closed``: each recommendation applied at once (the partitions it gives each
    member follow its triggers), and the group's max lag at the end (``"end_lag"``)."""
    r = Replay(w, p)
    out: dict = {"known": {}, "recs": []}
    poll_every, commit_every = round(poll_s / TICK_S), max(round(commit_s / TICK_S), 1)
    for k in range(1, int(w.duration_s / TICK_S) + 1):
        t = k * TICK_S
        r.events_at(t)
        r.run_tick()
        if k % commit_every == 0:
            r.committed = np.floor(r.done)
        if k % poll_every == 0:
            out["recs"] += [(round(t, 1), triggers) for triggers in r.poll(t, closed)]
            state = r.state
            found = rule.estimates(state.capacity, state.lag, state.owners, p.stuck_observations,
                                   p.capacity_headroom)
            for mid, c in (found or {}).items():
                if c.measured and mid not in out["known"]:
                    out["known"][mid] = (round(t, 1), round(c.records_per_s, 1))
    if closed:
        out["end_lag"] = r.max_lag()
    out["needed"] = needed(r)
    return out


def needed(r: Replay) -> int:
    """The consumers the group needs at the end (:func:`streaming.lag.sizing.to_run`), as describe
    and the collector's ``/consumers`` size it: the median of the members' capacities, the
    partitions' produce rates as the state reads them."""
    state, p = r.state, r.policy
    found = rule.estimates(state.capacity, state.lag, state.owners, p.stuck_observations,
                           p.capacity_headroom)
    rates = [float(x) for hist in state.lag.values() for x in hist.produce_rate()]
    size = (sizing.size(rates, float(np.median([c.records_per_s for c in found.values()])),
                        p.capacity_headroom) if found else None)
    return sizing.to_run(size, r.w.consumers, busy=True)


def first_decisions(w: Workload,
                    recs: Sequence[tuple[float, str]]) -> list[tuple[str, float | None]]:
    """Per phase (the start, then each event), its label and the seconds to its first
    recommendation, by the live report's rule (:func:`benchmarks.loop.decided.first_decisions`); the
    replay does not apply recommendations, so only the first of each phase says how soon the rules
    decide."""
    run = {"events": [(e.at * w.duration_s, e.label) for e in w.events],
           "recommendations": [{"at_s": t} for t, _ in recs]}
    labels = ["start", *(e.label for e in w.events)]
    firsts = decided.first_decisions(run)
    return [(label, None if t is None else round(t, 1))
            for label, t in zip(labels, firsts, strict=True)]


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--workloads", default="hetero,slowdown,zipf,hot-partition,balanced")
    ap.add_argument("--poll-s", default="2", help="collector poll intervals, comma-separated")
    ap.add_argument("--commit-s", default="0.1,5",
                    help="consumer commit intervals, comma-separated")
    ap.add_argument("--least-s", type=float, default=rule.LEAST_S)
    ap.add_argument("--confident-s", type=float, default=rule.CONFIDENT_S)
    ap.add_argument("--duration", type=float, help="seconds per workload (events scale)")
    ap.add_argument("--closed", action="store_true",
                    help="apply each recommendation at once and list them all (a closed loop)")
    args = ap.parse_args(argv)
    rule.LEAST_S, rule.CONFIDENT_S = args.least_s, args.confident_s  # a what-if: this process only
    p, works = policy(), suite()
    print(f"# benchmarks.loop.detection: LEAST_S {rule.LEAST_S:g} s, "
          f"CONFIDENT_S {rule.CONFIDENT_S:g} s")
    for name in args.workloads.split(","):
        w = works[name].scaled(args.duration) if args.duration else works[name]
        events = ", ".join(f"{e.label} at {e.at * w.duration_s:g} s" for e in w.events) or "none"
        for poll_s in (float(x) for x in args.poll_s.split(",")):
            for commit_s in (float(x) for x in args.commit_s.split(",")):
                r = simulate(w, poll_s, commit_s, p, args.closed)
                known = ", ".join(f"{m} {v[1]:g}/s at {v[0]:g} s"
                                  for m, v in sorted(r["known"].items())) or "none"
                if args.closed:
                    recs = "; ".join(f"{t:g} s {what}" for t, what in r["recs"]) or "none"
                    recs = f"recommendations: {recs}; max lag at the end {r['end_lag']}"
                else:
                    recs = "first recommendation after " + "; ".join(
                        f"{phase}: {f'{t:g} s' if t is not None else 'none'}"
                        for phase, t in first_decisions(w, r["recs"]))
                print(f"{name:14} poll {poll_s:g} s commit {commit_s:g} s (events: {events}): "
                      f"capacity measured: {known}; {recs}; consumers needed at the end "
                      f"{r['needed']}")


if __name__ == "__main__":
    main()

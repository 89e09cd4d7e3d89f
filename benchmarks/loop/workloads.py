"""The closed-loop benchmark's workloads: topics with per-partition rates, consumers of known
capacities, and events at set fractions of the run (rates change, a member leaves or comes back,
replicas move, a consumer slows down).

Every strategy of one workload gets the same rate schedule at the same moments (one driver applies
it to every group's producers), so they consume the same production side by side. Consumer ``i`` on
rack ``"abc"[i % 3]`` (three consumers unless said); one replica per partition, partition ``p`` on
rack ``"abc"[p % 3]`` (unless said: with three, one on each rack, the leader on ``"abc"[p % 3]``).
The brokers serve follower fetching (``RackAwareReplicaSelector``) and the consumers send their
rack.

Loads (records/s) against capacity (records/s per consumer):

- ``zipf``: 12 partitions, 360/s Zipf(1) (p0 116/s, p1 58/s, ...) against 3 x 150: range's first
  consumer gets 241/s, a count-balanced split 173/s; a rate-aware split fits under 150;
- ``hot-partition``: 12 x 20/s against 3 x 120; at 1/3 of the run p4 goes to 80/s (300/s in all):
  its owner under range or round-robin gets 140/s;
- ``two-topics``: ``big`` 4 partitions 90/50/40/30 /s and ``small`` 16 x 3/s against 3 x 120: range
  and lag balance each topic alone and give one consumer two of ``big``'s busiest partitions;
- ``rack-move``: 12 x 20/s against 3 x 120 (no lag problem); at 1/2 every replica moves to the next
  rack;
- ``churn``: 12 partitions, 270/s Zipf(1) against 3 x 150; one member leaves at 1/3 and comes back
  at 2/3 (two members, 300/s of capacity, must carry 270/s meanwhile);
- ``stuck``: ``zipf``'s load at 300/s with p5 stuck (its owner never commits it);
- ``follower``: ``zipf``'s load with three replicas of every partition, one on each rack: every
  consumer has a replica of everything on its rack, so with follower fetching no read needs to cross
  racks under any assignment (rack placement saves nothing; balance decides alone);
- ``balanced``: 12 x 20/s against 3 x 120, each partition's rate redrawn every 5 s within +-20%
  (seeded): nothing should happen;

and consumers that are not alike (Kafka's assignors balance partition counts, blind to capacity):

- ``hetero``: 12 x 20/s against 60, 90 and 180 (1 : 1.5 : 3): a count-balanced split gives the
  slowest 80/s; the oracle gives it 2 partitions, the others 3 and 7 (at most 78% busy);
- ``slowdown``: 12 x 20/s against 3 x 120; at 1/2 c0 halves to 60/s (80/s under a count-balanced
  split);
- ``wide``: 8 consumers at 40, 20, 60, 30, 20, 40, 30, 60 (300/s); ``orders`` 16 partitions (4 at
  20/s, 12 at 5/s) and ``events`` 32 x 2.5/s (220/s in all): range hands the 20/s consumer c1 two
  20/s partitions; the oracle keeps every consumer at most 75% busy;
- ``recover``: ``slowdown``'s c0 halves at 1/4 and is back at 5/8 of a 240 s run: its load
  should go back to it within a few moves, without flapping (today nothing goes back:
  ``benchmarks/results/loop-unlike.md``);
- ``all-slow``: 12 x 20/s against 3 x 120/s until 1/3 of a 240 s run, when all three drop to
  70/s (210/s for 240/s: a slow shared downstream): no assignment keeps up, so nothing should
  move, and the group is said to need consumers (measured 90 s after the drop).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from streaming.dev.workload.producers import partition_rates

RACKS = ("a", "b", "c")


@dataclass(frozen=True)
class TopicSpec:
    name: str
    rates: tuple[float, ...]

    @property
    def partitions(self) -> int:
        return len(self.rates)


@dataclass(frozen=True)
class Event:
    at: float
    """fraction of the run."""
    kind: str
    """``rates`` (``topic`` gets ``rates``), ``leave`` / ``join`` (consumer ``index``),
    ``move-replicas``, ``capacity`` (consumer ``index`` now processes ``capacity`` records/s)."""
    topic: str = ""
    rates: tuple[float, ...] = ()
    index: int = 0
    capacity: float = 0.0

    @property
    def label(self) -> str:
        return {"rates": "rates change", "leave": f"c{self.index} leaves",
                "join": f"c{self.index} returns", "move-replicas": "replicas move racks",
                "capacity": f"c{self.index} to {self.capacity:g}/s"}.get(self.kind, self.kind)


@dataclass(frozen=True)
class Workload:
    name: str
    topics: tuple[TopicSpec, ...]
    capacity: float
    """records/s each consumer processes at most; with ``capacities``, their mean (the unit of lag
    in seconds)."""
    duration_s: float
    consumers: int = 3
    racks: tuple[str, ...] = RACKS
    events: tuple[Event, ...] = ()
    stuck: tuple[tuple[str, int], ...] = ()
    noise: float = 0.0
    """each partition's rate redrawn every ``noise_every_s`` within +-``noise`` of its base rate."""
    noise_every_s: float = 5.0
    seed: int = 0
    skewed: bool = True
    """a workload where a rate-aware assignment should beat Kafka's (the p95 target applies)."""
    description: str = ""
    capacities: tuple[float, ...] = ()
    """records/s of each consumer by index, when they differ."""
    replicas: int = 1
    """replicas of each partition: 1, or one on each of the racks."""
    moves_help: bool = True
    """False where no assignment keeps up (every consumer too slow): nothing to recommend."""

    def __post_init__(self) -> None:
        if self.replicas not in (1, len(self.racks)):
            raise ValueError(f"{self.name}: replicas must be 1 or {len(self.racks)} (one per rack)")

    def replica_racks(self) -> list[tuple[str, ...]]:
        """Each partition's replica racks at the start (topic by topic), the leader's first."""
        n = len(self.racks)
        return [tuple(self.racks[(p + i) % n] for i in range(self.replicas))
                for t in self.topics for p in range(t.partitions)]

    def consumer_racks(self) -> list[str]:
        return [self.racks[i % len(self.racks)] for i in range(self.consumers)]

    def capacity_of(self, index: int) -> float:
        """Consumer ``index``'s capacity at the start."""
        return self.capacities[index] if self.capacities else self.capacity

    @property
    def heterogeneous(self) -> bool:
        """Consumers of different capacities, from the start or after an event."""
        return len(set(self.capacities)) > 1 or any(e.kind == "capacity" for e in self.events)

    def scaled(self, duration_s: float) -> Workload:
        import dataclasses

        return dataclasses.replace(self, duration_s=duration_s)

    def noisy_rates(self, rng: random.Random) -> dict[str, tuple[float, ...]]:
        return {t.name: tuple(r * (1 + rng.uniform(-self.noise, self.noise)) for r in t.rates)
                for t in self.topics}


WIDE_CAPACITIES = (40.0, 20.0, 60.0, 30.0, 20.0, 40.0, 30.0, 60.0)


def _uniform(n: int, rate: float) -> tuple[float, ...]:
    return tuple([rate] * n)


def suite() -> dict[str, Workload]:
    hot = list(_uniform(12, 20.0))
    hot[4] = 80.0
    return {w.name: w for w in (
        Workload("zipf", (TopicSpec("t", tuple(partition_rates(12, 360.0, zipf=1.0))),),
                 capacity=150.0, duration_s=120.0,
                 description="Zipf(1) rates, 360/s on 12 partitions, 3 x 150/s"),
        Workload("hot-partition", (TopicSpec("t", _uniform(12, 20.0)),), capacity=120.0,
                 duration_s=120.0, events=(Event(1 / 3, "rates", "t", tuple(hot)),),
                 description="12 x 20/s, p4 to 80/s at 1/3, 3 x 120/s"),
        Workload("two-topics",
                 (TopicSpec("big", (90.0, 50.0, 40.0, 30.0)),
                  TopicSpec("small", _uniform(16, 3.0))),
                 capacity=120.0, duration_s=120.0,
                 description="big: 4 partitions 210/s; small: 16 partitions 48/s; 3 x 120/s"),
        Workload("rack-move", (TopicSpec("t", _uniform(12, 20.0)),), capacity=120.0,
                 duration_s=120.0, events=(Event(0.5, "move-replicas"),), skewed=False,
                 description="12 x 20/s, 3 x 120/s; every replica moves to the next rack at 1/2"),
        Workload("churn", (TopicSpec("t", tuple(partition_rates(12, 270.0, zipf=1.0))),),
                 capacity=150.0, duration_s=120.0,
                 events=(Event(1 / 3, "leave", index=2), Event(2 / 3, "join", index=2)),
                 description="Zipf(1) 270/s, 3 x 150/s; c2 leaves at 1/3, returns at 2/3"),
        Workload("stuck", (TopicSpec("t", tuple(partition_rates(12, 300.0, zipf=1.0))),),
                 capacity=150.0, duration_s=120.0, stuck=(("t", 5),),
                 description="Zipf(1) 300/s, 3 x 150/s; p5 never committed by its owner"),
        Workload("follower", (TopicSpec("t", tuple(partition_rates(12, 360.0, zipf=1.0))),),
                 capacity=150.0, duration_s=120.0, replicas=3,
                 description="zipf's load, 3 replicas over 3 racks, follower fetching: "
                             "no read crosses racks"),
        Workload("balanced", (TopicSpec("t", _uniform(12, 20.0)),), capacity=120.0, duration_s=90.0,
                 noise=0.2, seed=7, skewed=False,
                 description="12 x 20/s +-20% noise every 5 s, 3 x 120/s"),
        *_unlike(),
    )}


def _unlike() -> tuple[Workload, ...]:
    """The workloads whose consumers are not alike, from the start or after an event."""
    return (
        Workload("hetero", (TopicSpec("t", _uniform(12, 20.0)),), capacity=110.0,
                 capacities=(60.0, 90.0, 180.0), duration_s=120.0,
                 description="12 x 20/s against 60, 90 and 180/s (1 : 1.5 : 3)"),
        Workload("slowdown", (TopicSpec("t", _uniform(12, 20.0)),), capacity=120.0,
                 duration_s=120.0, events=(Event(0.5, "capacity", index=0, capacity=60.0),),
                 description="12 x 20/s, 3 x 120/s; c0 halves to 60/s at 1/2"),
        Workload("recover", (TopicSpec("t", _uniform(12, 20.0)),), capacity=120.0,
                 duration_s=240.0, events=(Event(0.25, "capacity", index=0, capacity=60.0),
                                           Event(0.625, "capacity", index=0, capacity=120.0)),
                 description="12 x 20/s, 3 x 120/s; c0 halves to 60/s at 1/4, back to 120/s at "
                             "5/8"),
        Workload("all-slow", (TopicSpec("t", _uniform(12, 20.0)),), capacity=120.0,
                 duration_s=240.0, skewed=False, moves_help=False,
                 events=tuple(Event(1 / 3, "capacity", index=i, capacity=70.0) for i in range(3)),
                 description="12 x 20/s, 3 x 120/s; all three to 70/s at 1/3 (a shared "
                             "downstream): no move helps, the group needs consumers"),
        Workload("wide", (TopicSpec("orders", (*_uniform(4, 20.0), *_uniform(12, 5.0))),
                          TopicSpec("events", _uniform(32, 2.5))), capacity=37.5, consumers=8,
                 capacities=WIDE_CAPACITIES, duration_s=120.0,
                 description="8 consumers 20-60/s (300/s); orders: 4 x 20/s + 12 x 5/s, "
                             "events: 32 x 2.5/s"),
    )


QUICK = {"zipf": 75.0, "balanced": 30.0}
"""``--quick``: these workloads, this long (seconds)."""


def quick_suite() -> dict[str, Workload]:
    full = suite()
    return {name: full[name].scaled(d) for name, d in QUICK.items()}

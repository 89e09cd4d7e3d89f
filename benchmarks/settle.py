"""Do freshly started consumer groups settle? Counts groups that do and groups left with a member
stuck.

One embedded 3-broker cluster (streaming.embedded.cluster) for the whole run; each round creates one
fresh 12-partition topic per group, a producer per topic, and ``--groups`` groups of ``--members``
kafka-python consumers (ConsumerWorker threads in this one process, as benchmarks.loop runs them),
strategies taken in turn from ``--strategies``. Half the groups (every other one) are built with
``make_consumer(rejoin_guard=False)``, i.e. kafka-python 3.0.12 as shipped, the other half with the
project's :func:`~streaming.kafka_clients.join_guard.keep_rejoin_until_joined`, so both run side by
side under the same load. A group is *settled* when every member is alive, its coordinator STABLE at
one generation, and the topic's partitions are owned exactly once; it must settle within
``--settle-s`` and still be settled after ``--hold-s`` more seconds (a rejoin after the first settle
is where kafka-python loses a join); ``--grow K`` then adds 2 partitions to each topic K times and
re-checks after each (a metadata change is what makes a leader rejoin unasked: the join kafka-python
loses). A group that fails is logged with :func:`~streaming.dev.workload.worker.describe_consumers`
(state, generation, join task, heartbeats, stack).

    heavy .venv/bin/python -m benchmarks.settle --rounds 12 --groups 4

prints one line per group and a summary per guard setting; ``--kafka-log FILE`` keeps kafka-python's
INFO log (joins, leaders, assignments) for reading a stuck group's history, and there only (not on
stdout); ``--burn N`` adds N threads of busy Python work, the GIL contention of a loaded run.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

from streaming import config
from streaming.dev.workload.consumers import (
    ConsumerWorker,
    assignors_for,
    client_id_for,
    make_consumer,
)
from streaming.dev.workload.producers import SkewedProducer
from streaming.dev.workload.worker import describe_consumers
from streaming.kafka_clients import factories as kafka_clients

log = logging.getLogger("benchmarks.settle")

RACKS = ("a", "b", "c")


@dataclasses.dataclass
class Group:
    name: str
    topic: str
    strategy: str
    guarded: bool
    workers: list[ConsumerWorker]
    partitions: int = 0
    settled_after_s: float | None = None
    outcome: str = "pending"


def settled(g: Group) -> bool:
    """Every member alive, the coordinator stable at one generation, each partition owned exactly
    once."""
    want = {(g.topic, p) for p in range(g.partitions)}
    generations = set()
    for w in g.workers:
        coordinator = getattr(w.consumer, "_coordinator", None)
        if (not w.is_alive() or w.failure is not None or coordinator is None
                or not coordinator.stable()):
            return False
        generations.add(coordinator._generation.generation_id)
    owned = [w.assigned for w in g.workers]
    return (len(generations) == 1 and sum(len(a) for a in owned) == len(want)
            and set().union(*owned) == want)


def run_round(cfg: Any, index: int, args: argparse.Namespace) -> list[Group]:
    """One round: fresh topics and groups under load; first settle, hold, then each growth; the
    outcomes."""
    groups = _plan_groups(index, args)
    _create_topics(cfg, groups, args.partitions)
    producers = _start_producers(cfg, groups, args.produce, args.partitions)
    _start_consumers(cfg, groups, args)
    started = time.monotonic()
    try:
        _wait_first_settle(groups, started, args.settle_s)
        hold_until = time.monotonic() + args.hold_s
        while time.monotonic() < hold_until:
            time.sleep(0.5)
        for g in groups:
            if g.settled_after_s is not None:
                g.outcome = "settled"
        for step in range(args.grow + 1):
            if step:
                _grow(cfg, groups, args.hold_s)
            _recheck(groups, args.settle_s)
    finally:
        _stop(groups, producers)
    for g in groups:
        took = f"{g.settled_after_s:.1f}s" if g.settled_after_s is not None else "-"
        print(f"round {index}: {g.name}: {g.outcome} (first settled after {took})", flush=True)
    return groups


def _plan_groups(index: int, args: argparse.Namespace) -> list[Group]:
    """The round's groups: strategies in turn, every other one guarded, each on a topic of its
    own."""
    tag = uuid.uuid4().hex[:6]
    groups = []
    for i in range(args.groups):
        strategy = args.strategies[i // 2 % len(args.strategies)]
        guarded = i % 2 == 1
        name = f"settle-{index}-{i}-{strategy}-{'guarded' if guarded else 'plain'}-{tag}"
        groups.append(Group(name, f"settle-{index}-{i}-{tag}", strategy, guarded, [],
                            args.partitions))
    return groups


def _create_topics(cfg: Any, groups: list[Group], partitions: int) -> None:
    """Each group's topic, waiting for its metadata."""
    admin = kafka_clients.admin(cfg)
    try:
        admin.create_topics({g.topic: {"num_partitions": partitions, "replication_factor": 1}
                             for g in groups},
                            wait_for_metadata=True)
    finally:
        admin.close()


def _start_producers(cfg: Any, groups: list[Group], rate: float,
                     partitions: int) -> list[SkewedProducer]:
    """A producer per topic, ``rate`` records/s to each partition, started."""
    producers = [SkewedProducer(lambda: kafka_clients.producer(cfg, linger_ms=20), g.topic,
                                [rate] * partitions) for g in groups]
    for p in producers:
        p.start()
    return producers


def _start_consumers(cfg: Any, groups: list[Group], args: argparse.Namespace) -> None:
    """``--members`` consumer threads per group, racks in turn, with or without the rejoin guard."""
    for g in groups:
        for m in range(args.members):
            rack = RACKS[m % len(RACKS)]
            client_id = client_id_for(g.name, m, rack)

            def make(g: Group = g, client_id: str = client_id, rack: str = rack) -> Any:
                return make_consumer(cfg, g.name, client_id, rack, assignors_for(g.strategy),
                                     "earliest", rejoin_guard=g.guarded, metadata_max_age_ms=3000)

            w = ConsumerWorker(make, [g.topic], args.rate, client_id, rack)
            g.workers.append(w)
            w.start()


def _wait_first_settle(groups: list[Group], started: float, settle_s: float) -> None:
    """Note when each group first settles; a group still unsettled after ``settle_s`` never
    settled."""
    deadline = started + settle_s
    while time.monotonic() < deadline and any(g.settled_after_s is None for g in groups):
        for g in groups:
            if g.settled_after_s is None and settled(g):
                g.settled_after_s = time.monotonic() - started
        time.sleep(0.2)
    for g in groups:
        if g.settled_after_s is None:
            g.outcome = "never settled"
            log.warning("group %s (%s) did not settle within %.0fs:\n%s", g.name, g.strategy,
                        settle_s, describe_consumers(g.workers))


def _grow(cfg: Any, groups: list[Group], hold_s: float) -> None:
    """Two more partitions on each settled group's topic, then ``hold_s`` for the rejoins."""
    # more partitions: the leader's metadata snapshot changes, so it rejoins without a rejoin
    # request, the case kafka-python loses (see keep_rejoin_until_joined)
    live = [g for g in groups if g.outcome == "settled"]
    for g in live:
        g.partitions += 2
    admin = kafka_clients.admin(cfg)
    try:
        admin.create_partitions({g.topic: g.partitions for g in live})
    finally:
        admin.close()
    time.sleep(hold_s)


def _recheck(groups: list[Group], settle_s: float) -> None:
    """Each settled group must be settled again within ``settle_s``, or it is lost after
    settling."""
    for g in groups:
        if g.outcome != "settled":
            continue
        # a rejoin in progress right now is fine; give it the settle time again to finish
        deadline = time.monotonic() + settle_s
        while not settled(g) and time.monotonic() < deadline:
            time.sleep(0.2)
        if not settled(g):
            g.outcome = "lost after settling"
            log.warning("group %s (%s) settled after %.1fs, then did not settle again "
                        "(%d partitions):\n%s", g.name, g.strategy, g.settled_after_s,
                        g.partitions, describe_consumers(g.workers))


def _stop(groups: list[Group], producers: list[SkewedProducer]) -> None:
    """Stop every consumer, then every producer, and wait for their threads."""
    for g in groups:
        for w in g.workers:
            w.stop()
    for g in groups:
        for w in g.workers:
            w.join(30)
    for p in producers:
        p.stop()
    for p in producers:
        p.join(30)


def burn(done: threading.Event) -> None:
    """Busy pure-Python work until ``done`` (GIL contention)."""
    x = 0
    while not done.is_set():
        for i in range(10_000):
            x = (x + i * i) % 1_000_003


def _parser() -> argparse.ArgumentParser:
    """The command line's options."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--groups", type=int, default=4,
                    help="groups per round (every other one guarded)")
    ap.add_argument("--members", type=int, default=3)
    ap.add_argument("--partitions", type=int, default=12)
    ap.add_argument("--strategies", type=lambda s: s.split(","),
                    default=["cooperative-sticky", "range"])
    ap.add_argument("--rate", type=float, default=150.0, help="records/s each consumer processes")
    ap.add_argument("--produce", type=float, default=20.0,
                    help="records/s produced to each partition")
    ap.add_argument("--settle-s", type=float, default=60.0)
    ap.add_argument("--hold-s", type=float, default=15.0)
    ap.add_argument("--grow", type=int, default=0,
                    help="after settling, add 2 partitions to each topic this many times, "
                         "re-checking each time")
    ap.add_argument("--burn", type=int, default=0,
                    help="threads of pure-Python busy work in this process (GIL contention, as a "
                         "loaded benchmark has)")
    ap.add_argument("--kafka-log", type=Path, help="write kafka-python's INFO log here")
    return ap


def _configure_logging(kafka_log: Path | None) -> None:
    """Warnings on stdout, this benchmark's INFO too; kafka-python's INFO only to ``kafka_log``, if
    given."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stdout,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("benchmarks.settle").setLevel(logging.INFO)
    if kafka_log:
        handler = logging.FileHandler(kafka_log, mode="w")
        handler.setFormatter(logging.Formatter("%(asctime)s %(threadName)s %(levelname)s %(name)s: "
                                               "%(message)s"))
        for name in ("kafka.coordinator", "streaming.dev.workload.consumers"):
            logger = logging.getLogger(name)
            logger.setLevel(logging.INFO)
            logger.addHandler(handler)
            logger.propagate = False


def _print_summary(outcomes: dict[bool, Counter[str]]) -> None:
    """One line per guard setting: groups settled, never settled, lost after settling."""
    for guarded in (False, True):
        c = outcomes[guarded]
        label = "with keep_rejoin_until_joined" if guarded else "kafka-python as shipped"
        print(f"{label}: {sum(c.values())} groups: {c['settled']} settled, {c['never settled']} "
              f"never settled, {c['lost after settling']} lost after settling", flush=True)


def main(argv: list[str] | None = None) -> int:
    """Start a 3-broker cluster, run the rounds (with ``--burn`` threads busy), print the
    summary."""
    args = _parser().parse_args(argv)
    _configure_logging(args.kafka_log)

    from streaming import jvm
    from streaming.embedded.cluster import KafkaCluster

    jvm.resolve()
    base = config.load()
    outcomes: dict[bool, Counter[str]] = {False: Counter(), True: Counter()}
    done = threading.Event()
    for i in range(args.burn):
        threading.Thread(target=burn, args=(done,), name=f"burn-{i}", daemon=True).start()
    with tempfile.TemporaryDirectory(prefix="settle-") as work:
        cluster = KafkaCluster(brokers=3, base_dir=Path(work) / "kafka")
        t0 = time.monotonic()
        cluster.start()
        print(f"cluster up after {time.monotonic() - t0:.0f}s: {cluster.bootstrap_servers}",
              flush=True)
        try:
            cfg = dataclasses.replace(
                base,
                kafka=dataclasses.replace(base.kafka, bootstrap_servers=cluster.bootstrap_servers))
            for r in range(args.rounds):
                for g in run_round(cfg, r, args):
                    outcomes[g.guarded][g.outcome] += 1
        finally:
            done.set()
            cluster.stop()
    _print_summary(outcomes)
    return 0


if __name__ == "__main__":
    sys.exit(main())

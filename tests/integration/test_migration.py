"""A classic Java group on RecommendationAssignor moves to ``group.protocol=consumer`` and the
server-side assignor by a rolling restart, online (#29; the steps: docs/server-assignor.md, "Moving
a classic group to KIP-848").

On a one-broker cluster that loads ServerAssignor, three Java members
(tests/java/RollingMember.java) of a classic group on RecommendationAssignor read a topic of
PARTITIONS partitions fed at PRODUCE records/s (Zipf 1.0), each processing RATE records/s, and hold
a recommendation from the trigger feed (PLAN, what the load asks for: the hot partition alone). One
at a time, each member is stopped and started again with ``group.protocol=consumer`` and
``group.remote.assignor=rebalancer``, and the test waits until the group holds the recommendation
again. Kafka converts the group when the first KIP-848 member joins (possible only because
RecommendationAssignor's assignments carry no user data); ListGroups says ``consumer`` from then on,
and at the end ConsumerGroupDescribe shows three KIP-848 members on the ``rebalancer`` assignor
holding the recommendation. Throughout, no partition is without an owner longer than
UNOWNED_BOUND_S, every record produced is read, and a record is read twice only where its partition
changed hands, at most DUPLICATES_PER_HANDOVER times per handover (at-least-once). The timeline (per
restart: rebalances, partitions moved, longest unowned partition, max consumer lag) is printed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from streaming import config, jvm
from streaming.contracts import load_model
from streaming.contracts.recommendation import Recommendation
from streaming.dev.java_process import TP, JavaProcess, parse_assigned
from streaming.dev.workload import partition_rates
from streaming.kafka_clients import factories as kafka_clients

from . import ownership
from .groups import by_client, classic_members, described, end_offsets, group_type
from .java_client import JAVA_SOURCES, build_assignor, compile_java, wait_for

LOG_CONFIG = JAVA_SOURCES / "log4j2.properties"
PARTITIONS = 6
PRODUCE = 150.0
RATE = 80.0
"""records/s a member processes: the hot partition's 61/s fits, any two of the three hottest (92/s
and more) do not."""
PLAN = {0: (0,), 1: (1, 4), 2: (2, 3, 5)}
"""member index -> partitions: 61, 43 and 46 records/s."""
HEARTBEAT_S = 5.0
"""The broker's group.consumer.heartbeat.interval.ms (default): how late a KIP-848 member may learn
its target."""
UNOWNED_BOUND_S = 2 * HEARTBEAT_S + 1.0 + 1.0
"""A partition given up is in the next target at once (assignment interval 1 s). When its old owner
must revoke it first, that owner learns so at its next heartbeat and the new owner at its own: two
heartbeat intervals; a member prints its assignment after its next poll and paced batch (under 1
s)."""
DUPLICATES_PER_HANDOVER = 20 + int(partition_rates(PARTITIONS, PRODUCE, 1.0)[0])
"""A member that gives a partition up commits what it read first; at worst one poll
(max.poll.records 20) and one auto-commit interval (1 s) of the hottest partition are read again."""


class Member(JavaProcess):
    """One RollingMember process: when it held what (monotonic times), and the offsets it read."""

    def __init__(self, classes: str, bootstrap: str, group: str, topic: str, index: int,
                 protocol: str, trigger_topic: str) -> None:
        self.index, self.protocol = index, protocol
        self.changes: list[tuple[float, set[TP]]] = []
        self.reads: list[tuple[int, int, int]] = []
        self.logs: list[tuple[float, str]] = []
        """(monotonic time, line) of the assignor's log lines (RecommendationAssignor decides on the
        leader)."""
        self.exited: float | None = None
        self.generation: int | None = None
        """Its classic generation, or its member epoch on the consumer protocol, as it last said."""
        cmd = [jvm.java_executable(), "-Xmx128m", f"-Drate={int(RATE)}",
               "-Dlog4j2.configurationFile=" + str(LOG_CONFIG),
               "-cp", classes, "RollingMember", bootstrap, group, topic, "abc"[index], f"m-{index}",
               protocol, trigger_topic]
        super().__init__(cmd, f"m-{index}")

    def on_line(self, line: str) -> None:
        held = parse_assigned(line.strip())
        if held is not None:
            self.changes.append((time.monotonic(), held))
        elif line.startswith("generation "):
            self.generation = int(line.split()[1])
        elif line.startswith("read "):
            tp, first, last = line.split()[1:]
            self.reads.append((int(tp.rsplit("-", 1)[1]), int(first), int(last)))
        elif line.startswith("log "):
            self.logs.append((time.monotonic(), line))

    def stop(self, timeout_s: float = 30.0) -> None:
        super().stop(timeout_s)
        self.exited = self.exited or time.monotonic()


def _compile(out: Path) -> str:
    """RollingMember and GroupMember (its pacing) against clients/java and the Kafka jars; the
    classpath to run."""
    classpath = ":".join([*build_assignor(), jvm.kafka_classpath()])
    compile_java(out, ["RollingMember.java", "GroupMember.java"], classpath)
    return f"{out}:{classpath}"


def _recommend(cfg: config.Config, group: str, topic: str) -> dict[str, set[TP]]:
    """Publish PLAN for the classic group's current members (member and client ids, as the job
    writes them), with its load model; return it by client id."""
    ids = classic_members(cfg.kafka.bootstrap_servers, group)
    rates = partition_rates(PARTITIONS, PRODUCE, 1.0)
    model = load_model.build(60.0, {topic: [0] * PARTITIONS}, {topic: rates},
                             [load_model.MemberCapacity(ids[f"m-{i}"], None, f"m-{i}", RATE)
                              for i in PLAN])
    loads = [sum(rates[p] for p in PLAN[i]) for i in PLAN]
    rec = Recommendation(
        group=group, version=1, event_ts=int(time.time() * 1000), generation=None,
        triggers={"lag_skew": {}}, assignor="balanced",
        assignment=[{"member_id": ids[f"m-{i}"], "instance_id": None, "client_id": f"m-{i}",
                     "rack": "abc"[i], "partitions": [[topic, p] for p in PLAN[i]]} for i in PLAN],
        before={"max_member_lag": 0, "imbalance": None, "cross_rack_partitions": 0},
        after={"max_member_lag": 0, "imbalance": max(loads) / (sum(loads) / len(loads)),
               "cross_rack_partitions": 0},
        lower_bound=None, partitions_moved=PARTITIONS, lag_moved=0, stuck_partitions=[],
        load_model=model)
    producer = kafka_clients.producer(cfg)
    try:
        value = json.dumps(rec.feed_message()).encode()
        producer.send(cfg.kafka.trigger_topic, key=group.encode(), value=value).get(30)
    finally:
        producer.close()
    return {f"m-{i}": {(topic, p) for p in PLAN[i]} for i in PLAN}


# -- the rolling restart ---------------------------------------------------------------------------


@dataclasses.dataclass
class Rolling:
    """The group being migrated: its live member per index, every process started, the lag
    monitor."""

    cfg: config.Config
    classes: str
    group: str
    topic: str
    wanted: dict[str, set[TP]]
    live: dict[int, Member] = dataclasses.field(default_factory=dict)
    started: list[Member] = dataclasses.field(default_factory=list)
    wall0: float = 0.0
    """time.time() at t0: broker log lines are in wall-clock time."""
    monitor: Any = None
    """The collector's :class:`~streaming.dev.demo.monitor.GroupMonitor` of the group, once
    producing started."""
    t0: float = 0.0

    def start(self, index: int, protocol: str) -> Member:
        m = Member(self.classes, self.cfg.kafka.bootstrap_servers, self.group, self.topic, index,
                   protocol, self.cfg.kafka.trigger_topic)
        self.live[index] = m
        self.started.append(m)
        return m

    def held(self) -> dict[str, set[TP]]:
        return {m.client_id: m.assignment() for m in self.live.values()}

    def settled(self) -> bool:
        """The members hold the recommendation, and (a consumer group) Kafka's target and current
        assignment are it, with no nudge member in the group."""
        if self.held() != self.wanted:
            return False
        d = described(self.cfg.kafka.bootstrap_servers, self.group)
        return not d.get("members") or (by_client(d, "assignment") == self.wanted
                                        and by_client(d, "target_assignment") == self.wanted)

    def epoch(self) -> int:
        """The consumer group's epoch; before the conversion the classic generation the members run
        (the converted group's epoch goes on from it)."""
        d = described(self.cfg.kafka.bootstrap_servers, self.group)
        if d.get("members"):
            return int(d["group_epoch"])
        return max(m.generation or 0 for m in self.live.values())


def _restart(run: Rolling, index: int) -> dict:
    """Stop member ``index`` (classic), start it again on the consumer protocol; when was what, once
    settled."""
    epoch = run.epoch()
    t_stop = time.monotonic()
    run.live[index].stop()
    run.start(index, "consumer")
    t_started = time.monotonic()
    converted = None
    if index == 0:  # the first KIP-848 member's join converts the group
        wait_for(lambda: group_type(run.cfg.kafka.bootstrap_servers, run.group) == "consumer", 60,
                 0.2, "the group converted to a consumer group")
        converted = time.monotonic() - t_started
    wait_for(run.settled, 90, 0.5,
             f"the group holding the recommendation after member {index} restarted")
    t_settled = time.monotonic()
    after = run.epoch()
    return {"member": index, "stop": t_stop, "started": t_started, "settled": t_settled,
            "converted_s": converted, "rebalances": after - epoch}


def _stop_all(run: Rolling) -> None:
    for m in run.started:
        m.stop()


def _timeline(run: Rolling, steps: list[dict], owned: dict[int, list],
              broker_log: str) -> list[str]:
    """One line per restart; fills in each step's partitions moved, longest unowned time and max
    lag."""
    leader = [line for m in run.started for line in m.logs]
    lines = []
    for s in steps:
        s["moved"] = ownership.moves(owned, s["stop"], s["settled"])
        s["unowned_s"] = max(ownership.unowned(iv, s["stop"], s["settled"])
                             for iv in owned.values())
        lags = [x.max_lag for x in run.monitor.window(s["stop"] - run.t0, s["settled"] - run.t0)]
        s["max_lag"] = max(lags, default=None)
        wall = (run.wall0 + s["stop"] - run.t0, run.wall0 + s["settled"] - run.t0)
        s["decisions"] = ownership.decisions(run.group, leader, broker_log,
                                             (s["stop"], s["settled"]), wall)
        converted = ("" if s["converted_s"] is None
                     else f", the group converted {s['converted_s']:.1f}s after that")
        lines.append(f"m-{s['member']}: stopped at {s['stop'] - run.t0:.1f}s, restarted on the "
                     f"consumer protocol {s['started'] - s['stop']:.1f}s later{converted}, the "
                     f"recommendation held again at {s['settled'] - run.t0:.1f}s: "
                     f"{s['rebalances']} rebalance(s) (epoch bumps), {s['moved']} partition(s) "
                     f"moved, longest unowned {s['unowned_s']:.1f}s, max consumer lag "
                     f"{s['max_lag']}; assignments: {', '.join(s['decisions'])}")
    return lines


@pytest.mark.integration
def test_a_classic_group_moves_to_kip848_by_a_rolling_restart_online(assignor_cluster, tmp_path):
    from streaming.dev.demo.loop import CollectorThread
    from streaming.dev.demo.monitor import GroupMonitor
    from streaming.dev.workload import Workload, WorkloadOptions

    bootstrap = assignor_cluster.bootstrap_servers
    base = config.load()
    cfg = dataclasses.replace(base, kafka=dataclasses.replace(base.kafka,
                                                              bootstrap_servers=bootstrap))
    kafka_clients.ensure_rebalancer_topics(cfg)
    group = f"migrate-{uuid.uuid4().hex[:6]}"
    kafka_clients.ensure_topics(cfg, {group: {"num_partitions": PARTITIONS,
                                              "replication_factor": 1}})
    run = Rolling(cfg, _compile(tmp_path / "classes"), group, group, {})
    with contextlib.ExitStack() as cleanup:
        cleanup.callback(_stop_all, run)
        for i in PLAN:
            run.start(i, "classic")
        everything = {(group, p) for p in range(PARTITIONS)}
        wait_for(lambda: all(run.held().values())
                 and set().union(*run.held().values()) == everything, 120, 0.5,
                 "the classic group formed")
        assert group_type(bootstrap, group) == "classic"
        run.wanted = _recommend(cfg, group, group)
        wait_for(lambda: run.held() == run.wanted, 60, 0.5,
                 "the classic group holding the recommendation")
        load = Workload(cfg, WorkloadOptions(topic=group, group=f"{group}-producer",
                                             partitions=PARTITIONS, produce_rate=PRODUCE, zipf=1.0,
                                             consumers=0, replication_factor=1),
                        out=None).start()
        cleanup.callback(load.stop)
        run.t0, run.wall0 = time.monotonic(), time.time()
        run.monitor = GroupMonitor(group, run.t0)
        cleanup.callback(CollectorThread(cfg, [run.monitor], interval_s=1.0,
                                         publish=False).start().stop)
        wait_for(lambda: len(run.monitor.samples) >= 3, 30, 0.5, "lag samples before the restarts")
        steps = [_restart(run, i) for i in PLAN]
        final = described(bootstrap, group)
        load.stop()
        ends = end_offsets(bootstrap, group, PARTITIONS)
        wait_for(lambda: all(ownership.read_counts(run.started, p).keys() >= set(range(ends[p]))
                             for p in ends), 60,
                 0.5, "every record read")
    owned = ownership.owned(run.started, time.monotonic())
    log = assignor_cluster.nodes[0].log_file.read_text(errors="replace")
    twice = {p: sum(c - 1 for c in ownership.read_counts(run.started, p).values())
             for p in range(PARTITIONS)}
    print("\n".join(["migration timeline:", *_timeline(run, steps, owned, log),
                     f"records: {sum(ends.values()):,} produced, every one read; read twice: "
                     f"{twice}"]))
    # converted, on the server-side assignor, holding the recommendation, by Kafka's own account
    assert group_type(bootstrap, group) == "consumer" and final["assignor_name"] == "rebalancer"
    # every member on the consumer protocol
    assert [m["member_type"] for m in final["members"]] == [1, 1, 1]
    assert by_client(final, "assignment") == by_client(final, "target_assignment") == run.wanted
    assert f"[GroupId {group}] Converted the classic group to a consumer group" in log
    assert f"Cannot upgrade classic group {group}" not in log
    # online: never a partition without an owner for long; at-least-once, duplicates only where
    # partitions moved
    since, until = steps[0]["stop"], steps[-1]["settled"]
    longest = max(ownership.unowned(iv, since, until) for iv in owned.values())
    assert longest <= UNOWNED_BOUND_S, [s["unowned_s"] for s in steps]
    for p in range(PARTITIONS):
        counts = ownership.read_counts(run.started, p)
        assert set(range(ends[p])) <= counts.keys(), f"partition {p}: records never read"
        moved = ownership.handovers(owned[p])
        assert twice[p] <= moved * DUPLICATES_PER_HANDOVER, (p, twice[p], moved)

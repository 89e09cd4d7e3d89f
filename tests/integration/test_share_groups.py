"""A share group (KIP-932) on the shared 3-broker cluster as the project reads it (#29): two Java
share consumers (kafka-clients' ``KafkaShareConsumer``, tests/java/ShareMember.java) each accept a
few records of a backlog and stop. The broker's share-partition lag (KIP-1226) is what they left;
``describe`` (table and JSON) shows the group's members and share-partitions as Kafka's own
``kafka-share-groups --describe --members --verbose`` / ``--offsets --verbose`` report them; the
collector publishes that lag and no members event; the job's per-group step keeps the lag and
decides nothing; the collector's metrics show it."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

import pytest
from kafka.admin import ConfigResource, ConfigResourceType

from streaming import jvm
from streaming.collector import Collector, CollectorOptions
from streaming.collector.collector import admin_factory
from streaming.contracts import events as ev
from streaming.contracts import serving
from streaming.dev.java_process import JavaProcess
from streaming.exporter import CollectorExport
from streaming.policy.recommend import process
from streaming.state.group_state import GroupState

from .conftest import topic_with_records
from .java_client import compile_java, parse_assignment, parse_table, share_groups, wait_for

FIXTURE = Path(__file__).parents[1] / "data" / "share_group_protocol.json"
PARTITIONS, PER_PARTITION, BUDGET = 3, 60, 25
"""The topic's partitions, the records of each, the records each member accepts."""


@pytest.fixture(scope="module")
def classes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    jvm.resolve()
    return compile_java(tmp_path_factory.mktemp("share-classes"), ["ShareMember.java"],
                        jvm.kafka_classpath())


@pytest.mark.java
def test_the_unit_tests_share_group_bytes_are_what_java_writes(classes):
    cmd = [jvm.java_executable(), "-Xmx64m", "-cp", f"{classes}:{jvm.kafka_classpath()}",
           "ShareMember", "protocol"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=120).stdout
    assert json.loads(out) == json.loads(FIXTURE.read_text())


def _member(classes: Path, bootstrap: str, group: str, topic: str, client_id: str,
            logs: Path) -> JavaProcess:
    """A ShareMember; what it prints and its stderr go to ``logs/<client id>.log``."""
    return JavaProcess([jvm.java_executable(), "-Xmx128m",
                        "-cp", f"{classes}:{jvm.kafka_classpath()}",
                        "ShareMember", bootstrap, group, topic, client_id, str(BUDGET)], client_id,
                       log=(logs / f"{client_id}.log").open("w"))


def _accepted(members: list[JavaProcess]) -> dict[tuple[str, int], int] | None:
    """What the members accepted of each partition, once both are done
    (``done N t-0:12,t-2:13``)."""
    done = [line for m in members for line in m.output() if line.startswith("done ")]
    if len(done) < len(members):
        return None
    out: dict[tuple[str, int], int] = {}
    for line in done:
        for cell in line.split()[2].split(","):  # a member done accepted something
            tp, n = cell.rsplit(":", 1)
            topic, p = tp.rsplit("-", 1)
            out[(topic, int(p))] = out.get((topic, int(p)), 0) + int(n)
    return out


def _cli(cfg, capsys, group: str, *args: str) -> str:
    from streaming.cli import main

    capsys.readouterr()
    assert main(["describe", "--bootstrap", cfg.kafka.bootstrap_servers, "--group", group,
                 "--lag-seconds-timeout", "0", "--conf", f"paths.tables={cfg.paths.tables}",
                 *args]) == 0
    return capsys.readouterr().out


@pytest.mark.integration
def test_a_share_group_as_kafka_share_groups_reports_it(cfg, classes, capsys, tmp_path):
    suffix = uuid.uuid4().hex[:6]
    topic, group = f"share-in-{suffix}", f"share-{suffix}"
    bootstrap = cfg.kafka.bootstrap_servers
    admin = admin_factory(cfg)()
    # the backlog is there before the group: it starts at the log's beginning, not at its end (the
    # default)
    assert admin.alter_configs([ConfigResource(ConfigResourceType.GROUP, group, configs={
        "share.auto.offset.reset": "earliest"})], raise_on_unknown=False) \
        == {"group": {group: "OK"}}
    topic_with_records(cfg, topic, PARTITIONS, PARTITIONS * PER_PARTITION)
    members = [_member(classes, bootstrap, group, topic, f"share-{i}-{suffix}", tmp_path)
               for i in range(2)]
    export = CollectorExport(cfg.with_overrides({"metrics.enabled": "true",
                                                 "metrics.collector_port": "0"}))
    collector = Collector(cfg, CollectorOptions(include=f"^{group}$"), out=None, export=export)
    try:
        accepted = wait_for(lambda: _accepted(members), 90, 0.5, "both members' budgets spent")
        assert sum(accepted.values()) == 2 * BUDGET
        # what Kafka 4.3.1 serves: ShareGroupDescribe v1 only, DescribeShareGroupOffsets v0-1 (v1
        # has the lag)
        assert {k: admin._manager.broker_version_data.api_versions[k] for k in (77, 90)} \
            == {77: (1, 1), 90: (0, 1)}

        said = {what: share_groups(bootstrap, "--describe", "--group", group, *args, "--verbose")
                for what, args in (("members", ("--members",)), ("offsets", ("--offsets",)))}
        print(*said.values(), sep="\n")  # shown when an assertion fails
        tool_members, tool_offsets = parse_table(said["members"]), parse_table(said["offsets"])
        assert len(tool_members) == 2 and len(tool_offsets) == PARTITIONS
        # the broker's lag is what the members left: a partition's records less those accepted; a
        # share-partition nobody acknowledged anything of has no state yet, and no lag
        lag = {(r["TOPIC"], int(r["PARTITION"])): int(r["LAG"]) for r in tool_offsets if r["LAG"]}
        assert lag and lag == {tp: PER_PARTITION - accepted.get(tp, 0) for tp in lag}
        assert not {tp for tp in accepted if accepted[tp]} - set(lag)

        _assert_describe_as_the_tool(cfg, capsys, group, tool_members, tool_offsets)
        _assert_collector_lag_state_and_metrics(cfg, collector, export, group, topic, lag)
    finally:
        for m in members:
            m.stop()
        collector.close()
        admin.close()


def _assert_describe_as_the_tool(cfg, capsys, group: str, tool_members: list[dict],
                                 tool_offsets: list[dict]):
    out = json.loads(_cli(cfg, capsys, group, "--format", "json"))
    (g,) = out["groups"]
    assert (g["group_protocol"], g["serving"]["kind"], g["serving"]["published"]) \
        == ("share", "lag_only", False)
    assert "KIP-932" in g["serving"]["reason"] and g["recommendation_version"] is None
    ours = {m["consumer_id"]: m for m in g["members"]}
    assert set(ours) == {r["CONSUMER-ID"] for r in tool_members}
    for r in tool_members:
        m = ours[r["CONSUMER-ID"]]
        assert (m["group"], m["host"], m["client_id"], m["partitions"], m["member_epoch"]) == (
            r["GROUP"], r["HOST"].lstrip("/"), r["CLIENT-ID"], int(r["#PARTITIONS"]),
            int(r["MEMBER-EPOCH"]))
        assert {tuple(tp) for tp in m["assignment"]} == parse_assignment(r["ASSIGNMENT"])
    assert [(p["group"], p["topic"], p["partition"], p["leader_epoch"], p["start_offset"], p["lag"])
            for p in g["partitions"]] == [
        (r["GROUP"], r["TOPIC"], int(r["PARTITION"]),
         *(int(r[c]) if r[c] else None for c in ("LEADER-EPOCH", "START-OFFSET", "LAG")))
        for r in tool_offsets]
    # the tables: the tool's columns, cell for cell (HOST without Java's leading slash)
    for args, tool in ((("--members",), tool_members), ((), tool_offsets)):
        table = parse_table(_cli(cfg, capsys, group, *args))
        key = "CONSUMER-ID" if args else "PARTITION"
        by_key = {r[key]: r for r in table}
        for r in tool:
            assert {c: by_key[r[key]][c] for c in r} \
                == r | ({"HOST": r["HOST"].lstrip("/")} if args else {})


def _assert_collector_lag_state_and_metrics(cfg, collector: Collector, export: CollectorExport,
                                            group: str, topic: str,
                                            lag: dict[tuple[str, int], int]):
    evs = collector.poll_once()
    assert collector.last_snapshot.groups[group].serving.kind == serving.LAG_ONLY
    readings = [r for e in evs if e["type"] in ev.LAG_TYPES for r in ev.readings(e)]
    assert {(r["topic"], r["partition"]): r["end_offset"] - r["committed_offset"]
            for r in readings} == lag
    # the job never gets members to decide from
    assert not [e for e in evs if e["type"] == "members"]
    assert {e["type"] for e in evs} == {ev.LAG_DENSE, ev.PARTITIONS}
    # the job's per-group step (what applyInPandasWithState runs) on these events: the lag kept,
    # nothing decided
    state = GroupState(group)
    assert process(state, [*readings, *(e for e in evs if e["type"] == "partitions")],
                   cfg.policy) == []
    hist = state.lag[topic]
    assert {(topic, p): n for p, n in zip(hist.ids.tolist(), hist.latest_lag().tolist(),
                                          strict=True)} == lag
    sample = export.metrics.registry.get_sample_value
    assert sample("kafka_rebalancer_group_topic_lag_records",
                  {"group": group, "topic": topic}) == sum(lag.values())
    assert sample("kafka_rebalancer_group_members", {"group": group}) == 2

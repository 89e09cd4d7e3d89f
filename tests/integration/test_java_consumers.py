"""Java consumers on the shared 3-broker cluster: a classic group and a KIP-848 group
(``group.protocol=consumer``), both with ``client.rack``, as the collector sees them and as Kafka's
own ``kafka-consumer-groups --describe --members --verbose`` reports them."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from streaming.collector import Collector, CollectorOptions
from streaming.kafka_clients import factories as kafka_clients

from .java_client import (
    JavaMember,
    compile_member,
    consumer_groups,
    java,
    parse_assignment,
    parse_table,
    wait_for,
)

FIXTURE = Path(__file__).parents[1] / "data" / "java_consumer_protocol.json"


@pytest.fixture(scope="module")
def classes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return compile_member(tmp_path_factory.mktemp("java-classes"))


@pytest.mark.java
def test_the_unit_tests_java_bytes_are_what_java_writes(classes):
    assert json.loads(java(classes, "protocol")) == json.loads(FIXTURE.read_text())


def _members_event(collector: Collector, group: str, partitions: set[tuple[str, int]], size: int):
    """The collector's latest members event for ``group`` once it shows ``size`` members holding
    ``partitions`` (the collector emits one on every change, so the latest one emitted is the group
    as it is)."""
    latest: dict = {}

    def check():
        for e in collector.poll_once():
            if e["type"] == "members" and e["group"] == group:
                latest["event"] = e
        e = latest.get("event")
        if e and len(e["members"]) == size and \
                sorted((t, int(p)) for m in e["members"]
                       for t, p in m["assigned"]) == sorted(partitions):
            return e
        return None
    return wait_for(check, 120, 1.0, f"a settled members event of {group}")


@pytest.mark.integration
def test_classic_and_kip848_java_groups_as_kafka_consumer_groups_reports_them(cfg, classes):
    suffix = uuid.uuid4().hex[:6]
    topic = f"java-orders-{suffix}"
    kafka_clients.ensure_topics(cfg, {topic: {"num_partitions": 6, "replication_factor": 3}})
    everything = {(topic, p) for p in range(6)}
    bootstrap = cfg.kafka.bootstrap_servers
    groups = {"classic": f"java-classic-{suffix}", "consumer": f"java-kip848-{suffix}"}
    members = {
        "classic": [JavaMember(classes, bootstrap, groups["classic"], topic, "classic", "a",
                               f"cl-a-{suffix}", instance_id=f"static-{suffix}"),
                    JavaMember(classes, bootstrap, groups["classic"], topic, "classic", "b",
                               f"cl-b-{suffix}")],
        "consumer": [JavaMember(classes, bootstrap, groups["consumer"], topic, "consumer", "b",
                                f"co-b-{suffix}"),
                     JavaMember(classes, bootstrap, groups["consumer"], topic, "consumer", "c",
                                f"co-c-{suffix}", instance_id=f"static-{suffix}")],
    }
    collector = Collector(cfg, CollectorOptions(include=f"-{suffix}$", interval_s=1.0,
                                                client_rack_pattern=None), out=None)
    try:
        for kind, group_members in members.items():
            wait_for(lambda gm=group_members: all(m.assignment() for m in gm)
                     and set().union(*(m.assignment() for m in gm)) == everything, 120, 0.5,
                     f"the {kind} Java members sharing all six partitions")
        for kind, group in groups.items():
            event = _members_event(collector, group, everything, 2)
            by_client = {m["client_id"]: m for m in event["members"]}
            assert event["group_protocol"] == kind
            # what the Java clients themselves hold and were configured with
            for jm in members[kind]:
                m = by_client[jm.client_id]
                assert {(t, int(p)) for t, p in m["assigned"]} == jm.assignment()
                assert m["rack"] == jm.rack
                assert m["instance_id"] == jm.instance_id
                assert m["topics"] == [topic]
            # what Kafka's own tool reports
            rows = parse_table(consumer_groups(bootstrap, "--describe", "--group", group,
                                               "--members", "--verbose"))
            tool = {r["CLIENT-ID"]: r for r in rows}
            assert set(tool) == set(by_client)
            for client_id, r in tool.items():
                m = by_client[client_id]
                assert r["CONSUMER-ID"] == m["member_id"]
                assert r["HOST"].lstrip("/") == m["host"]
                assert (r["GROUP-INSTANCE-ID"] or None) == m["instance_id"]
                assert parse_assignment(r["CURRENT-ASSIGNMENT"]) == {(t, int(p))
                                                                     for t, p in m["assigned"]}
                # the tool shows epochs and the target only for KIP-848 groups
                if kind == "consumer":
                    assert int(r["CURRENT-EPOCH"]) == m["member_epoch"]
                    assert parse_assignment(r["TARGET-ASSIGNMENT"]) \
                        == {(t, int(p)) for t, p in m["target_assigned"]}
                else:
                    assert "member_epoch" not in m and r["CURRENT-EPOCH"] == ""
            if kind == "consumer":
                state = parse_table(consumer_groups(bootstrap, "--describe", "--group", group,
                                                    "--state", "--verbose"))
                assert int(state[0]["GROUP-EPOCH"]) == event["generation"]
    finally:
        for group_members in members.values():
            for jm in group_members:
                jm.stop()
        collector.close()


def _describe(bootstrap: str, tables: Path, group: str) -> dict:
    out = subprocess.run([sys.executable, "-m", "streaming.cli", "describe", "--group", group,
                          "--members", "--format", "json", "--bootstrap", bootstrap,
                          "--lag-seconds-timeout", "0", "--conf", f"paths.tables={tables}"],
                          capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    (g,) = json.loads(out.stdout)["groups"]
    return g


@pytest.mark.integration
def test_describe_shows_a_kip848_groups_epochs_as_kafka_consumer_groups_does(cfg, classes,
                                                                              tmp_path):
    """KIP-1099's columns: the tool's GROUP-EPOCH and TARGET-ASSIGNMENT-EPOCH
    (``--state --verbose``) and each member's CURRENT-EPOCH and TARGET-EPOCH
    (``--members --verbose``) are describe's, read while the group holds still (the same epochs
    before and after the tool's reads); every member then runs its target: none converging."""
    suffix = uuid.uuid4().hex[:6]
    topic, group = f"java-epochs-{suffix}", f"java-epochs-{suffix}"
    kafka_clients.ensure_topics(cfg, {topic: {"num_partitions": 6, "replication_factor": 3}})
    bootstrap = cfg.kafka.bootstrap_servers
    members = [JavaMember(classes, bootstrap, group, topic, "consumer", r, f"ep-{r}-{suffix}")
               for r in "abc"]
    try:
        wait_for(lambda: all(m.assignment() for m in members), 120, 0.5,
                 "three KIP-848 members assigned")

        def read_still():
            before = _describe(bootstrap, tmp_path, group)
            state = parse_table(consumer_groups(bootstrap, "--describe", "--group", group,
                                                "--state", "--verbose"))
            rows = parse_table(consumer_groups(bootstrap, "--describe", "--group", group,
                                               "--members", "--verbose"))
            after = _describe(bootstrap, tmp_path, group)
            epochs = lambda g: (g["group_epoch"], g["target_assignment_epoch"],  # noqa: E731
                                sorted((m["consumer_id"], m["member_epoch"]) for m in g["members"]))
            settled = not any(m["converging"] for m in after["members"])
            still = epochs(before) == epochs(after) and settled
            return (before, state, rows, after) if still else None

        ours, state, rows, _ = wait_for(read_still, 120, 1.0,
                                        "the group holding still through both reads")
        shown = subprocess.run([sys.executable, "-m", "streaming.cli", "describe", "--group", group,
                                "--members", "--bootstrap", bootstrap,
                                "--conf", f"paths.tables={tmp_path}"],
                               capture_output=True, text=True, timeout=120)
        print(shown.stdout, consumer_groups(bootstrap, "--describe", "--group", group, "--members",
                                            "--verbose"))
        assert ours["group_protocol"] == "consumer"
        assert int(state[0]["GROUP-EPOCH"]) == ours["group_epoch"]
        assert int(state[0]["TARGET-ASSIGNMENT-EPOCH"]) == ours["target_assignment_epoch"]
        tool = {r["CONSUMER-ID"]: r for r in rows}
        assert set(tool) == {m["consumer_id"] for m in ours["members"]}
        for m in ours["members"]:
            r = tool[m["consumer_id"]]
            assert int(r["CURRENT-EPOCH"]) == m["member_epoch"]
            assert int(r["TARGET-EPOCH"]) == ours["target_assignment_epoch"]
            assert parse_assignment(r["TARGET-ASSIGNMENT"]) == {(t, int(p)) for t, p in m["target"]}
            assert m["converging"] is False
    finally:
        for m in members:
            m.stop()

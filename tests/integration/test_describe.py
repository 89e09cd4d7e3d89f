"""``rebalancer describe`` and ``rebalancer verify`` against a live group on the 3-broker cluster
(racks a, b, c): describe's columns equal what Kafka's own ``kafka-consumer-groups --describe``
reports for the same paused group, its racks follow the topic's replicas, and verify tells applied,
pending, diverged and superseded recommendations apart (each with its exit status)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import subprocess
import sys
import time
import uuid

import pytest

from streaming import config
from streaming.contracts.tables import RECOMMENDATIONS, RECOMMENDATIONS_DDL
from streaming.dev.workload import Workload, WorkloadOptions
from streaming.operations import delta_tables

from .java_client import consumer_groups, parse_table

pytestmark = [pytest.mark.integration, pytest.mark.java]

COMPARED = ("CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "CLIENT-ID")


@pytest.fixture(scope="module")
def paused(cfg, tmp_path_factory):
    """A group of two consumers (racks a and b) on a 6-partition topic, paused: offsets stay put."""
    name = f"describe-{uuid.uuid4().hex[:6]}"
    work = tmp_path_factory.mktemp("describe")
    dc = dataclasses.replace(cfg, paths=config.PathSettings(checkpoints=str(work / "cp"),
                                                            tables=str(work / "t")))
    opts = WorkloadOptions(topic=name, group=name, partitions=6, replication_factor=2,
                           produce_rate=400, zipf=1.2, consumers=2, consume_rate=60,
                           racks=("a", "b"))
    started = time.time()
    with Workload(cfg, opts, out=None) as w:
        assert w.wait_assigned(120)
        # every partition committed once before the pause: its lag, and so its age, is known (paused
        # at once, a member that had committed nothing yet showed no lag seconds at all)
        assert _wait_committed(cfg, name, opts.partitions, 120)
        w.pause()
        yield dc, name, started, time.time()


def _wait_committed(cfg, group: str, partitions: int, timeout_s: float) -> bool:
    from streaming.kafka_clients import factories as kafka_clients

    admin = kafka_clients.admin(cfg)
    try:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            offsets = admin.list_group_offsets({group: None}).get(group, {})
            if sum(1 for o in offsets.values() if o is not None and o.offset is not None
                   and o.offset >= 0) \
                    >= partitions:
                return True
            time.sleep(0.2)
        return False
    finally:
        admin.close()


def cli(dc, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "streaming.cli", *args, "--bootstrap", dc.kafka.bootstrap_servers,
         "--conf", f"paths.tables={dc.paths.tables}"], capture_output=True, text=True, timeout=120)


def describe_json(dc, group: str) -> dict:
    out = cli(dc, "describe", "--group", group, "--format", "json")
    assert out.returncode == 0, out.stderr
    (g,) = json.loads(out.stdout)["groups"]
    return g


def test_describe_shows_what_kafka_consumer_groups_shows(paused):
    dc, group, *_ = paused
    ours = cli(dc, "describe", "--group", group)
    assert ours.returncode == 0, ours.stderr
    print(ours.stdout)
    theirs = parse_table(consumer_groups(dc.kafka.bootstrap_servers, "--describe",
                                         "--group", group))
    mine = parse_table(ours.stdout)
    assert len(mine) == len(theirs) == 6
    key = lambda r: (r["TOPIC"], int(r["PARTITION"]))  # noqa: E731
    for a, b in zip(sorted(mine, key=key), sorted(theirs, key=key), strict=True):
        assert key(a) == key(b)
        assert {c: a[c] for c in COMPARED} == {c: b[c] for c in COMPARED}
        assert a["HOST"] == b["HOST"].lstrip("/")
    assert sum(int(r["LAG"] or 0) for r in mine) > 0, \
        "a workload that lags, so LAG compares something"

    members = parse_table(cli(dc, "describe", "--group", group, "--members").stdout)
    tool = parse_table(consumer_groups(dc.kafka.bootstrap_servers, "--describe", "--group", group,
                                       "--members"))
    assert {(r["CONSUMER-ID"], r["CLIENT-ID"], r["#PARTITIONS"]) for r in members} == \
        {(r["CONSUMER-ID"], r["CLIENT-ID"], r["#PARTITIONS"]) for r in tool}


def test_describe_racks_follow_replicas_and_the_client_rack(paused):
    from streaming.kafka_clients import factories as kafka_clients

    dc, group, *_ = paused
    g = describe_json(dc, group)
    admin = kafka_clients.admin(dc)
    try:
        racks = {b["broker_id"]: b["rack"] for b in admin.describe_cluster()["brokers"]}
        (topic,) = admin.describe_topics([group])
    finally:
        admin.close()
    replicas = {p["partition_index"]: [racks[r] for r in p["replica_nodes"]]
                for p in topic["partitions"]}
    for p in g["partitions"]:
        assert p["replica_racks"] == replicas[p["partition"]]
        assert p["rack"] == p["client_id"].rsplit("-rack-", 1)[1]  # the workload's naming
        assert p["cross_rack"] == (p["rack"] not in p["replica_racks"])
    assert {m["rack"] for m in g["members"]} == {"a", "b"}
    assert sum(m["lag"] for m in g["members"]) == sum(p["lag"] or 0 for p in g["partitions"])


def test_lag_seconds_is_the_age_of_the_record_at_the_committed_offset(paused):
    """Paused: each lagging partition's record at its committed offset was written after the
    workload started and before it paused, so its age lies between the two, and grows with wall time
    from one describe to the next by the time between them; no lag, 0 s. A member's is the max of
    its partitions'."""
    dc, group, started, paused_at = paused
    before = time.time()
    first = describe_json(dc, group)
    between = time.time()
    time.sleep(2)
    again = time.time()
    second = describe_json(dc, group)
    after = time.time()
    lagging = [p for p in first["partitions"] if p["lag"]]
    assert lagging, "a workload that lags, so LAG-SECONDS measures something"
    for p in first["partitions"]:
        if not p["lag"]:  # no lag 0 s; never committed (lag unknown), unknown
            assert p["lag_seconds"] == (None if p["lag"] is None else 0.0)
            continue
        assert before - paused_at - 0.01 <= p["lag_seconds"] <= between - started + 0.01
    for a, b in zip(first["partitions"], second["partitions"], strict=True):
        if a["lag"]:
            # the record is the same one (paused): only the reading time moved, by between 2 s and
            # the span
            assert again - between - 0.01 <= b["lag_seconds"] - a["lag_seconds"] \
                <= after - before + 0.01
    for m in first["members"]:
        parts = [p for p in first["partitions"] if p["consumer_id"] == m["consumer_id"]]
        mine = [p["lag_seconds"] for p in parts if p["lag_seconds"] is not None and p["lag"]]
        # the max of its lagging partitions'; 0 when all are at 0, unknown when one never committed
        assert m["lag_seconds"] == (max(mine) if mine else 0.0 if all(p["lag"] == 0 for p in parts)
                                    else None)
    table = parse_table(cli(dc, "describe", "--group", group).stdout)
    assert {r["LAG-SECONDS"] != "" for r in table if r["LAG"]} == {True}  # "-" only where LAG is
    unread = parse_table(cli(dc, "describe", "--group", group, "--lag-seconds-timeout", "0").stdout)
    assert {r["LAG-SECONDS"] for r in unread if int(r["LAG"] or 0) > 0} == {""}  # not read: "-"


def _rec(group: str, version: int, owners: dict[str, list[tuple[str, int]]],
         members: dict[str, dict], age_s: float) -> dict:
    entries = [{"member_id": mid, "instance_id": None,
                "client_id": members.get(mid, {}).get("client_id", mid),
                "rack": members.get(mid, {}).get("rack"),
                "partitions": [{"topic": t, "partition": p} for t, p in tps]}
                for mid, tps in owners.items()]
    return {"batch_id": version, "group": group, "version": version,
            "recommendation_id": f"rec-{version}",
            "event_time": dt.datetime.now() - dt.timedelta(seconds=age_s), "generation": version,
            "triggers": ["lag_skew"], "trigger_details": "{}", "assignor": "balanced",
            "assignment": entries, "before_max_lag": 1, "after_max_lag": 1, "before_imbalance": 1.0,
            "after_imbalance": 1.0, "lower_bound": 1.0, "before_cross_rack": 0,
            "after_cross_rack": 0, "partitions_moved": 0, "lag_moved": 0, "stuck_partitions": []}


@pytest.fixture
def running(cfg, spark, tmp_path):
    """A group of two consumers that keep polling (a paused consumer leaves after
    max.poll.interval.ms)."""
    name = f"verify-{uuid.uuid4().hex[:6]}"
    dc = dataclasses.replace(cfg, paths=config.PathSettings(checkpoints=str(tmp_path / "cp"),
                                                            tables=str(tmp_path / "t")))
    opts = WorkloadOptions(topic=name, group=name, partitions=6, replication_factor=2,
                           produce_rate=100, consumers=2, consume_rate=200, racks=("a", "b"))
    with Workload(cfg, opts, out=None) as w:
        assert w.wait_assigned(120)
        yield dc, name


def test_verify_tells_applied_pending_diverged_superseded(running, spark):
    dc, group = running
    out = cli(dc, "verify", group)
    assert out.returncode == 6, out.stdout + out.stderr  # no table, no recommendation

    delta_tables.prepare(spark, dc, dc.checkpoint_path("rebalancer"))
    g = describe_json(dc, group)
    members = {m["consumer_id"]: m for m in g["members"]}
    live: dict[str, list[tuple[str, int]]] = {mid: [] for mid in members}
    for p in g["partitions"]:
        if p["consumer_id"] is not None:
            live[p["consumer_id"]].append((p["topic"], p["partition"]))
    a, b = sorted(live)
    swapped = {a: live[a][1:] + live[b][:1], b: live[b][1:] + live[a][:1]}
    schema = spark.createDataFrame([], RECOMMENDATIONS_DDL).schema
    location = dc.table_path(RECOMMENDATIONS)
    cases = [
        (live, 60.0, 0, "applied"),
        (swapped, 5.0, 3, "pending"),
        (swapped, 3600.0, 4, "diverged"),
        ({**live, "gone-member": []}, 5.0, 5, "superseded"),
    ]
    for version, (owners, age_s, status, word) in enumerate(cases, start=1):
        row = _rec(group, version, owners, members, age_s)
        spark.createDataFrame([row], schema).write.format("delta").mode("append").save(location)
        out = cli(dc, "verify", group)
        print(out.stdout)
        assert out.returncode == status, out.stdout + out.stderr
        assert f"\n{word}: " in out.stdout
        if word == "diverged":
            moved = sorted(f"{t}-{p}" for t, p in (live[a][:1] + live[b][:1]))
            assert [ln.split()[0] for ln in out.stdout.splitlines()[2:]] == moved
        if word == "applied":  # describe names the recommended owner: the current one
            g = describe_json(dc, group)
            assert all(p["recommended_owner"] == p["consumer_id"] for p in g["partitions"])
    js = json.loads(cli(dc, "verify", group, "--format", "json").stdout)
    assert js["status"] == "superseded" and "gone-member" in js["reason"]

"""The collector against the shared 3-broker cluster (racks a, b, c), with a live workload."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import uuid

import pytest

from streaming.collector import Collector, CollectorOptions
from streaming.contracts import events as ev
from streaming.dev.workload import Workload, WorkloadOptions
from streaming.kafka_clients import factories as kafka_clients

from .conftest import commit_offsets, env_with, topic_with_records

pytestmark = pytest.mark.integration


@pytest.fixture
def name(request) -> str:
    return f"{request.node.name[5:25].replace('_', '-')}-{uuid.uuid4().hex[:6]}"


def _collector(cfg, group: str, **options) -> Collector:
    return Collector(cfg, CollectorOptions(include=f"^{group}$", interval_s=0.5, **options),
                     out=None)


def _kafka_view(cfg, group: str, topic: str, partitions: int):
    """committed (only committed partitions), end and begin offsets as kafka-python reports them."""
    from kafka import KafkaConsumer, TopicPartition

    admin = kafka_clients.admin(cfg)
    consumer = KafkaConsumer(group_id=None, **kafka_clients.python_client_options(cfg, "consumer"))
    try:
        committed = {tp.partition: om.offset
                     for tp, om in admin.list_group_offsets(group)[group].items()
                     if tp.topic == topic and om.offset >= 0}
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        end = {tp.partition: o for tp, o in consumer.end_offsets(tps).items()}
        begin = {tp.partition: o for tp, o in consumer.beginning_offsets(tps).items()}
    finally:
        consumer.close()
        admin.close()
    return committed, end, begin


def _of(evs, kind, group=None):
    """The events of ``kind``; for ``lag``, the readings of either lag form as ``lag`` events."""
    picked = [e for e in evs if (e["type"] in ev.LAG_TYPES if kind == ev.LAG else e["type"] == kind)
              and (group is None or e["group"] == group)]
    return [r for e in picked for r in ev.readings(e)] if kind == ev.LAG else picked


def _counted(evs):
    """``evs``, once checked that each group's lag events count the group's metadata events of the
    poll (the job waits for them: streaming/state/waiting.py), all written before the lag."""
    for group in {e["group"] for e in evs}:
        mine = [e for e in evs if e["group"] == group]
        meta = [i for i, e in enumerate(mine) if e["type"] not in ev.LAG_TYPES]
        lag = [i for i, e in enumerate(mine) if e["type"] in ev.LAG_TYPES]
        assert {mine[i].get(ev.METADATA_EVENTS, 0) for i in lag} <= {len(meta)}
        assert not meta or not lag or max(meta) < min(lag)
    return evs


def _poll_until(collector: Collector, check, polls: int = 20, pause_s: float = 0.5):
    """Poll until ``check(events)`` returns something truthy; return it."""
    for _ in range(polls):
        found = check(_counted(collector.poll_once()))
        if found:
            return found
        time.sleep(pause_s)
    raise AssertionError(f"nothing matched in {polls} polls")


def test_lag_in_events_equals_kafka_python_for_every_partition_over_several_polls(cfg, name):
    opts = WorkloadOptions(topic=name, group=name, partitions=6, replication_factor=2,
                           produce_rate=600, zipf=1.2, consumers=2, consume_rate=80)
    with Workload(cfg, opts, out=None) as w, _collector(cfg, name, offset_reset="earliest") as c:
        assert w.wait_assigned(120)
        lags = []
        for _ in range(4):
            time.sleep(1.0)
            w.pause()
            try:
                evs = _counted(c.poll_once())
                committed, end, begin = _kafka_view(cfg, name, name, 6)
            finally:
                w.resume()
            lag = {e["partition"]: e for e in _of(evs, "lag", name)}
            assert sorted(lag) == list(range(6)), "one lag event per subscribed partition"
            for p, e in lag.items():
                assert e["topic"] == name and e["end_offset"] == end[p]
                if p in committed:
                    assert (e["committed_offset"], e.get("no_commit", False)) \
                        == (committed[p], False)
                else:  # never committed, earliest policy: counted from the begin offset
                    assert (e["committed_offset"], e["no_commit"]) == (begin[p], True)
                lags.append(e["end_offset"] - e["committed_offset"])
            assert c.last_stats.partitions == 6 and c.last_stats.groups == 1
        assert max(lags) > 0, "the skewed producer should have built some lag"


def test_members_events_follow_a_consumer_joining_and_one_leaving(cfg, name):
    opts = WorkloadOptions(topic=name, group=name, partitions=6, produce_rate=50, consumers=2,
                           consume_rate=0)
    with Workload(cfg, opts, out=None) as w, _collector(cfg, name) as c:
        assert w.wait_assigned(120)

        def members_with(n):
            def check(evs):
                ms = [e for e in _of(evs, "members", name) if len(e["members"]) == n
                      and all(m["assigned"] for m in e["members"])]
                return ms[-1] if ms else None
            return check

        before = _poll_until(c, members_with(2))
        assert {m["rack"] for m in before["members"]} == {"a", "b"}
        assert before["protocol"] == "range"

        joined_worker = w.add_consumer()
        assert w.wait_assigned(120)
        joined = _poll_until(c, members_with(3))
        assert joined["generation"] > before["generation"]
        new = [m for m in joined["members"] if m["client_id"] == joined_worker.client_id]
        assert len(new) == 1 and new[0]["rack"] == "c" and new[0]["topics"] == [name]
        assert sorted(p for m in joined["members"] for _, p in m["assigned"]) == list(range(6))

        w.stop_consumer(joined_worker.client_id)
        assert w.wait_assigned(120)
        left = _poll_until(c, members_with(2))
        assert left["generation"] > joined["generation"]
        assert joined_worker.client_id not in {m["client_id"] for m in left["members"]}


def test_reassignment_to_other_racks_shows_in_a_partitions_event_within_two_polls(cfg, name):
    opts = WorkloadOptions(topic=name, group=name, partitions=3, replication_factor=1,
                           produce_rate=30, consumers=1, consume_rate=0)
    with Workload(cfg, opts, out=None) as w, _collector(cfg, name) as c:
        assert w.wait_assigned(120)
        first = _poll_until(c, lambda evs: _of(evs, "partitions", name))[0]
        old = {p["partition"]: p["replica_racks"] for p in first["partitions"]}
        assert all(len(r) == 1 and r[0] in "abc" for r in old.values())

        w.move_replicas(shift=1)
        seen = []
        for _ in range(2):
            seen += _of(c.poll_once(), "partitions", name)
        assert seen, "no partitions event within two polls of the reassignment"
        new = {p["partition"]: p["replica_racks"] for p in seen[-1]["partitions"]}
        assert all(new[p] != old[p] for p in old), (old, new)
        assert {p["partition"]: p["leader"] for p in seen[-1]["partitions"]} == \
            {p["partition"]: p["replicas"][0] for p in seen[-1]["partitions"]}


def test_a_group_without_members_is_watched_and_stops_when_its_topic_or_itself_goes(cfg, name):
    topic_with_records(cfg, name, 2, 10)
    admin = kafka_clients.admin(cfg)
    try:
        commit_offsets(admin, name, {(name, 0): 2})
        with _collector(cfg, name, group_offset_reset={name: "earliest"}) as c:
            evs = c.poll_once()
            lag = {e["partition"]: (e["committed_offset"], e["end_offset"])
                   for e in _of(evs, "lag", name)}
            assert lag == {0: (2, 5), 1: (0, 5)}
            assert _of(evs, "members", name)[0]["members"] == []
            assert len(_of(evs, "partitions", name)) == 1

            admin.delete_topics([name])
            deadline = time.monotonic() + 30
            while _of(c.poll_once(), "lag", name):
                assert time.monotonic() < deadline, "lag events still flow for a deleted topic"
                time.sleep(0.5)
            admin.delete_groups([name])
            evs = c.poll_once()
            assert not [e for e in evs if e["group"] == name]
            assert name not in c.tracker.groups()
    finally:
        admin.close()


def test_collect_command_publishes_events_keyed_by_group(cfg, name):
    from kafka import KafkaConsumer, TopicPartition

    opts = WorkloadOptions(topic=name, group=name, partitions=4, produce_rate=100, consumers=1,
                           consume_rate=0)
    with Workload(cfg, opts, out=None) as w:
        assert w.wait_assigned(120)
        run = subprocess.run(
            [sys.executable, "-m", "streaming.cli", "collect",
             "--bootstrap", cfg.kafka.bootstrap_servers,
             "--groups", f"^{name}$", "--polls", "2", "--interval", "0.5"],
            capture_output=True, text=True, timeout=120, env=env_with())
    assert run.returncode == 0, run.stderr
    progress = [ln for ln in run.stdout.splitlines() if ln.startswith("poll ")]
    assert len(progress) == 2 and "1 groups, 4 partitions" in progress[0], run.stdout

    consumer = KafkaConsumer(group_id=None, consumer_timeout_ms=3000,
                             **kafka_clients.python_client_options(cfg, "consumer"))
    try:
        got = []
        for topic in (cfg.kafka.lag_topic, cfg.kafka.metadata_topic):
            parts = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic)]
            consumer.assign(parts)
            consumer.seek_to_beginning()
            got += [(r.key.decode(), json.loads(r.value)) for r in consumer
                    if r.key == name.encode()]
    finally:
        consumer.close()
    assert all(k == name == e["group"] for k, e in got)
    kinds = [e["type"] for _, e in got]
    # two polls of one topic's 4 partitions: a lag_dense event each (the default form)
    assert kinds.count(ev.LAG_DENSE) == 2 and len(_of([e for _, e in got], ev.LAG)) == 8
    assert kinds.count("members") >= 1 and kinds.count("partitions") == 1


def test_collector_survives_a_broker_restart_and_resumes(cfg, kafka_cluster, name):
    opts = WorkloadOptions(topic=name, group=name, partitions=6, replication_factor=3,
                           produce_rate=100, consumers=2, consume_rate=0)
    batches: list[tuple[float, list]] = []
    stop = threading.Event()
    errors: list[BaseException] = []
    with Workload(cfg, opts, out=None) as w:
        assert w.wait_assigned(120)
        c = _collector(cfg, name, request_timeout_ms=4000, max_backoff_s=2)
        c.sink = lambda evs: batches.append((time.monotonic(), list(evs)))

        def loop():
            try:
                c.run(stop=stop)
            except BaseException as e:  # the test fails on any escape
                errors.append(e)

        thread = threading.Thread(target=loop, daemon=True)
        thread.start()
        try:
            time.sleep(2)
            assert batches, "no poll before the fault"
            kafka_cluster.stop_broker(2)
            down_at = time.monotonic()
            time.sleep(6)
            assert thread.is_alive() and not errors
        finally:
            kafka_cluster.start_broker(2)
        up_at = time.monotonic()
        try:
            deadline = up_at + 60
            while True:
                after = [evs for t, evs in batches if t > up_at]
                if any(len(_of(evs, "lag", name)) == 6 for evs in after):
                    break
                assert time.monotonic() < deadline, "the collector did not resume full lag events"
                assert thread.is_alive() and not errors, errors
                time.sleep(0.5)
        finally:
            stop.set()
            thread.join(30)
            c.close()
    assert not errors, errors
    assert not thread.is_alive()
    during = [evs for t, evs in batches if down_at < t < up_at]
    assert during, "the collector published nothing while broker 2 was down"
    # all three brokers are back for the other tests
    admin = kafka_clients.admin(cfg)
    try:
        assert sorted(b["broker_id"] for b in admin.describe_cluster()["brokers"]) == [1, 2, 3]
    finally:
        admin.close()

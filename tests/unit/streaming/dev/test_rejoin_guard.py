"""keep_rejoin_until_joined against kafka-python's real ConsumerCoordinator, with the broker
replaced by futures the test answers (no network): a join that outlives one poll is applied, never
orphaned."""

from __future__ import annotations

import types
from collections.abc import Iterator
from typing import Any

import pytest
from kafka.consumer.subscription_state import SubscriptionState
from kafka.coordinator.assignors.abstract import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.base import Generation
from kafka.coordinator.consumer import ConsumerCoordinator
from kafka.errors import RebalanceInProgressError
from kafka.future import Future
from kafka.net.compat import KafkaNetClient
from kafka.protocol.consumer import JoinGroupResponse, SyncGroupResponse
from kafka.structs import MemberState, TopicPartition

from streaming.dev.workload.worker import join_state
from streaming.kafka_clients.join_guard import keep_rejoin_until_joined


class Broker:
    """Every request the coordinator sends, by type, with the future it awaits."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, Future]] = []

    def send(self, request: Any, node_id: Any = None, request_timeout_ms: Any = None) -> Future:
        future = Future()
        self.sent.append((type(request).__name__, future))
        return future

    def names(self) -> list[str]:
        return [name for name, _ in self.sent]

    def pending(self, name: str) -> Future:
        found = [f for n, f in self.sent if n == name and not f.is_done]
        assert len(found) == 1, self.names()
        return found[0]


def join_response(generation: int, leader: str = "m1", error_code: int = 0) -> JoinGroupResponse:
    member = JoinGroupResponse.JoinGroupResponseMember(
        member_id="m1", group_instance_id=None,
        metadata=ConsumerProtocolSubscription(0, ["t"], b"").encode())
    return JoinGroupResponse(throttle_time_ms=0, error_code=error_code, generation_id=generation,
                             protocol_type="consumer", protocol_name="range", leader=leader,
                             member_id="m1", members=[member] if leader == "m1" else [])


def sync_response(partitions: list[int]) -> SyncGroupResponse:
    return SyncGroupResponse(
        throttle_time_ms=0, error_code=0, protocol_type="consumer", protocol_name="range",
        assignment=ConsumerProtocolAssignment(0, [("t", partitions)], b"").encode())


@pytest.fixture
def group() -> Iterator[tuple[ConsumerCoordinator, Broker, KafkaNetClient]]:
    """Member m1 of group g, stable at generation 1 and its leader, coordinator known; no IO thread,
    so the loop runs only inside coordinator calls and ``step``."""
    client = KafkaNetClient(bootstrap_servers="127.0.0.1:1")
    # no metadata refresh loop (no broker)
    client._manager.cluster._refresh_loop_future = Future()
    coordinator = ConsumerCoordinator(client, SubscriptionState(), group_id="g", api_version=(3, 9),
                                      assignors=[RangePartitionAssignor()],
                                      enable_auto_commit=False)
    coordinator._maybe_start_heartbeat_loop = lambda: None     # heartbeats are not under test
    broker = Broker()
    client._manager.send = broker.send
    coordinator._subscription.subscribe(topics=["t"])
    coordinator.coordinator_id = 0
    coordinator._generation = Generation(1, "m1", "range")
    coordinator.state = MemberState.STABLE
    coordinator.rejoin_needed = False
    coordinator._heartbeat_enabled = True
    coordinator._joined_subscription = {"t"}
    try:
        yield coordinator, broker, client
    finally:
        client._net.close()


def step(client: KafkaNetClient) -> None:
    for _ in range(3):
        client._net.poll(timeout_ms=0)


def leader_sees_new_metadata(coordinator: ConsumerCoordinator) -> None:
    """The leader assigned from a snapshot without the topic's partitions; metadata now has them."""
    coordinator._assignment_snapshot = {"t": set()}
    coordinator._metadata_snapshot = {"t": {0, 1}}


def join_outlives_the_poll(coordinator: ConsumerCoordinator, broker: Broker, client: KafkaNetClient,
                           generation: int = 2) -> None:
    """A poll starts the join and gives up; the leader's JoinGroup and SyncGroup then complete."""
    assert coordinator.poll(timeout_ms=20) is False
    assert coordinator.state is MemberState.REBALANCING and broker.names() == ["JoinGroupRequest"]
    broker.pending("JoinGroupRequest").success(join_response(generation))
    step(client)
    broker.pending("SyncGroupRequest").success(sync_response([0, 1]))
    step(client)


def test_kafka_python_alone_orphans_a_join_started_by_a_metadata_change(group):
    """The bug (kafka-python 3.0.12): once the leader's assignment step records the new snapshot,
    need_rejoin() is false, so no poll applies the finished join; the member stays rebalancing,
    heartbeats off, without its assignment, and poll carries on as if joined. If this starts
    failing, kafka-python has fixed it and keep_rejoin_until_joined can go."""
    coordinator, broker, client = group
    leader_sees_new_metadata(coordinator)
    join_outlives_the_poll(coordinator, broker, client)
    for _ in range(3):
        assert coordinator.poll(timeout_ms=20) is True
    assert coordinator.state is MemberState.REBALANCING
    assert coordinator.need_rejoin() is False and coordinator._heartbeat_enabled is False
    assert coordinator._subscription.assigned_partitions() == set()


def test_guarded_the_finished_join_is_applied_without_sending_it_again(group):
    coordinator, broker, client = group
    keep_rejoin_until_joined(types.SimpleNamespace(_coordinator=coordinator))
    leader_sees_new_metadata(coordinator)
    join_outlives_the_poll(coordinator, broker, client)
    assert coordinator.poll(timeout_ms=20) is True
    assert coordinator.state is MemberState.STABLE and coordinator._heartbeat_enabled is True
    assert coordinator._generation.generation_id == 2
    assert (coordinator._subscription.assigned_partitions()
            == {TopicPartition("t", 0), TopicPartition("t", 1)})
    assert coordinator.need_rejoin() is False and coordinator.rejoin_needed is False
    assert broker.names() == ["JoinGroupRequest", "SyncGroupRequest"]


def test_guarded_a_join_still_in_flight_is_awaited_by_the_next_poll(group):
    coordinator, broker, client = group
    keep_rejoin_until_joined(types.SimpleNamespace(_coordinator=coordinator))
    leader_sees_new_metadata(coordinator)
    assert coordinator.poll(timeout_ms=20) is False
    broker.pending("JoinGroupRequest").success(join_response(2))
    step(client)
    # the assignment step has recorded the new snapshot: the reason for the rejoin is gone, the join
    # is not
    assert coordinator._assignment_snapshot == coordinator._metadata_snapshot
    assert coordinator.need_rejoin() is True
    assert coordinator.poll(timeout_ms=20) is False            # SyncGroup still unanswered
    broker.pending("SyncGroupRequest").success(sync_response([1]))
    assert coordinator.poll(timeout_ms=20) is True
    assert coordinator.state is MemberState.STABLE
    assert coordinator._subscription.assigned_partitions() == {TopicPartition("t", 1)}
    assert broker.names() == ["JoinGroupRequest", "SyncGroupRequest"]


def test_guarded_a_subscription_change_is_held_until_joined(group):
    coordinator, broker, client = group
    keep_rejoin_until_joined(types.SimpleNamespace(_coordinator=coordinator))
    coordinator._joined_subscription = {"old"}                  # joined before subscribing to t
    assert coordinator.need_rejoin() is True and coordinator.rejoin_needed is True
    # group_protocols() of the new join records t
    coordinator._joined_subscription = {"t"}
    assert coordinator.poll(timeout_ms=20) is False
    broker.pending("JoinGroupRequest").success(join_response(2, leader="other"))
    step(client)
    broker.pending("SyncGroupRequest").success(sync_response([0]))
    step(client)
    assert coordinator.poll(timeout_ms=20) is True
    assert coordinator.state is MemberState.STABLE
    assert coordinator._subscription.assigned_partitions() == {TopicPartition("t", 0)}


def test_guarded_a_join_that_failed_unawaited_is_sent_again(group):
    coordinator, broker, client = group
    keep_rejoin_until_joined(types.SimpleNamespace(_coordinator=coordinator))
    leader_sees_new_metadata(coordinator)
    assert coordinator.poll(timeout_ms=20) is False
    broker.pending("JoinGroupRequest").success(
        join_response(2, error_code=RebalanceInProgressError.errno))
    step(client)
    assert coordinator._join_task.is_done and coordinator._join_task.exception is not None
    # a fresh JoinGroup, awaiting the broker
    assert coordinator.poll(timeout_ms=20) is False
    assert broker.names() == ["JoinGroupRequest", "JoinGroupRequest"]
    broker.pending("JoinGroupRequest").success(join_response(3))
    step(client)
    broker.pending("SyncGroupRequest").success(sync_response([0, 1]))
    assert coordinator.poll(timeout_ms=20) is True
    assert coordinator.state is MemberState.STABLE and coordinator._generation.generation_id == 3


def test_consumers_without_a_coordinator_are_left_alone():
    plain = types.SimpleNamespace()
    assert keep_rejoin_until_joined(plain) is plain
    bare = types.SimpleNamespace(_coordinator=types.SimpleNamespace(state=None))
    assert (keep_rejoin_until_joined(bare) is bare
            and not hasattr(bare._coordinator, "_rejoin_guarded"))


def test_guarding_twice_wraps_once(group):
    coordinator, _, _ = group
    consumer = types.SimpleNamespace(_coordinator=coordinator)
    keep_rejoin_until_joined(consumer)
    need_rejoin = coordinator.need_rejoin
    keep_rejoin_until_joined(consumer)
    assert coordinator.need_rejoin is need_rejoin


def test_the_diagnostic_names_an_orphaned_join(group):
    coordinator, broker, client = group
    assert join_state(None) == "no group coordinator"
    assert "join task=none, heartbeat enabled=True" in join_state(coordinator)
    leader_sees_new_metadata(coordinator)
    assert coordinator.poll(timeout_ms=20) is False
    assert ("need_rejoin=True, rejoin_needed=False, join task=pending, heartbeat enabled=False"
            in join_state(coordinator))
    broker.pending("JoinGroupRequest").success(join_response(2))
    step(client)
    broker.pending("SyncGroupRequest").success(sync_response([0]))
    step(client)
    assert join_state(coordinator) == (
        "need_rejoin=False, rejoin_needed=False, join task=done (joined), "
        "heartbeat enabled=False")


def test_the_diagnostic_does_not_latch_a_guarded_rejoin(group):
    coordinator, _, _ = group
    keep_rejoin_until_joined(types.SimpleNamespace(_coordinator=coordinator))
    leader_sees_new_metadata(coordinator)
    assert "need_rejoin=True, rejoin_needed=False" in join_state(coordinator)
    assert coordinator.rejoin_needed is False

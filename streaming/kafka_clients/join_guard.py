"""A guard for kafka-python 3.0.x's group coordinator: every join it starts is finished and applied.

Any kafka-python consumer of a group can meet the hole this closes (see
:func:`keep_rejoin_until_joined`): a member left "rebalancing" for good after a join that outlived
one ``poll``, dropped by the broker at its session timeout while the rest of the group settles
without it. It is most likely in a fresh group whose leader assigned before its metadata arrived,
and with short ``poll`` timeouts. The apply helpers
(:class:`~streaming.apply.rejoin.RejoinOnRecommendation`) install it on the consumer they watch, the
collector on its shard coordination consumer and the workload on its consumers; any other consumer
takes it with one call::

    consumer = keep_rejoin_until_joined(KafkaConsumer(...,
    partition_assignment_strategy=strategy(...)))
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)


def keep_rejoin_until_joined(consumer: Any) -> Any:
    """Make ``consumer``'s group coordinator finish every join it starts; returns ``consumer``.

    kafka-python 3.0.x (3.0.12 and its master as of 2026-08) runs a JoinGroup -> SyncGroup attempt
    as a task on the consumer's IO loop; ``poll`` awaits it only for its own timeout and leaves it
    in flight, and only the next ``poll`` whose ``need_rejoin()`` is true awaits it again and
    applies its result (state STABLE, heartbeats back on, the assignment taken).
    ``ConsumerCoordinator.need_rejoin()`` is true for two reasons that do not set the coordinator's
    ``rejoin_needed`` flag: the leader's metadata snapshot differs from the one it last assigned
    from (a metadata refresh after its assignment, common in a fresh group), or the subscription
    changed. A join started for such a reason undoes the reason itself (the leader's assignment step
    records the current snapshot), so once it outlives one ``poll``, ``need_rejoin()`` is false from
    then on: nobody applies the finished join. The member stays REBALANCING with heartbeats off
    (they are off for the join), ``poll`` goes on fetching its old partitions, its commits fail
    locally as "rebalance in progress", and after ``session_timeout_ms`` the broker drops it and the
    rest of the group settles a generation without it, for ever. Kafka's Java consumer has neither
    gap: its ``rejoinNeededOrPending()`` records these reasons as a rejoin request and stays true
    while a join is pending.

    So the coordinator's ``need_rejoin`` here also latches a reason into ``rejoin_needed`` (cleared
    only when kafka-python applies a finished join) and stays true while a join task exists. And a
    join attempt that succeeded while no ``poll`` awaited it is handed back to kafka-python to
    apply, rather than dropped and sent again (which costs the whole group another rebalance); a
    failed one is retried as kafka-python does (its response handlers have already reset what the
    error called for).

    A consumer without group management, or a kafka-python without these internals, is returned
    unchanged."""
    coordinator: Any = getattr(consumer, "_coordinator", None)
    if not _guardable(coordinator):
        return consumer
    wants_rejoin = coordinator.need_rejoin          # the class's own, bound
    join_group_async = coordinator.join_group_async

    def need_rejoin() -> bool:
        if wants_rejoin():
            if not coordinator.rejoin_needed:
                log.info("group %s: rejoin wanted though not requested (metadata or subscription "
                         "changed); holding the rejoin until a join completes",
                         coordinator.group_id)
                coordinator.request_rejoin()
            return True
        return coordinator._join_task is not None

    async def join_until_joined(timeout_ms: Any = None) -> Any:
        task = coordinator._join_task
        if task is not None and task.is_done and task.exception is None:
            coordinator._join_task = _replay(coordinator._net, task.value)
        return await join_group_async(timeout_ms)

    coordinator.need_rejoin = need_rejoin
    coordinator.join_group_async = join_until_joined
    coordinator._rejoin_guarded = True
    return consumer


def _guardable(coordinator: Any) -> bool:
    """A group coordinator with the kafka-python internals the guard replaces, not guarded yet."""
    internals = ("_join_task", "join_group_async", "need_rejoin", "request_rejoin",
                 "rejoin_needed", "_net")
    return (coordinator is not None and not getattr(coordinator, "_rejoin_guarded", False)
            and all(hasattr(coordinator, a) for a in internals))


def _replay(net: Any, value: Any) -> Any:
    """A pending future that succeeds with ``value`` on ``net``'s next loop step, so kafka-python's
    join loop, which only awaits a join task that is not done yet, awaits it and applies the
    join."""
    from kafka.future import Future

    replay = Future()
    net.call_soon(lambda: replay.success(value))
    return replay

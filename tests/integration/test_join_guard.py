"""Consumers running the apply helpers settle in every fresh group: kafka-python 3.0.12 as shipped
left one member of a new group "rebalancing" for good in about one group in four here (a join that
outlived one ``poll`` and that nobody applied; streaming.kafka_clients.join_guard), the cause of
test_modes' failures in CI. Each round is a new group of two on a new topic, made before the members
start or a moment after."""

from __future__ import annotations

import time
import uuid

from streaming.apply.feed import RecommendationFeed
from streaming.kafka_clients import factories as kafka_clients

from .test_job import job_config
from .test_modes import Member, wait_until

ROUNDS = 8


def settled(group: list[Member], topic: str) -> bool:
    """One generation for both, and the topic's four partitions between them."""
    gens = {m.assignor.generation for m in group}
    owned = sorted(tp for m in group for tp in m.assignor.owned)
    return len(gens) == 1 and None not in gens and owned == [(topic, p) for p in range(4)]


def test_every_fresh_group_of_helper_consumers_settles(cfg):
    jc = job_config(cfg, f"settle{uuid.uuid4().hex[:6]}")
    took = []
    with RecommendationFeed(jc.kafka) as feed:
        assert feed.wait_ready(30)
        for i in range(ROUNDS):
            tag = uuid.uuid4().hex[:6]
            topic, before = f"settle.{tag}", i % 2 == 0
            if before:
                kafka_clients.ensure_topics(
                    jc, {topic: {"num_partitions": 4, "replication_factor": 1}})
            group = [Member(jc, f"settle-{tag}", topic, f"{tag}-c{k}", feed) for k in range(2)]
            assert all(m.consumer._coordinator._rejoin_guarded for m in group)
            for m in group:
                m.start()
            try:
                if not before:
                    time.sleep(0.5)  # the members ask for the topic's metadata before it exists
                    kafka_clients.ensure_topics(
                        jc, {topic: {"num_partitions": 4, "replication_factor": 1}})
                start = time.monotonic()

                try:
                    made = "before" if before else "after"
                    wait_until(lambda g=group, t=topic: settled(g, t), 30,
                               f"round {i} to settle (topic made {made})")
                except AssertionError as e:
                    held = [(m.assignor.generation, m.assignor.owned) for m in group]
                    raise AssertionError(f"{e}: {held}") from None
                took.append(round(time.monotonic() - start, 1))
            finally:
                for m in group:
                    m.stop()
    print(f"settled in (s): {took}")

"""``RejoinOnRecommendation``: make a consumer ask for a rebalance when a new recommendation for its
group changes its partitions, so the leader's
:class:`~streaming.apply.assignor.RecommendationAssignor` applies it without waiting for the next
natural rebalance.

kafka-python 3.0 has no public "enforce rebalance" on ``KafkaConsumer`` (Java's
``enforceRebalance()``); the coordinator's ``request_rejoin()`` is what its own code calls when it
needs one: it sets a flag, and the consumer's next ``poll()`` rejoins, which makes the broker
rebalance the whole group. A future public ``enforce_rebalance()`` is used when present.

Rules (see :func:`~streaming.apply.plan.rejoin_reason`): only for a recommendation newer than the
one the leader last considered, only when it changes this member's partitions, and never sooner than
``min_interval_s`` after the last rebalance of this member or the last request.

::

    helper = RejoinOnRecommendation(consumer, feed, "orders-app", min_interval_s=30).start()
    ...
    helper.stop()
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from streaming.apply import plan
from streaming.apply.assignor import NAME, RecommendationAssignor
from streaming.apply.feed import LatestRecommendations
from streaming.kafka_clients.join_guard import keep_rejoin_until_joined

log = logging.getLogger(__name__)


def find_assignor(consumer: Any) -> RecommendationAssignor | None:
    """The consumer's :class:`RecommendationAssignor`, if it has one."""
    assignors = getattr(getattr(consumer, "_coordinator", None), "_assignors", None) or {}
    found = assignors.get(NAME)
    return found if isinstance(found, RecommendationAssignor) else None


def request_rebalance(consumer: Any) -> None:
    enforce = getattr(consumer, "enforce_rebalance", None)
    if callable(enforce):
        enforce()
    else:
        consumer._coordinator.request_rejoin()


def _member_id(consumer: Any) -> str | None:
    generation = getattr(getattr(consumer, "_coordinator", None), "_generation", None)
    return getattr(generation, "member_id", None) or None


class RejoinOnRecommendation:
    def __init__(self, consumer: Any | Callable[[], Any], feed: LatestRecommendations, group: str,
                 min_interval_s: float = 30.0, check_s: float = 0.5,
                 assignor: RecommendationAssignor | None = None) -> None:
        """``consumer``: a KafkaConsumer, or a callable returning it (None until it exists). The
        consumer gets :func:`~streaming.kafka_clients.join_guard.keep_rejoin_until_joined`: a
        rebalance this helper asks for must be one the member finishes."""
        self._consumer = consumer
        if hasattr(consumer, "poll"):
            keep_rejoin_until_joined(consumer)
        self.feed = feed
        self.group = group
        self.min_interval_s = min_interval_s
        self.check_s = check_s
        self._assignor = assignor
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.last_request: float | None = None
        self.requests: list[tuple[float, int, str]] = []

    def consumer(self) -> Any:
        c = self._consumer
        return c() if callable(c) and not hasattr(c, "poll") else c

    def check(self, now: float | None = None) -> str | None:
        """One check; returns the reason when it asked for a rebalance."""
        consumer = self.consumer()
        if consumer is None:
            return None
        keep_rejoin_until_joined(consumer)  # once per consumer (a callable may give a new one)
        assignor = self._assignor or find_assignor(consumer)
        if assignor is None or assignor.assigned_at is None:
            return None
        coordinator = getattr(consumer, "_coordinator", None)
        if getattr(coordinator, "rejoin_needed", False) or getattr(coordinator, "rejoining", False):
            # a rebalance is already on its way: the leader will see the latest recommendation
            return None
        now = time.monotonic() if now is None else now
        rec = self.feed.latest(self.group)
        reason = plan.rejoin_reason(rec, assignor.considered, set(assignor.owned),
                                    _member_id(consumer), consumer.config.get("client_id"),
                                    consumer.config.get("group_instance_id"))
        if reason is None or rec is None:  # (no reason without a recommendation)
            return None
        last = max(assignor.assigned_at, self.last_request or float("-inf"))
        if now - last < self.min_interval_s:
            return None
        request_rebalance(consumer)
        self.last_request = now
        self.requests.append((time.time(), int(rec["version"]), reason))
        log.info("group %s: %s asks for a rebalance: %s", self.group,
                 consumer.config.get("client_id"), reason)
        return reason

    def start(self) -> RejoinOnRecommendation:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"rejoin-{self.group}",
                                            daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout_s: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
            self._thread = None

    def _run(self) -> None:
        while not self._stop.wait(self.check_s):
            try:
                self.check()
            except Exception:
                log.exception("rejoin check failed")

"""The latest recommendation of each group, read from the compacted trigger feed in the background.

:class:`LatestRecommendations` is the pure part: it keeps the highest ``version`` per group (the
feed is at-least-once, and a compacted topic can be read from the start at any time), whatever its
status; at the same version a decision (``approved``, ``rejected``) replaces the proposal or the
earlier decision, and nothing else replaces a decision (a replayed proposal cannot undo an
approval). Whether the latest record may be applied is :func:`streaming.apply.plan.actionable`'s
call, made by the apply helpers. :class:`RecommendationFeed` fills it from Kafka in a daemon thread
with a consumer that never joins a group (``group_id=None`` and ``assign()``), so reading the feed
cannot disturb any consumer group, and commits nothing.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from streaming.apply.plan import parse_recommendation, status_of
from streaming.config import KafkaSettings
from streaming.contracts.recommendation import APPROVED, REJECTED
from streaming.text import printable

log = logging.getLogger(__name__)

Listener = Callable[[dict[str, Any]], None]


MAX_VERSION_STEP = 1000
"""How far one message may move a group's version forward. The job adds one per recommendation, so a
larger jump is a forged or corrupt message that would otherwise pin the group (consumers keep the
highest version). Only the trigger feed's ACL truly stops a forger; this keeps one bad message from
winning."""
MAX_LOGGED_REASONS = 100


def _replaces(new: dict[str, Any], old: dict[str, Any]) -> bool:
    if new["version"] != old["version"]:
        return bool(new["version"] > old["version"])
    return status_of(new) in (APPROVED, REJECTED) and status_of(new) != status_of(old)


class LatestRecommendations:
    """group -> the recommendation with the highest version seen (thread-safe).

    :meth:`offer` never raises for what a message holds: a malformed one is counted in ``rejected``,
    logged once per distinct reason and skipped."""

    def __init__(self, max_version_step: int = MAX_VERSION_STEP) -> None:
        self._latest: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._listeners: list[Listener] = []
        self.max_version_step = max_version_step
        self.rejected = 0
        self._logged: set[str] = set()

    def offer(self, value: bytes | str | dict[str, Any], key: bytes | str | None = None
              ) -> dict[str, Any] | None:
        """Take one feed value (and its message key, when read from Kafka); return it when it is the
        group's new latest, else None."""
        try:
            rec = parse_recommendation(value)
            if key is not None:
                group_key = key.decode("utf-8") if isinstance(key, bytes | bytearray) else key
                if group_key != rec["group"]:
                    raise ValueError(f"message key {printable(group_key, 80)} is not the "
                                     "recommendation's group")
        except Exception as e:  # whatever a message holds, the reader goes on
            self._reject(f"{type(e).__name__}: {e}" if not isinstance(e, ValueError) else str(e))
            return None
        with self._lock:
            old = self._latest.get(rec["group"])
            if old is not None and not _replaces(rec, old):
                return None
            if old is not None and rec["version"] - old["version"] > self.max_version_step:
                jump = (f"version jumps from {old['version']} to {rec['version']} "
                        f"(at most +{self.max_version_step})")
            else:
                jump = None
                self._latest[rec["group"]] = rec
                listeners = list(self._listeners)
        if jump:
            self._reject(f"group {printable(rec['group'], 80)}: {jump}")
            return None
        for listener in listeners:
            try:
                listener(rec)
            except Exception:
                log.exception("trigger feed listener failed")
        return rec

    def _reject(self, reason: str) -> None:
        self.rejected += 1
        reason = printable(reason, 300)
        if reason not in self._logged and len(self._logged) < MAX_LOGGED_REASONS:
            self._logged.add(reason)
            log.warning("trigger feed: recommendation skipped: %s", reason)
        else:
            log.debug("trigger feed: recommendation skipped: %s", reason)

    def latest(self, group: str) -> dict[str, Any] | None:
        """The group's latest record, whatever its status (see
        :func:`streaming.apply.plan.actionable`)."""
        with self._lock:
            return self._latest.get(group)

    def groups(self) -> list[str]:
        with self._lock:
            return sorted(self._latest)

    def add_listener(self, listener: Listener) -> None:
        """``listener(rec)`` is called (in the reader's thread) for every new latest
        recommendation."""
        with self._lock:
            self._listeners.append(listener)


class RecommendationFeed(LatestRecommendations):
    """Reads the trigger feed (``kafka.trigger_topic``, or ``topic``) from the beginning, then
    follows it, in a daemon thread. It needs the Kafka settings and nothing else of the job's
    configuration.

    ::

        with RecommendationFeed(cfg.kafka) as feed:
            feed.wait_ready(30)           # caught up with what the topic held at start
            rec = feed.latest("orders-app")
    """

    def __init__(self, kafka: KafkaSettings, topic: str | None = None, poll_ms: int = 300,
                 **consumer_settings: Any) -> None:
        super().__init__()
        self.kafka = kafka
        self.topic = topic or kafka.trigger_topic
        self.poll_ms = poll_ms
        self.consumer_settings = consumer_settings
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None
        self.failure: BaseException | None = None
        self.messages = 0

    def start(self) -> RecommendationFeed:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"feed-{self.topic}",
                                            daemon=True)
            self._thread.start()
        return self

    def wait_ready(self, timeout_s: float = 30.0) -> bool:
        """Wait until everything the topic held when reading started has been read."""
        return self._ready.wait(timeout_s)

    def stop(self, timeout_s: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
            self._thread = None

    def __enter__(self) -> RecommendationFeed:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _consumer(self) -> Any:
        from kafka import KafkaConsumer

        from streaming.kafka_clients.factories import client_options

        opts = client_options(self.kafka, "consumer") | {
            "group_id": None, "enable_auto_commit": False, "auto_offset_reset": "earliest",
            "client_id": "rebalancer-feed-reader", "reconnect_backoff_max_ms": 2000,
        } | self.consumer_settings
        return KafkaConsumer(**opts)

    def _run(self) -> None:
        from kafka import TopicPartition

        consumer = None
        try:
            consumer = self._consumer()
            parts: set[int] = set()
            while not self._stop.is_set():
                parts = consumer.partitions_for_topic(self.topic) or set()
                if parts:
                    break
                log.info("trigger feed %s does not exist yet; waiting", self.topic)
                self._ready.set()  # nothing to catch up with
                self._stop.wait(2.0)
            if self._stop.is_set():
                return
            tps = [TopicPartition(self.topic, p) for p in sorted(parts)]
            consumer.assign(tps)
            consumer.seek_to_beginning(*tps)
            end = consumer.end_offsets(tps)
            while not self._stop.is_set():
                batches = consumer.poll(timeout_ms=self.poll_ms)
                for records in batches.values():
                    for r in records:
                        self.messages += 1
                        if r.value is not None:
                            self.offer(r.value, r.key)
                if not self._ready.is_set() and all(consumer.position(tp) >= end[tp] for tp in tps):
                    self._ready.set()
        except BaseException as e:  # the thread must say why it stopped
            self.failure = e
            log.exception("trigger feed reader stopped")
        finally:
            self._ready.set()
            if consumer is not None:
                try:
                    consumer.close(autocommit=False)
                except Exception:
                    log.debug("closing the feed reader failed", exc_info=True)


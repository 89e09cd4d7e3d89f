"""The latest recommendation of each group, read from the compacted trigger feed in the background.

:class:`LatestRecommendations` is the pure part: it keeps the highest ``version`` per group (the feed is
at-least-once, and a compacted topic can be read from the start at any time). :class:`RecommendationFeed`
fills it from Kafka in a daemon thread with a consumer that never joins a group (``group_id=None`` and
``assign()``), so reading the feed cannot disturb any consumer group, and commits nothing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from streaming.apply.plan import parse_recommendation
from streaming.config import Config

log = logging.getLogger(__name__)

Listener = Callable[[dict[str, Any]], None]


class LatestRecommendations:
    """group -> the recommendation with the highest version seen (thread-safe)."""

    def __init__(self) -> None:
        self._latest: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._listeners: list[Listener] = []
        self.rejected = 0

    def offer(self, value: bytes | str | dict[str, Any]) -> dict[str, Any] | None:
        """Take one feed value; return it when it is the group's new latest, else None."""
        try:
            rec = parse_recommendation(value)
        except ValueError as e:
            self.rejected += 1
            log.warning("trigger feed: unreadable recommendation skipped: %s", e)
            return None
        with self._lock:
            old = self._latest.get(rec["group"])
            if old is not None and old["version"] >= rec["version"]:
                return None
            self._latest[rec["group"]] = rec
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener(rec)
            except Exception:
                log.exception("trigger feed listener failed")
        return rec

    def latest(self, group: str) -> dict[str, Any] | None:
        with self._lock:
            return self._latest.get(group)

    def groups(self) -> list[str]:
        with self._lock:
            return sorted(self._latest)

    def add_listener(self, listener: Listener) -> None:
        """``listener(rec)`` is called (in the reader's thread) for every new latest recommendation."""
        with self._lock:
            self._listeners.append(listener)


class RecommendationFeed(LatestRecommendations):
    """Reads ``cfg.kafka.trigger_topic`` from the beginning, then follows it, in a daemon thread.

    ::

        with RecommendationFeed(cfg) as feed:
            feed.wait_ready(30)           # caught up with what the topic held at start
            rec = feed.latest("orders-app")
    """

    def __init__(self, cfg: Config, topic: str | None = None, poll_ms: int = 300, **consumer_settings: Any) -> None:
        super().__init__()
        self.cfg = cfg
        self.topic = topic or cfg.kafka.trigger_topic
        self.poll_ms = poll_ms
        self.consumer_settings = consumer_settings
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None
        self.failure: BaseException | None = None
        self.messages = 0

    def start(self) -> RecommendationFeed:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"feed-{self.topic}", daemon=True)
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

        from streaming.kafka_clients import python_client_options

        opts = python_client_options(self.cfg, "consumer") | {
            "group_id": None, "enable_auto_commit": False, "auto_offset_reset": "earliest",
            "client_id": "rebalancer-feed-reader", "reconnect_backoff_max_ms": 2000,
        } | self.consumer_settings
        return KafkaConsumer(**opts)

    def _run(self) -> None:
        from kafka import TopicPartition

        consumer = None
        try:
            consumer = self._consumer()
            parts = None
            while not self._stop.is_set():
                parts = consumer.partitions_for_topic(self.topic)
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
                            self.offer(r.value)
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


def wait_for(feed: LatestRecommendations, group: str, newer_than: int = 0, timeout_s: float = 60.0,
             stop: threading.Event | None = None) -> dict[str, Any] | None:
    """Poll ``feed`` until ``group`` has a recommendation with a version above ``newer_than``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and not (stop and stop.is_set()):
        rec = feed.latest(group)
        if rec is not None and rec["version"] > newer_than:
            return rec
        time.sleep(0.2)
    return None

"""The publisher sends a poll's metadata, and has it acknowledged, before any of its lag: the job
decides on a poll once its lag is whole, so the members event of the same poll must be readable by
then (a poll decided without it decides otherwise: benchmarks/loop/replay.py)."""

from __future__ import annotations

from typing import Any

from streaming.collector import publisher
from streaming.config import load
from streaming.contracts import events as ev

T0 = 1_763_700_000_000


class Producer:
    def __init__(self, log: list[Any]) -> None:
        self.log = log

    def send(self, topic: str, key: bytes, value: bytes) -> Any:
        self.log.append(("send", topic))
        log = self.log

        class Done:
            def get(self, timeout: float) -> None:
                log.append(("acked", topic))
        return Done()

    def flush(self, timeout: float) -> None:
        self.log.append(("flush",))


def test_a_polls_metadata_is_acknowledged_before_its_lag_is_sent(monkeypatch) -> None:
    cfg = load()
    sent: list[Any] = []
    monkeypatch.setattr(publisher.kafka_clients, "producer", lambda *a, **k: Producer(sent))
    p = publisher.Publisher(cfg)
    member = ev.member_entry("m0", ["t"], [("t", 0)], client_id="c0")
    batch = [*ev.dense([ev.lag_event(T0, "g", "t", 0, 5, 9)]),
             ev.members_event(T0, "g", 1, "range", [member])]
    assert p.publish(batch) == 2
    lag, meta = cfg.kafka.lag_topic, cfg.kafka.metadata_topic
    assert sent == [("send", meta), ("flush",), ("acked", meta),
                    ("send", lag), ("flush",), ("acked", lag)]
    sent.clear()
    assert p.publish(batch[:1]) == 1  # lag alone: one round
    assert sent == [("send", lag), ("flush",), ("acked", lag)]

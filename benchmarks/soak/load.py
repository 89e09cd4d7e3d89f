"""The load: a producer thread shaped like the collector (lag polls, wandering skew, members
changing)."""

from __future__ import annotations

import random
import threading
import time


class Load(threading.Thread):
    """Collector-shaped events: lag of every group's partitions each poll, skew wandering, members
    changing."""

    def __init__(self, cfg, groups: int, partitions: int, every_s: float, seed: int = 26) -> None:
        super().__init__(name="soak-load", daemon=True)
        self.cfg, self.every_s, self.rnd = cfg, every_s, random.Random(seed)
        self.groups = [f"soak-{g:03d}" for g in range(groups)]
        self.partitions = partitions
        self.skew = {g: 1.0 for g in self.groups}  # the hot partition's lag over the others'
        self.hot = {g: 0 for g in self.groups}
        self.size = {g: 2 for g in self.groups}  # members
        self.generation = {g: 1 for g in self.groups}
        self.stopped = threading.Event()
        self.polls = self.events = 0

    def members(self, now_ms: int, g: str) -> dict:
        from streaming.contracts import events as ev

        n = self.size[g]
        parts = [[p for p in range(self.partitions) if p % n == m] for m in range(n)]
        members = [ev.member_entry(f"{g}-m{m}", ["t0"], [("t0", p) for p in parts[m]],
                                   client_id=f"c{m}", host="/127.0.0.1", rack="abc"[m % 3])
                   for m in range(n)]
        return ev.members_event(now_ms, g, self.generation[g], "range", members)

    def poll(self, now_ms: int) -> list[dict]:
        from streaming.contracts import events as ev

        out = []
        for g in self.groups:
            if self.polls == 0 or self.rnd.random() < 0.01:  # a member joins or leaves now and then
                if self.polls:
                    self.size[g] = 5 - self.size[g]  # 2 <-> 3
                    self.generation[g] += 1
                out.append(self.members(now_ms, g))
            self.skew[g] = min(8.0, max(1.0, self.skew[g] + self.rnd.gauss(0, 0.3)))
            if self.rnd.random() < 0.02:
                self.hot[g] = self.rnd.randrange(self.partitions)
            committed = 1_000_000 + now_ms // 10
            for p in range(self.partitions):
                skew = self.skew[g] if p == self.hot[g] else 1.0
                lag = int(500 * skew * self.rnd.uniform(0.8, 1.2))
                out.append(ev.lag_event(now_ms, g, "t0", p, committed, committed + lag))
        return out

    def run(self) -> None:
        from streaming.contracts import events as ev
        from streaming.kafka_clients import factories as kafka_clients

        prod = kafka_clients.producer(self.cfg, linger_ms=20, acks=1)
        try:
            while not self.stopped.wait(self.every_s):
                for e in self.poll(int(time.time() * 1000)):
                    key, value = ev.encode(e)
                    topic = ev.topic_for(e, self.cfg.kafka.lag_topic, self.cfg.kafka.metadata_topic)
                    prod.send(topic, key=key, value=value)
                    self.events += 1
                # a malformed record: rejected_events keeps getting rows
                if self.rnd.random() < 0.05:
                    prod.send(self.cfg.kafka.lag_topic, key=b"bad", value=b"not json")
                self.polls += 1
            prod.flush(30)
        finally:
            prod.close()


# -- what the job's processes and folders hold -----------------------------------------------------

"""What the embedded three-broker cluster costs while it waits: the CPU of its JVMs, idle and then
holding topics, for its default settings and for each set of broker settings given.

    .venv/bin/python -m benchmarks.broker_idle [--seconds 60] [--topics 60] \
        [--vs "metadata.max.idle.interval.ms=5000"]

The suite runs one such cluster per test worker for all of its minutes (``tests/integration/
conftest.py``), so what the brokers burn while no test talks to them is taken from every test. Each
variant starts a fresh cluster with the suite's own settings (:data:`streaming.dev.SUITE_BROKERS`),
waits for it to settle, reads its JVMs' CPU over ``--seconds`` (from ``/proc``), then creates
``--topics`` topics of four partitions, three replicas, and reads it again. One line per variant, in
cores.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from pathlib import Path

from benchmarks.process_cpu import stat_cpu_s
from streaming.dev import SUITE_BROKERS


def cpu_s(pids: list[int]) -> float:
    """User and system CPU seconds of ``pids`` so far."""
    return sum(stat_cpu_s(Path(f"/proc/{pid}/stat").read_text()) for pid in pids)


def cores(pids: list[int], seconds: float) -> float:
    """The cores ``pids`` use over the next ``seconds``."""
    before = cpu_s(pids)
    time.sleep(seconds)
    return (cpu_s(pids) - before) / seconds


def measure(extra: dict[str, str], seconds: float, topics: int) -> tuple[float, float]:
    """(idle, with topics) cores of a fresh three-broker cluster with ``extra`` settings."""
    from kafka.admin import KafkaAdminClient, NewTopic

    from streaming.embedded.cluster import KafkaCluster

    base = Path(tempfile.mkdtemp(prefix="broker-idle-"))
    with KafkaCluster(brokers=3, base_dir=base, extra_config={**SUITE_BROKERS, **extra}) as c:
        pids = c.pids()
        time.sleep(20)  # the start's own work done
        idle = cores(pids, seconds)
        admin = KafkaAdminClient(bootstrap_servers=c.bootstrap_servers)
        try:
            admin.create_topics([NewTopic(f"idle-{i}-{uuid.uuid4().hex[:6]}", 4, 3)
                                 for i in range(topics)])
        finally:
            admin.close()
        time.sleep(15)
        return idle, cores(pids, seconds)


def _settings(text: str) -> dict[str, str]:
    return dict(kv.split("=", 1) for kv in text.split(",") if kv)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="benchmarks.broker_idle", description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--topics", type=int, default=60)
    ap.add_argument("--vs", action="append", default=[],
                    help="broker settings k=v[,k=v] to compare with the defaults (repeatable)")
    args = ap.parse_args(argv)
    from streaming import jvm

    jvm.resolve()
    for text in ["", *args.vs]:
        idle, held = measure(_settings(text), args.seconds, args.topics)
        print(f"{text or 'defaults'}: idle {idle:.3f} cores, with {args.topics} topics "
              f"{held:.3f} cores", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The job's plan build at start: ``query.pipeline`` (the Kafka source, validation, the stateful
step) in a warm local session, timed and its py4j round trips counted, with PySpark's DataFrame
debugging (``spark.python.sql.dataFrameDebugging.enabled``) on, Spark's default, and off, this
project's (:func:`streaming.spark_session.spark_defaults`), side by side.

Each setting runs in a process of its own (PySpark reads the setting once per process), the two
one after the other; each builds the plan ``--rounds`` times and the first, cold round is reported
apart from the median of the others. No Kafka is needed: building a plan connects to nothing.

    .venv/bin/python -m benchmarks.start [--rounds 5]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import subprocess
import sys
import time

SETTING = "spark.python.sql.dataFrameDebugging.enabled"


def measure(debugging: bool, rounds: int) -> dict[str, list[float]]:
    """In this process: build the plan ``rounds`` times; seconds and py4j calls of each."""
    import py4j.clientserver

    from streaming import config, jvm
    from streaming.job import query
    from streaming.spark_session import get_spark

    calls = [0]
    send = py4j.clientserver.ClientServerConnection.send_command

    def counted(self, command, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls[0] += 1
        return send(self, command, *args, **kwargs)

    py4j.clientserver.ClientServerConnection.send_command = counted  # type: ignore[method-assign]
    jvm.resolve()
    base = config.load()
    cfg = dataclasses.replace(
        base, kafka=dataclasses.replace(base.kafka, bootstrap_servers="127.0.0.1:9"),
        spark=dataclasses.replace(base.spark, master="local[2]",
                                  conf={**base.spark.conf, SETTING: str(debugging).lower()}))
    spark = get_spark(cfg)
    seconds, counts = [], []
    for _ in range(rounds):
        calls[0] = 0
        t = time.perf_counter()
        query.pipeline(spark, cfg)
        seconds.append(time.perf_counter() - t)
        counts.append(float(calls[0]))
    spark.stop()
    return {"seconds": seconds, "calls": counts}


def line(name: str, m: dict[str, list[float]]) -> str:
    s, c = m["seconds"], m["calls"]
    return (f"{name:>14}: first {s[0]:.2f} s ({c[0]:,.0f} py4j calls); "
            f"then median {statistics.median(s[1:]):.2f} s "
            f"({statistics.median(c[1:]):,.0f} calls) over {len(s) - 1} rounds")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.start",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--one", choices=("on", "off"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.one:
        print(json.dumps(measure(args.one == "on", args.rounds)))
        return
    results = {}
    for mode in ("on", "off"):
        out = subprocess.run([sys.executable, "-m", "benchmarks.start", "--one", mode,
                              "--rounds", str(args.rounds)],
                             check=True, capture_output=True, text=True).stdout
        results[mode] = json.loads(out.strip().splitlines()[-1])
    on, off = results["on"], results["off"]
    print(line("debugging on", on))
    print(line("debugging off", off))
    ratio = statistics.median(off["seconds"][1:]) / statistics.median(on["seconds"][1:])
    print(f"off / on, warm median: x{ratio:.2f}")


if __name__ == "__main__":
    main()

"""The stateful step's Python on ``lag_dense`` records, without Spark: the update function itself,
timed.

    PYTHONPATH=$PWD .venv/bin/python -m benchmarks.job.dense_step [--repeat 3]
                                                                  [--profile catchup|steady]

Drives :func:`streaming.job.stateful.update_function` (keyed by group: one call per group and batch)
or, with ``--buckets N``, :func:`streaming.job.buckets.update_function` (one call per bucket of
groups) as pyspark calls it, with frames shaped as :mod:`streaming.job.validate` leaves
``lag_dense`` rows (``readings`` packed), the offsets and the members of the throughput runs' dense
load (:mod:`benchmarks.job.load`: 4 range members, lag 100-149 per partition, every tenth group
skewed on its first member's partitions). Two cases:

- ``catchup``: 1 group x ``--partitions`` partitions, ``--polls`` polls in one call (a backlog
  drained);
- ``steady``: ``--groups`` groups x ``--partitions``, one poll of every group per batch
  (``--per-call N``: N polls, as a throughput run's batches hold), ``--batches`` batches timed after
  one that fills the histories.

The members event goes first, in a call of its own (untimed). Times are this process's CPU time (the
machine may be busy with other work: wall time would count the waits). Per case: the median over
``--repeat`` runs, each from new states, of partition readings per CPU second and CPU microseconds
per dense record, and a digest of everything the calls returned and kept (output rows, state bytes):
a change that keeps the decisions keeps the digest. ``--worker``: through pyspark's own worker path
in process (:class:`benchmarks.job.python_share.WorkerPath`: the Arrow stream the JVM would send,
its serializer and wrapper), so the figure adds pyspark's conversions.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import hashlib
import json
import pstats
import statistics
import time
import types
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pandas as pd

from assignors import registry
from streaming import config
from streaming.contracts import events as ev
from streaming.job import buckets as bucketing
from streaming.job import stateful
from streaming.state.ingest import READINGS

from .python_share import WorkerPath


class State:
    """What the update function reads and writes of pyspark's GroupState."""

    hasTimedOut = False

    def __init__(self) -> None:
        self.value: tuple | None = None

    @property
    def exists(self) -> bool:
        return self.value is not None

    @property
    def get(self) -> tuple:
        assert self.value is not None
        return self.value

    def getCurrentWatermarkMs(self) -> int:
        return 0

    def update(self, value: tuple) -> None:
        self.value = value

    def setTimeoutTimestamp(self, ts: int) -> None:
        pass


def _frame(cols: dict[str, list]) -> pd.DataFrame:
    """Columns as pyspark's worker hands them over: one Series each, put together with
    ``pd.concat``."""
    return pd.concat([pd.Series(v, name=k) for k, v in cols.items()], axis=1)


def members_rows(t0: int, g: int, partitions: int, consumers: int = 4) -> dict[str, list]:
    """Group ``g``'s members event as its row (the load's: ``consumers`` range members)."""
    topic, per = f"topic-{g % 50:02d}", partitions // consumers
    members = [ev.member_entry(f"m-{c}", [topic],
                               [(topic, p) for p in range(c * per, (c + 1) * per)],
                               client_id=f"c-{c}", rack="abc"[c % 3]) for c in range(consumers)]
    e = ev.members_event(t0, f"group-{g:04d}", 1, "range", members)
    return {"type": [ev.MEMBERS], "ts": [t0], "topic": [None], "partition": [0],
            "committed_offset": [0], "end_offset": [0],
            "detail": [json.dumps({k: e[k] for k in ("generation", "protocol", "members")})],
            READINGS: [None], "source_partition": [0], "source_offset": [0]}


def dense_rows(g: int, partitions: int, stamps: list[int], skew: tuple[int, int]
               ) -> dict[str, list]:
    """Group ``g``'s polls at ``stamps`` as ``lag_dense`` rows, offsets as the load writes them
    (``skew``: (every, hot): skewed on partitions 0 to hot - 1 when ``every`` divides ``g``; every
    0: never)."""
    p = np.arange(partitions, dtype=np.int64)
    skewed_every, hot = skew
    skewed = skewed_every > 0 and g % skewed_every == 0
    packs = []
    for ts in stamps:
        committed = ts // 10 + p
        lag = np.where(skewed & (p < hot), max(20_000, 200 * partitions), 100 + (p * 7 + g) % 50)
        packs.append(np.concatenate([p, committed, committed + lag]))
    n = len(stamps)
    return {"type": [ev.LAG_DENSE] * n, "ts": stamps, "topic": [f"topic-{g % 50:02d}"] * n,
            "partition": [0] * n, "committed_offset": [0] * n, "end_offset": [0] * n,
            "detail": [None] * n, READINGS: packs, "source_partition": [0] * n,
            "source_offset": list(range(n))}


class Run:
    """The update function keyed by group (``buckets`` 0) or by buckets of groups, its states by
    key, and a digest of all it returned and kept."""

    def __init__(self, buckets: int, worker: bool = False) -> None:
        ctx = stateful.Context(config.PolicySettings(), 3_600_000)
        self.buckets = buckets
        self.update = (bucketing.update_function(ctx, buckets) if buckets
                       else stateful.update_function(ctx))
        self.worker = WorkerPath(self.update) if worker else None
        self.states: dict[object, State] = {}
        self.digest = hashlib.sha256()
        self.recommendations = 0
        self.proposals = 0
        """the assignor's runs (registry.assign): proposals computed, standing or not"""

    def frames(self, rows: dict[int, dict[str, list]]) -> list[tuple[object, pd.DataFrame]]:
        """One call's (key, frame) per key for each group's rows (``rows``: group -> its
        columns)."""
        if not self.buckets:
            return [(f"group-{g:04d}", _frame(r)) for g, r in rows.items()]
        by_key: dict[object, dict[str, list]] = {}
        for g, r in rows.items():
            cols = by_key.setdefault(bucketing.bucket_of(f"group-{g:04d}", self.buckets), {})
            for c, v in (r | {"group": [f"group-{g:04d}"] * len(r["type"])}).items():
                cols.setdefault(c, []).extend(v)
        return [(k, _frame(cols)) for k, cols in sorted(by_key.items())]  # type: ignore[type-var]

    def call(self, key: object, frame: pd.DataFrame) -> None:
        state = self.states.setdefault(key, State())
        with counted_proposals(self):
            outputs = list(self.update((key,), iter([frame]), state))
        for out in outputs:
            self.recommendations += int((out["kind"] == "recommendation").sum())
            self.digest.update(out.to_json(orient="records").encode())

    def timed(self, rows: dict[int, dict[str, list]]) -> float:
        """CPU seconds of the calls of one batch (its frames made first)."""
        calls = self.frames(rows)
        if self.worker is not None:
            return self._through_worker(calls)
        start = time.process_time()
        for key, frame in calls:
            self.call(key, frame)
        return time.process_time() - start

    def _through_worker(self, calls: list[tuple[object, pd.DataFrame]]) -> float:
        """The batch through pyspark's worker path in this process (its serializer's Arrow in and
        out around the calls), CPU seconds of that part alone (its Arrow input is made first)."""
        from . import python_share

        df = pd.concat([frame.assign(key=[key] * len(frame)) for key, frame in calls],
                       ignore_index=True)
        df = df[["key", *(c for c in df.columns if c != "key")]]
        wall = python_share.time
        process_clock = types.SimpleNamespace(perf_counter=time.process_time)
        python_share.time = process_clock  # type: ignore[assignment]
        try:
            assert self.worker is not None
            with counted_proposals(self):
                return self.worker.batch(df)
        finally:
            python_share.time = wall

    def done(self) -> str:
        if self.worker is not None:  # its output went to pyspark's serializer: the states tell
            for key in sorted(self.worker.values, key=str):
                self.digest.update(self.worker.values[key] or b"")
        for key in sorted(self.states, key=str):
            self.digest.update(self.states[key].get[0])
        return self.digest.hexdigest()[:16]


@contextlib.contextmanager
def counted_proposals(run: Run) -> Iterator[None]:
    """The assignor's runs during the block added to ``run.proposals`` (the policy's one call of
    it, :func:`streaming.policy.recommend.propose`)."""
    def assign(*args: Any, **kwargs: Any) -> Any:
        run.proposals += 1
        return real(*args, **kwargs)

    real = registry.assign
    registry.assign = assign  # type: ignore[assignment]
    try:
        yield
    finally:
        registry.assign = real  # type: ignore[assignment]


def catchup(buckets: int, worker: bool, partitions: int, polls: int, skew: tuple[int, int],
            t0: int) -> tuple[float, int, Run]:
    """Group 0, ``polls`` polls in one call: (CPU seconds, dense records, the run)."""
    run = Run(buckets, worker)
    run.timed({0: members_rows(t0, 0, partitions)})
    stamps = [t0 + (i + 1) * 10_000 for i in range(polls)]
    return run.timed({0: dense_rows(0, partitions, stamps, skew)}), polls, run


def steady(buckets: int, worker: bool, groups: int, partitions: int, batches: int,
           skew: tuple[int, int], t0: int, per_call: int = 1) -> tuple[float, int, Run]:
    """``per_call`` polls of every group per batch, ``batches`` timed after one that fills the
    histories."""
    run = Run(buckets, worker)
    run.timed({g: members_rows(t0, g, partitions) for g in range(groups)})
    spent = 0.0
    for b in range(batches + 1):
        stamps = [t0 + (b * per_call + i + 1) * 10_000 for i in range(per_call)]
        took = run.timed({g: dense_rows(g, partitions, stamps, skew)
                          for g in range(groups)})
        spent += took if b else 0.0
    return spent, groups * batches * per_call, run


def measure(name: str, case: Callable[[], tuple[float, int, Run]], partitions: int,
            repeat: int) -> None:
    runs = [case() for _ in range(repeat)]
    secs = [s for s, _, _ in runs]
    records = runs[0][1]
    digests = {r.done() for _, _, r in runs}
    med = statistics.median(secs)
    first = runs[0][2]
    # through pyspark's worker path the outputs go to its serializer, uncounted
    recs = ("recommendations not counted" if first.worker is not None
            else f"{first.recommendations} recommendations")
    print(f"{name}: {records:,} dense records x {partitions} partitions, "
          f"{first.proposals} proposals, {recs}: "
          f"median {records * partitions / med:,.0f} "
          f"readings/s, {1e6 * med / records:,.0f} us per record (runs: "
          f"{', '.join(f'{s:.3f}s' for s in secs)}); digest "
          f"{'/'.join(sorted(digests))}", flush=True)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="benchmarks.job.dense_step",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--groups", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--polls", type=int, default=200, help="polls of the catch-up call")
    ap.add_argument("--batches", type=int, default=2, help="timed batches of the steady case")
    ap.add_argument("--per-call", type=int, default=1,
                    help="polls of each group per batch in the steady case (a throughput run's "
                         "batch holds several)")
    ap.add_argument("--skewed-every", type=int, default=10,
                    help="groups skewed: those whose number this divides (0: none, only the "
                         "per-observation path)")
    ap.add_argument("--hot", type=int, default=5,
                    help="partitions a skewed group's lag is on (1: one, which no move relieves: "
                         "its trigger holds and no proposal stands)")
    ap.add_argument("--buckets", type=int, default=0,
                    help="0: keyed by group; N: by N buckets of groups "
                         "(job.state_buckets; the job default 64)")
    ap.add_argument("--worker", action="store_true",
                    help="through pyspark's worker path in process (its Arrow serializer and "
                         "wrapper; python_share)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--case", choices=("catchup", "steady", "both"), default="both")
    ap.add_argument("--profile", choices=("catchup", "steady"),
                    help="one run under cProfile, top 25 by tottime")
    args = ap.parse_args(argv)
    t0 = 1_700_000_000_000
    shape = (args.buckets, args.worker)
    skew = (args.skewed_every, args.hot)
    cases = {"catchup": lambda: catchup(*shape, args.partitions, args.polls, skew, t0),
             "steady": lambda: steady(*shape, args.groups, args.partitions, args.batches, skew, t0,
                                      args.per_call)}
    if args.profile:
        prof = cProfile.Profile()
        prof.runcall(cases[args.profile])
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)
        pstats.Stats(prof).sort_stats("cumulative").print_stats(40)
        return
    for name in ("catchup", "steady") if args.case == "both" else (args.case,):
        measure(name, cases[name], args.partitions, args.repeat)


if __name__ == "__main__":
    main()

"""The closed-loop benchmark's figures, computed from what one run recorded (pure: records in,
numbers out).

Per strategy, over the samples of the run (one per collector poll, ``t`` in seconds since the run's
start):

- ``lag_p50`` / ``lag_p95`` / ``lag_max``: of the group's max consumer lag (records; a consumer's
  lag is the sum over its partitions of end minus committed offset; stuck partitions left out);
  ``*_s`` the same in seconds of work: records / the consumer's capacity (the time its backlog takes
  to drain at full speed; not measured from record timestamps);
- ``drain_s``: from the last event of the workload (0 when none) to the first sample after which the
  max consumer lag stays at most ``DRAIN_S`` seconds of capacity to the end; None when it never
  does;
- ``rebalances``: generations the members received after the start (a cooperative move takes two);
- ``moved``: partitions whose owner (client id) changed after the start, each change counted;
- ``cross_rack_ps``: partition-seconds spent assigned to a consumer on a rack without a replica (the
  collector's view, step-integrated between samples);
- ``cross_rack_floor_ps``: the least ``cross_rack_ps`` any assignment as balanced as the strategy's
  could have had (:mod:`benchmarks.loop.cross_floor`; None when not known);
- ``cross_rack_reads``: the share of the bytes the consumers fetched that a broker on another rack
  than the consumer's served, and ``follower_reads`` the share a follower served
  (:mod:`benchmarks.loop.reads`: where the reads went, not where the replicas are); NaN when nothing
  was read;
- ``recommendations`` issued for the group and ``applied`` by its leader (the rebalancer only);
- ``stuck_moved``: moves of a stuck partition;
- ``pace``: records processed per second of capacity while a consumer had a backlog, over all
  consumers (1.0: every throttled consumer processed at exactly its capacity; 0.9: this machine made
  them lose a tenth of it, so the run's lag figures are inflated by the machine, not the
  assignment).
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from streaming.dev.workload.strategies import KAFKA_STRATEGIES, Received

DRAIN_S = 2.0
FIGURES = ("lag_p50", "lag_p95", "lag_max", "lag_p50_s", "lag_p95_s", "lag_max_s", "drain_s",
           "rebalances", "moved", "cross_rack_ps", "cross_rack_floor_ps", "cross_rack_reads",
           "follower_reads", "recommendations", "applied", "stuck_moved", "pace")
RATIO_FIGURES = ("lag_p50", "lag_p95", "lag_max", "drain_s", "rebalances", "moved", "cross_rack_ps")


def percentile(values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    if not values:
        return math.nan
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def drain_time(samples: Sequence[tuple[float, int]], since: float,
               threshold: float) -> float | None:
    """Seconds from ``since`` until the max lag stays at most ``threshold`` to the end; None if it
    never does."""
    after = [(t, lag) for t, lag in samples if t >= since]
    if not after or after[-1][1] > threshold:
        return None
    start = after[0][0]
    for t, lag in after:
        if lag > threshold:
            start = None
        elif start is None:
            start = t
    return max(0.0, (start if start is not None else after[-1][0]) - since)


def moves(received: Iterable[Received], t0: float) -> tuple[int, int, dict[tuple[str, int], int]]:
    """(rebalances, partitions moved, moves per partition) after ``t0``. A partition moves when a
    member receives it while another one held it last (a cooperative move is counted once, when it
    lands)."""
    last: dict[tuple[str, int], str] = {}
    generations: set[int] = set()
    per_partition: dict[tuple[str, int], int] = {}
    for r in sorted(received, key=lambda r: (r.t, r.generation)):
        after = r.t > t0
        if after:
            generations.add(r.generation)
        for tp in r.partitions:
            before = last.get(tp)
            if after and before is not None and before != r.client_id:
                per_partition[tp] = per_partition.get(tp, 0) + 1
            last[tp] = r.client_id
    return len(generations), sum(per_partition.values()), per_partition


def figures(samples: Sequence[tuple[float, int, int | None]], received: Sequence[Received],
            t0: float, capacity: float, since: float, stuck: Iterable[tuple[str, int]] = (),
            recommendations: int = 0, applied: int = 0, pace: float | None = None,
            reads: dict[str, int] | None = None,
            cross_rack_floor_ps: float | None = None) -> dict[str, Any]:
    """One strategy's figures for one run. ``samples``: (t, max consumer lag, cross-rack
    partitions)."""
    lags = [float(s[1]) for s in samples]
    rebalances, moved, per_partition = moves(received, t0)
    cross = 0.0
    for (t, _, c), (t_next, _, _) in itertools.pairwise(samples):
        cross += (c or 0) * (t_next - t)
    out: dict[str, Any] = {
        "lag_p50": percentile(lags, 50), "lag_p95": percentile(lags, 95),
        "lag_max": max(lags, default=math.nan),
        "drain_s": drain_time([(s[0], s[1]) for s in samples], since, DRAIN_S * capacity),
        "rebalances": rebalances, "moved": moved, "cross_rack_ps": round(cross, 1),
        "cross_rack_floor_ps": math.nan if cross_rack_floor_ps is None else cross_rack_floor_ps,
        "recommendations": recommendations, "applied": applied,
        "stuck_moved": sum(per_partition.get(tp, 0) for tp in stuck),
        "samples": len(samples), "pace": math.nan if pace is None else round(pace, 4),
        **read_shares(reads or {}),
    }
    for k in ("lag_p50", "lag_p95", "lag_max"):
        out[f"{k}_s"] = out[k] / capacity if capacity else math.nan
    return out


def read_shares(reads: dict[str, int]) -> dict[str, float]:
    """The shares of the bytes read that crossed racks and that a follower served (NaN: nothing
    read)."""
    total = reads.get("read_bytes", 0)
    if not total:
        return {"cross_rack_reads": math.nan, "follower_reads": math.nan}
    return {"cross_rack_reads": round(reads.get("cross_rack_read_bytes", 0) / total, 6),
            "follower_reads": round(reads.get("follower_read_bytes", 0) / total, 6)}


def _num(v: Any) -> float:
    """None (a backlog that never drained) counts as infinitely long."""
    return math.inf if v is None else float(v)


def combine(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Median and spread (min, max) of each figure over repeated runs."""
    out: dict[str, Any] = {"runs": len(runs)}
    for k in FIGURES:
        values = [_num(r.get(k)) for r in runs]
        if not values:
            continue
        med = statistics.median(values)
        out[k] = None if math.isinf(med) else med
        out[f"{k}_spread"] = [None if math.isinf(v) else v for v in (min(values), max(values))]
    return out


def ratios(by_strategy: Mapping[str, Mapping[str, Any]], ours: str = "rebalancer",
           against: Sequence[str] = KAFKA_STRATEGIES) -> dict[str, Any]:
    """``ours`` / the best of ``against`` (lowest value; Kafka's strategies unless said) for each
    figure; the best one is named."""
    if ours not in by_strategy:
        return {}
    out: dict[str, Any] = {}
    for k in RATIO_FIGURES:
        kafka = {s: _num(f.get(k)) for s, f in by_strategy.items() if s in against}
        if not kafka:
            continue
        best_name = min(kafka, key=lambda s: kafka[s])
        best, mine = kafka[best_name], _num(by_strategy[ours].get(k))
        if math.isinf(best):
            ratio = 0.0 if not math.isinf(mine) else None
        elif best == 0:
            ratio = 1.0 if mine == 0 else None
        else:
            ratio = None if math.isinf(mine) else mine / best
        out[k] = {"best": best_name, "ratio": None if ratio is None else round(ratio, 3)}
    return out

"""How much of the rebalancer's gap to the oracle is the time it takes to decide, and how much the
decision.

The oracle knows the true rates and applies its assignment at the start and at each event (t = 0 of
that phase). The job has to see the lag first: a few collector polls, ``skew_observations``
readings, a trigger, then the consumers' rebalance. Whatever lag grows in that time is counted in
the whole run's p95. To tell the two apart, each run is also read from the moment the rebalancer's
first recommendation after the start (or after each event) reached the feed: the p95 of both curves
over the same window.

Worked example: the oracle's curve stays at 400 from t = 0; ours climbs to 1,100 until its
recommendation at t = 15 s, then drains to 300 by t = 60 s. Over the run ours' p95 is about 1,050
(x2.6); from t = 15 s on it is the same 1,050 at the start of the window, so the window's p95 still
holds the backlog made while deciding. The report gives both, the decision delay, and the last 20 s
of the run (where each assignment left the group once it had decided), so a reader sees which part
the assignment could change.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from benchmarks.loop import metrics

END_S = 20.0


def first_decisions(run: Mapping[str, Any]) -> list[float | None]:
    """Seconds from the start and from each event to the first recommendation after it (None: none
    came before the next phase began)."""
    starts = [0.0, *(t for t, _ in run.get("events") or [])]
    recs = sorted(r["at_s"] for r in run.get("recommendations") or [])
    out: list[float | None] = []
    for i, start in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else float("inf")
        out.append(next((t - start for t in recs if start <= t < end), None))
    return out


def window_p95(curve: Sequence[Sequence[float]], since: float) -> float | None:
    """The p95 of a (t, max lag) curve from ``since`` on (None: no sample there)."""
    values = [float(v) for t, v in curve if t >= since]
    return metrics.percentile(values, 95) if values else None


def after_first(run: Mapping[str, Any]) -> tuple[float, float, float] | None:
    """(when ours first decided, ours' p95 from then, the oracle's p95 from then), or None when the
    run has no oracle or no recommendation."""
    curves = run.get("curves") or {}
    recs = run.get("recommendations") or []
    if "oracle" not in curves or "rebalancer" not in curves or not recs:
        return None
    t = min(r["at_s"] for r in recs)
    ours, oracle = window_p95(curves["rebalancer"], t), window_p95(curves["oracle"], t)
    if ours is None or oracle is None:
        return None
    return t, ours, oracle


def at_end(run: Mapping[str, Any], last_s: float = END_S) -> tuple[float, float] | None:
    """(ours' p95, the oracle's p95) over the run's last ``last_s`` seconds: where each assignment
    left the group once the decisions were made (None without both curves)."""
    curves = run.get("curves") or {}
    if not curves.get("oracle") or not curves.get("rebalancer"):
        return None
    since = max(t for t, _ in curves["oracle"]) - last_s
    ours, oracle = window_p95(curves["rebalancer"], since), window_p95(curves["oracle"], since)
    return None if ours is None or oracle is None else (ours, oracle)


def lines(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """The report's lines for one workload: decision delays per phase, and ours against the oracle
    from the first decision on (median over the runs)."""
    delays = [first_decisions(r) for r in runs]
    out = []
    if any(d is not None for ds in delays for d in ds):
        phases = max(len(ds) for ds in delays)
        said = []
        for k in range(phases):
            got = [ds[k] for ds in delays if k < len(ds) and ds[k] is not None]
            label = "the start" if k == 0 else f"event {k}"
            said.append(f"after {label}: "
                        + (f"{statistics.median(got):.0f} s ({len(got)} of {len(delays)} runs)"
                           if got else "none"))
        out.append("- rebalancer's first recommendation (median): " + "; ".join(said))
    windows = [w for w in (after_first(r) for r in runs) if w is not None]
    if windows:
        t = statistics.median(w[0] for w in windows)
        ours = statistics.median(w[1] for w in windows)
        oracle = statistics.median(w[2] for w in windows)
        ratio = ours / oracle if oracle else float("inf")
        out.append(f"- from the rebalancer's first recommendation (median {t:.0f} s) to the end: "
                   f"p95 max lag {ours:,.0f} vs oracle {oracle:,.0f} (x{ratio:.2f})")
    out += job_part(runs)
    ends = [e for e in (at_end(r) for r in runs) if e is not None]
    if ends:
        ours, oracle = statistics.median(e[0] for e in ends), statistics.median(e[1] for e in ends)
        out.append(f"- the last {END_S:.0f} s of the run: p95 max lag {ours:,.0f} vs oracle "
                   f"{oracle:,.0f}"
                   + (f" (x{ours / oracle:.2f})" if oracle else ""))
    return out


def job_part(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """The job's share of the delay: from the observation a recommendation was decided at to its
    arrival on the feed (median over every recommendation of the runs), and the job's micro-batches
    (median over the runs of their p50 and p95; runs from before either was recorded have none)."""
    waits = [r["at_s"] - r["observed_s"] for run in runs for r in run.get("recommendations") or []
             if r.get("observed_s") is not None]
    timed = [run["job_batches"]["triggerExecution"] for run in runs if run.get("job_batches")]
    said = []
    if waits:
        said.append(f"observation to feed {statistics.median(waits):.1f} s "
                    f"(max {max(waits):.1f}, {len(waits)} recommendations)")
    if timed:
        said.append(f"micro-batches p50 {statistics.median(t['p50'] for t in timed) / 1000:.1f} s, "
                    f"p95 {statistics.median(t['p95'] for t in timed) / 1000:.1f} s")
    return ["- the job's part: " + "; ".join(said)] if said else []

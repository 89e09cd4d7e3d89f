"""The Java demo's summary (:mod:`streaming.dev.demo.java`): the two groups' max consumer lag
before the first applied recommendation and over the ``window_s`` seconds before a member of the
Java group left, and the lines that say it at the end of a run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from streaming.dev.demo.monitor import GroupMonitor, Sample, recommendation_text, short_name


def _mean_max(samples: list[Sample]) -> float | None:
    return round(sum(s.max_lag for s in samples) / len(samples), 1) if samples else None


def summarize(java: GroupMonitor, rng: GroupMonitor, recs: list[dict[str, Any]],
              fallbacks: list[dict[str, Any]], match: dict[str, Any] | None,
              left: dict[str, Any] | None, window_s: float) -> dict[str, Any]:
    """The two groups' max consumer lag before the first applied recommendation and over the
    ``window_s`` seconds before the member left (or before the end)."""
    applied = java.first_mark("applied")
    end = max((s.t for s in java.samples + rng.samples), default=0.0)
    until = left["at_s"] if left else end
    start = max(applied.t if applied else 0.0, until - window_s)
    jw, rw = java.window(start, until), rng.window(start, until)
    jm, rm = _mean_max(jw), _mean_max(rw)
    before = java.window(end=applied.t) if applied else []
    at_apply = rng.window(end=applied.t) if applied else []
    return {
        "groups": {"java": java.group, "range": rng.group},
        "duration_s": end,
        "first_recommendation_applied_at_s": applied.t if applied else None,
        "first_applied_version": applied.data.get("version") if applied else None,
        "before": {"java_max_consumer_lag": max((s.max_lag for s in before), default=None),
                   "range_max_consumer_lag": at_apply[-1].max_lag if at_apply else None},
        "compared": {"window_s": [jw[0].t, jw[-1].t] if jw else None,
                     "java_mean_max_consumer_lag": jm, "range_mean_max_consumer_lag": rm,
                     "ratio": round(jm / rm, 3) if jm is not None and rm else None,
                     "below_half": jm < rm / 2 if jm is not None and rm is not None else None,
                     "java_max_consumer_lag_at_end": jw[-1].max_lag if jw else None,
                     "range_max_consumer_lag_at_end": rw[-1].max_lag if rw else None},
        "assignment_matches_recommendation": match,
        "member_left": None if left is None else {
            **left, "fallbacks": [f for f in fallbacks if f["at_s"] >= left["at_s"]]},
        "recommendations": [
            {"version": r["version"], "triggers": r.get("triggers"), "before": r.get("before"),
             "after": r.get("after"), "partitions_moved": r.get("partitions_moved"),
             "at_s": next((m.t for m in java.marks if m.kind == "recommendation"
                           and m.data.get("short", "").startswith(f"v{r['version']} ")), None)}
            for r in sorted(recs, key=lambda r: r["version"])],
        "rebalances": [{"at_s": m.t, "what": m.text} for m in java.marks
                       if m.kind in ("applied", "fallback")],
    }


def render(s: dict[str, Any], table: str, plots: list[Path]) -> list[str]:
    def n(v: Any, fmt: str = ",.0f") -> str:
        return "?" if v is None else format(v, fmt)

    g, b, c = s["groups"], s.get("before") or {}, s.get("compared") or {}
    applied = s.get("first_recommendation_applied_at_s")
    window = c.get("window_s") or [None, None]
    out = ["", "=" * 100,
           f"summary: Java consumers, {n(s.get('duration_s'))} s: group {g['java']} "
           f"(RecommendationAssignor) beside {g['range']} (Kafka's range), same topic, same load"]
    if applied is None:
        out.append(
            f"  no recommendation was applied to {g['java']} (run longer, or see the log above)")
    else:
        out.append("  before: cooperative-sticky until recommendation "
                   f"v{s.get('first_applied_version')} was applied at {n(applied)} s: "
                   f"max consumer lag {n(b.get('java_max_consumer_lag'))} "
                   f"({g['range']} then: {n(b.get('range_max_consumer_lag'))})")
    out += [
        f"  compared ({n(window[0])}-{n(window[1])} "
        f"s{', before the member left' if s.get('member_left') else ''}): "
        f"mean max consumer lag {g['java']} {n(c.get('java_mean_max_consumer_lag'))} "
        f"vs {g['range']} {n(c.get('range_mean_max_consumer_lag'))}: "
        f"{n(c.get('ratio'), '.2f')} of range (below half: "
        f"{'?' if c.get('below_half') is None else 'yes' if c['below_half'] else 'no'}); "
        f"at {n(window[1])} s {n(c.get('java_max_consumer_lag_at_end'))} "
        f"vs {n(c.get('range_max_consumer_lag_at_end'))}"]
    if (mt := s.get("assignment_matches_recommendation")) is not None:
        out.append(f"  {g['java']}'s assignment (as its consumers report it) at {n(mt['at_s'])} s "
                   f"{'equals' if mt['matches'] else 'differs from'} recommendation "
                   f"v{mt['version']}")
    if (lf := s.get("member_left")) is not None:
        said = "; ".join(f"\"{f['reason']}\" ({f['assignor']}, at {n(f['at_s'])} s)"
                         for f in lf["fallbacks"])
        out.append(f"  {short_name(lf['client_id'], g['java'])} left at {n(lf['at_s'])} s: "
                   + (f"the leader fell back: {said}" if said else "no fallback was logged"))
    out.append(f"  recommendations ({len(s.get('recommendations') or [])}):")
    out += [f"    at {n(r.get('at_s'))} s: " + recommendation_text(r, s.get("rate_horizon_s") or 0)
            for r in s.get("recommendations") or []]
    out.append(f"  rebalances of {g['java']} ({len(s.get('rebalances') or [])}):")
    out += [f"    at {r['at_s']:.0f} s: {r['what']}" for r in s.get("rebalances") or []]
    out += [
        f"  recommendations Delta table: {table}",
        "  query it with `rebalancer recommendations --conf "
        f"paths.tables={table.rsplit('/', 1)[0]}`",
        (f"  plots of lag per consumer: {', '.join(map(str, plots))}" if plots
         else "  no plots (no samples)"),
        "=" * 100,
    ]
    return out

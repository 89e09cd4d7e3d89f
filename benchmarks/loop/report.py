"""The closed-loop benchmark's output: per workload a markdown table (median and spread over the runs, and
the rebalancer's ratio to the best Kafka strategy), the targets checked, one PNG of max-lag curves; all
of it as JSON too."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmarks.loop import metrics
from streaming.dev.workload.strategies import KAFKA_STRATEGIES

COLUMNS = (
    ("lag_p50", "max lag p50", ",.0f"), ("lag_p95", "p95", ",.0f"), ("lag_max", "max", ",.0f"),
    ("lag_p95_s", "p95 (s)", ".1f"), ("drain_s", "drain (s)", ".0f"), ("rebalances", "rebalances", ".0f"),
    ("moved", "moved", ".0f"), ("cross_rack_ps", "cross-rack p·s", ",.0f"), ("recommendations", "recs", ".0f"),
    ("applied", "applied", ".0f"), ("stuck_moved", "stuck moved", ".0f"),
    ("pace", "pace", ".0%"),
)


def aggregate(runs: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, Any]:
    """workload -> runs -> {strategy: combined figures, ratios, targets}."""
    out: dict[str, Any] = {}
    for name, results in runs.items():
        strategies = list(results[0]["strategies"])
        combined = {s: metrics.combine([r["strategies"][s] for r in results]) for s in strategies}
        out[name] = {"strategies": combined, "ratios": metrics.ratios(combined)}
    return out


def _cell(v: Any, fmt: str, spread: Sequence[Any] | None, runs: int) -> str:
    if v is None:
        return "never"
    if isinstance(v, float) and math.isnan(v):
        return "?"
    text = format(v, fmt)
    if runs > 1 and spread and None not in spread and spread[0] != spread[1]:
        text += f" ({format(spread[0], fmt)}–{format(spread[1], fmt)})"
    elif runs > 1 and spread and None in spread:
        text += " (some never)"
    return text


def targets(workload: Any, agg: Mapping[str, Any]) -> list[tuple[str, bool | None, str]]:
    """(target, met, detail) for the workload; met None when it cannot be judged (a strategy missing)."""
    s = agg["strategies"]
    ours = s.get("rebalancer")
    if ours is None:
        return []
    out: list[tuple[str, bool | None, str]] = []
    kafka = {k: v for k, v in s.items() if k in KAFKA_STRATEGIES}
    if workload.skewed and kafka:
        best = min(kafka, key=lambda k: kafka[k]["lag_p95"])
        ratio = ours["lag_p95"] / kafka[best]["lag_p95"] if kafka[best]["lag_p95"] else math.inf
        out.append(("p95 max lag <= 1/2 of the best Kafka assignor's", ratio <= 0.5,
                    f"{ours['lag_p95']:,.0f} vs {best} {kafka[best]['lag_p95']:,.0f} (x{ratio:.2f})"))
    if not workload.skewed and not workload.events:
        extra = ours["rebalances"] - min((v["rebalances"] for v in kafka.values()), default=0)
        out.append(("no recommendation, no extra rebalance", ours["recommendations"] == 0 and extra <= 0,
                    f"{ours['recommendations']:.0f} recommendation(s), {ours['rebalances']:.0f} rebalance(s) "
                    f"({extra:+.0f} vs the fewest of Kafka's)"))
    coop = s.get("cooperative-sticky")
    if coop is not None:
        out.append(("cross-rack partition-seconds <= cooperative-sticky's",
                    ours["cross_rack_ps"] <= coop["cross_rack_ps"],
                    f"{ours['cross_rack_ps']:,.0f} vs {coop['cross_rack_ps']:,.0f}"))
    if workload.stuck:
        out.append(("the stuck partition never moved", ours["stuck_moved"] == 0,
                    f"moved {ours['stuck_moved']:.0f} time(s)"))
    return out


def markdown(workloads: Mapping[str, Any], agg: Mapping[str, Any], command: str, meta: Mapping[str, Any],
             stem: str = "loop") -> str:
    lines = ["# Closed-loop benchmark: live groups, the rebalancer's recommendations vs Kafka's assignors", "",
             f"Command: `{command}`", ""]
    lines += [f"- {k}: {v}" for k, v in meta.items()]
    lines += ["", "Lag in records (max over the group's consumers of the sum of end - committed offsets of its "
              "partitions, stuck partitions left out), sampled every collector poll; seconds = records / the "
              "consumer's capacity. drain: from the last event (or the start) until the max lag stays under "
              f"{metrics.DRAIN_S:g} s of capacity. Each cell: median over the runs (min–max when they differ). "
              "Ratio row: rebalancer / the best Kafka strategy (named) for that figure. pace: records processed "
              "per second of capacity while a backlog waited (below ~95%, this machine, not the assignment, "
              "made part of the lag).", ""]
    for name, a in agg.items():
        w = workloads[name]
        runs = next(iter(a["strategies"].values()))["runs"]
        lines += [f"## {name}: {w.description} ({w.duration_s:.0f} s, {runs} run(s))", "",
                  "| strategy | " + " | ".join(h for _, h, _ in COLUMNS) + " |",
                  "|---" * (len(COLUMNS) + 1) + "|"]
        for strategy, f in a["strategies"].items():
            cells = [_cell(f.get(k), fmt, f.get(f"{k}_spread"), runs) for k, _, fmt in COLUMNS]
            lines.append(f"| {strategy} | " + " | ".join(cells) + " |")
        if a["ratios"]:
            cells = []
            for k, _, _ in COLUMNS:
                r = a["ratios"].get(k)
                if k.endswith("_s") and k[:-2] in a["ratios"]:
                    r = a["ratios"][k[:-2]]
                cells.append("" if r is None else ("—" if r["ratio"] is None else f"x{r['ratio']:.2f} vs {r['best']}"))
            lines.append("| rebalancer / best Kafka | " + " | ".join(cells) + " |")
        lines.append("")
        for target, met, detail in targets(w, a):
            lines.append(f"- target {'met' if met else 'MISSED' if met is False else '?'}: {target} — {detail}")
        lines.append(f"- plot: `{stem}-{name}.png`")
        lines.append("")
    return "\n".join(lines)


def plot(name: str, results: Sequence[Mapping[str, Any]], capacity: float, path: Path) -> Path:
    """The strategies' max-lag curves of the first run, events and recommendations marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    run = results[0]
    fig, ax = plt.subplots(figsize=(10, 5), constrained_layout=True)
    for strategy, curve in run["curves"].items():
        ax.plot([t for t, _ in curve], [v for _, v in curve], lw=2.2 if strategy == "rebalancer" else 1.4,
                label=strategy)
    for i, (t, label) in enumerate(run["events"]):
        ax.axvline(t, color="tab:purple", ls="-.", lw=1.2, label="event" if i == 0 else None)
        ax.annotate(label, (t, 1), xycoords=("data", "axes fraction"), xytext=(3, -3), textcoords="offset points",
                    rotation=90, va="top", fontsize=8, color="tab:purple")
    for i, r in enumerate(run.get("recommendations") or []):
        ax.axvline(r["at_s"], color="tab:red", ls="--", lw=1, alpha=0.7,
                   label="recommendation" if i == 0 else None)
    ax.set_xlabel("seconds since production started")
    ax.set_ylabel("group's max consumer lag (records)")
    secondary = ax.secondary_yaxis("right", functions=(lambda r: r / capacity, lambda s: s * capacity))
    secondary.set_ylabel(f"seconds of work at {capacity:g} records/s")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(f"{name}: max consumer lag per strategy (run 1 of {len(results)})")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path

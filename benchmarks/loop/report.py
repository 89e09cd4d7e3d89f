"""The closed-loop benchmark's output: per workload a markdown table (median and spread over the
runs, and the rebalancer's ratios to the best Kafka strategy and to the oracle), issue #28's targets
checked, the oracle's plan, one PNG of max-lag curves; all of it as JSON too."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.loop import decided, metrics
from streaming.dev.workload.strategies import KAFKA_STRATEGIES

if TYPE_CHECKING:
    from benchmarks.loop.workloads import Workload

COLUMNS = (
    ("lag_p50", "max lag p50", ",.0f"), ("lag_p95", "p95", ",.0f"), ("lag_max", "max", ",.0f"),
    ("lag_p95_s", "p95 (s)", ".1f"), ("drain_s", "drain (s)", ".0f"),
    ("rebalances", "rebalances", ".0f"), ("moved", "moved", ".0f"),
    ("cross_rack_ps", "cross-rack p·s", ",.0f"),
    ("cross_rack_floor_ps", "least at its balance", ",.0f"),
    ("cross_rack_reads", "cross-rack reads", ".1%"), ("follower_reads", "follower reads", ".0%"),
    ("recommendations", "recs", ".0f"),
    ("applied", "applied", ".0f"), ("stuck_moved", "stuck moved", ".0f"),
    ("pace", "pace", ".0%"),
)


def aggregate(runs: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, Any]:
    """workload -> {strategy: combined figures, ours / best Kafka, ours / oracle, the oracle's plan
    (run 1)}."""
    out: dict[str, Any] = {}
    for name, results in runs.items():
        strategies = list(results[0]["strategies"])
        combined = {s: metrics.combine([r["strategies"][s] for r in results]) for s in strategies}
        out[name] = {"strategies": combined, "ratios": metrics.ratios(combined),
                     "oracle_ratios": metrics.ratios(combined, against=("oracle",)),
                     "oracle": results[0].get("oracle"),
                     "rack_placement": results[0].get("rack_placement")}
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


def _p95_ratio(ours: Mapping[str, Any], other: Mapping[str, Any]) -> float:
    if other["lag_p95"]:
        return ours["lag_p95"] / other["lag_p95"]
    return 1.0 if not ours["lag_p95"] else math.inf


def targets(workload: Any, agg: Mapping[str, Any]) -> list[tuple[str, bool | None, str]]:
    """Issue #28's targets as (target, met, detail); met None when it does not apply (said in the
    detail)."""
    s = agg["strategies"]
    ours, best_oracle = s.get("rebalancer"), s.get("oracle")
    if ours is None:
        return []
    out: list[tuple[str, bool | None, str]] = []
    if best_oracle is not None:
        r = _p95_ratio(ours, best_oracle)
        out.append(("p95 max lag <= 1.25x the oracle's", r <= 1.25,
                    f"{ours['lag_p95']:,.0f} vs oracle {best_oracle['lag_p95']:,.0f} (x{r:.2f})"))
    kafka = {k: v for k, v in s.items() if k in KAFKA_STRATEGIES}
    best = min(kafka, key=lambda k: kafka[k]["lag_p95"]) if kafka else None
    if best is not None and workload.skewed:
        r = _p95_ratio(ours, kafka[best])
        detail = f"{ours['lag_p95']:,.0f} vs {best} {kafka[best]['lag_p95']:,.0f}"
        where_oracle = "p95 max lag <= 0.5x the best Kafka assignor's, where the oracle is <= 0.4x"
        if best_oracle is None:
            out.append((where_oracle, None, f"no oracle run; {detail} (x{r:.2f})"))
        elif (o := _p95_ratio(best_oracle, kafka[best])) <= 0.4:
            out.append(("p95 max lag <= 0.5x the best Kafka assignor's (the oracle is <= 0.4x)",
                        r <= 0.5, f"{detail} (x{r:.2f}; oracle x{o:.2f})"))
        else:
            out.append((where_oracle, None,
                        f"oracle x{o:.2f} of {best}: no room to demand it; ours x{r:.2f}"))
    if best is not None and workload.heterogeneous and workload.moves_help:
        r = _p95_ratio(ours, kafka[best])
        out.append(("consumers not alike: p95 max lag <= 0.5x the best Kafka assignor's", r <= 0.5,
                    f"{ours['lag_p95']:,.0f} vs {best} {kafka[best]['lag_p95']:,.0f} (x{r:.2f})"))
    if workload.replicas > 1:
        out.append(_no_cross_rack_reads(s))
    if not workload.moves_help:
        out.append(("no recommendation where no assignment keeps up",
                    ours["recommendations"] == 0,
                    f"{ours['recommendations']:.0f} recommendation(s)"))
    if not workload.skewed and not workload.events:
        extra = ours["rebalances"] - min((v["rebalances"] for v in kafka.values()), default=0)
        out.append(("no recommendation, no extra rebalance",
                    ours["recommendations"] == 0 and extra <= 0,
                    f"{ours['recommendations']:.0f} recommendation(s), {ours['rebalances']:.0f} "
                    f"rebalance(s) ({extra:+.0f} vs the fewest of Kafka's)"))
    return out


def _no_cross_rack_reads(s: Mapping[str, Mapping[str, Any]]) -> tuple[str, bool | None, str]:
    """A replica on every rack: no strategy's consumers read across racks, by the collector's count
    and by the bytes the brokers served."""
    shares = {k: v.get("cross_rack_reads") for k, v in s.items()}
    known = {k: v for k, v in shares.items() if v is not None and not math.isnan(v)}
    met = (all(v == 0 for v in known.values())
           and all(not v.get("cross_rack_ps") for v in s.values())
           if known else None)
    detail = ", ".join(f"{k} {v:.2%}" for k, v in known.items()) or "no reads counted"
    return "cross-rack 0 under any balance (a replica on every rack, follower fetching)", met, (
        f"bytes read across racks: {detail}; cross-rack p·s: "
        + ", ".join(f"{k} {v.get('cross_rack_ps') or 0:,.0f}" for k, v in s.items()))


def _ratio_row(label: str, ratios: Mapping[str, Any]) -> str:
    """A table row of ratios, each under its figure's column (the seconds columns share the records'
    ratio)."""
    cells = []
    for k, _, _ in COLUMNS:
        r = ratios.get(k)
        if k.endswith("_s") and k[:-2] in ratios:
            r = ratios[k[:-2]]
        cells.append("" if r is None
                     else ("—" if r["ratio"] is None else f"x{r['ratio']:.2f} vs {r['best']}"))
    return f"| {label} | " + " | ".join(cells) + " |"


def _oracle_lines(plan: Sequence[Mapping[str, Any]] | None) -> list[str]:
    """The oracle's plan: per phase, its busiest consumer's utilisation and how it was found."""
    if not plan:
        return []
    phases = "; ".join(f"{ph['label']}: busiest at {ph['max_load']:.0%}"
                       + (f" (>= {ph['lower_bound']:.0%} possible)" if ph["method"] != "milp"
                          else "")
                       + f", {ph['cross_rack']} cross-rack, {ph['method']}" for ph in plan)
    return [f"- oracle's plan: {phases}"]


INTRO = ("Lag in records (max over the group's consumers of the sum of end - committed offsets of "
         "its partitions, stuck partitions left out), sampled every collector poll; seconds = "
         "records / the consumer's capacity (the mean capacity where consumers differ). drain: "
         f"from the last event (or the start) until the max lag stays under {metrics.DRAIN_S:g} s "
         "of capacity. Each cell: median over the runs (min–max when they differ). Ratio rows: "
         "rebalancer / the best Kafka strategy (named) for that figure, and rebalancer / the "
         "oracle (the best static assignment for the workload's true rates and capacities, applied "
         "at the start and at each event: benchmarks/loop/oracle.py). least at its balance: the "
         "cross-rack p·s of the best placement any assignment no busier than the strategy's could "
         "have had (benchmarks/loop/cross_floor.py). cross-rack reads: the share of the bytes "
         "fetched that a broker on another rack served; follower reads: a follower "
         "(benchmarks/loop/reads.py). pace: records processed per second of capacity while a "
         "backlog waited (below ~95%, this machine, not the assignment, made part of the lag).")


def markdown(workloads: Mapping[str, Any], agg: Mapping[str, Any], command: str,
             meta: Mapping[str, Any], stem: str = "loop",
             by_run: Mapping[str, Sequence[Mapping[str, Any]]] | None = None) -> str:
    lines = ["# Closed-loop benchmark: live groups, the rebalancer's recommendations vs Kafka's "
             "assignors", "",
             f"Command: `{command}`", ""]
    lines += [f"- {k}: {v}" for k, v in meta.items()]
    lines += ["", INTRO, ""]
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
            lines.append(_ratio_row("rebalancer / best Kafka", a["ratios"]))
        if a.get("oracle_ratios"):
            lines.append(_ratio_row("rebalancer / oracle", a["oracle_ratios"]))
        lines.append("")
        for target, met, detail in targets(w, a):
            lines.append(f"- target {'met' if met else 'MISSED' if met is False else 'n/a'}: "
                         f"{target} — {detail}")
        lines += decided.lines((by_run or {}).get(name, []))
        lines += _oracle_lines(a.get("oracle"))
        if a.get("rack_placement"):
            lines.append(f"- rack placement: {a['rack_placement']['says']}")
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
        ax.plot([t for t, _ in curve], [v for _, v in curve],
                lw=2.2 if strategy == "rebalancer" else 1.4,
                ls=":" if strategy == "oracle" else "-",
                color="black" if strategy == "oracle" else None, label=strategy)
    for i, (t, label) in enumerate(run["events"]):
        ax.axvline(t, color="tab:purple", ls="-.", lw=1.2, label="event" if i == 0 else None)
        ax.annotate(label, (t, 1), xycoords=("data", "axes fraction"), xytext=(3, -3),
                    textcoords="offset points", rotation=90, va="top", fontsize=8,
                    color="tab:purple")
    for i, r in enumerate(run.get("recommendations") or []):
        ax.axvline(r["at_s"], color="tab:red", ls="--", lw=1, alpha=0.7,
                   label="recommendation" if i == 0 else None)
    ax.set_xlabel("seconds since production started")
    ax.set_ylabel("group's max consumer lag (records)")
    secondary = ax.secondary_yaxis("right",
                                   functions=(lambda r: r / capacity, lambda s: s * capacity))
    secondary.set_ylabel(f"seconds of work at {capacity:g} records/s")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(f"{name}: max consumer lag per strategy (run 1 of {len(results)})")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def notes(strategies: list[str], repeat: int, elapsed: float,
          unsettled: list[str]) -> dict[str, Any]:
    """The report's notes: strategies, repeats, wall time, what each strategy is, groups that did
    not settle."""
    return {"strategies": ", ".join(strategies), "repeats": repeat, "wall time": f"{elapsed:.0f} s",
            "cooperative-sticky": "Kafka 4.3's CooperativeStickyAssignor "
                                  "(assignors/sticky/cooperative.py, rack-aware) on kafka-python's "
                                  "cooperative protocol",
            "lag": "grantneale's assignor on the lag its leader reads at each rebalance",
            "rebalancer": "the streaming job in the loop; RecommendationAssignor (fallback: "
                          "balanced on the leader's lag) + RejoinOnRecommendation",
            "oracle": "the best static assignment for the schedule's true rates, capacities, "
                      "members and racks (least max utilisation, then least cross-rack; HiGHS "
                      "MILP, LPT fallback), applied at the start and by a rebalance at each event "
                      "(benchmarks/loop/oracle.py)",
            "groups that did not settle before a run (run again with fresh groups)":
                "; ".join(unsettled) or "none"}


def write(out: Path, stem: str, command: str, workloads: dict[str, Workload],
          runs: dict[str, list[dict[str, Any]]], meta: dict[str, Any]) -> str:
    """The plots, the markdown table and the JSON under ``out``; the table's text."""
    agg = aggregate(runs)
    out.mkdir(parents=True, exist_ok=True)
    for name, results in runs.items():
        plot(name, results, workloads[name].capacity, out / f"{stem}-{name}.png")
    text = markdown(workloads, agg, command, meta, stem, runs)
    (out / f"{stem}.md").write_text(text + "\n")
    (out / f"{stem}.json").write_text(json.dumps(
        {"command": command, "meta": meta,
         "workloads": {n: w.description for n, w in workloads.items()}, "aggregate": agg,
         "runs": runs, "targets": {n: targets(workloads[n], agg[n]) for n in agg}},
        indent=1, default=str) + "\n")
    return text

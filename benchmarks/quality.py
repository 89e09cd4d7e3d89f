"""Quality of every assignor on generated, seeded groups: load balance, rack locality, movement.

    .venv/bin/python -m benchmarks.quality                   # seed 1, print
    .venv/bin/python -m benchmarks.quality --seed 7 --save   # also write
                                                             # benchmarks/results/quality.txt

Suites (``--cases`` groups each, 20-200 partitions, 3-12 members, 3 racks unless said otherwise):

* ``zipf``: 1-4 topics, lags drawn from a Zipf law (a few partitions hold most of the lag).
* ``hot``: 1-3 topics, every partition lightly loaded except 1-4 hot ones (50-500x the others).
* ``single-topics``: 20-120 topics of one partition each (RangeAssignor's and grantneale's worst
  case).
* ``hetero``: 3-8 topics, each member subscribed to a random subset (heterogeneous subscriptions).
* ``rf-lt-racks``: 3-4 racks, replication factor 1-2 (fewer replicas than racks), a quarter of the
  members without a rack.
* ``churn``: round 1 assigns a fresh group; then 1-2 members leave, 1-2 join and lags drift; each
  assignor reassigns from **its own** round-1 result (members own what it gave them).

In the static suites the group currently runs with Kafka's default, ``range``: members own what
range gives them, so ``moved`` is measured against that (range itself moves nothing). The groups
are drawn in :mod:`benchmarks.quality_groups`.

Assignors: ``range``, ``roundrobin``, ``sticky`` (as kafka-python clients run it: no ``client.rack``
sent, so racks unknown), ``sticky-rack`` (racks known, ``prefer_rack_aware_logic=True``), ``lag``
(grantneale) and ``balanced`` (default options). One missing module shows as ``missing``.

Figures, per assignor over a suite's cases: ``max/LB`` = max member load / lower bound
(:func:`assignors.bounds.lower_bound`; median, 95th percentile, worst), ``imbal`` = mean of
max/mean load, ``xrack`` = cross-rack partitions (sum), ``moved`` = partitions moved (sum), ``load
mv%`` = load moved as a share of total load, ``bal worse`` = cases where balanced has a higher max
load than this assignor (relative tolerance 1e-9).
"""

from __future__ import annotations

import argparse
import dataclasses
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from assignors.model import Assignment, GroupSnapshot
from benchmarks.quality_groups import churn, group, owning

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "quality.txt"

ASSIGNORS = ("range", "roundrobin", "sticky", "sticky-rack", "lag", "balanced")
SUITES = ("zipf", "hot", "single-topics", "hetero", "rf-lt-racks", "churn")
REL = 1e-9


# -- running an assignor ---------------------------------------------------------------------------


def _no_racks(snapshot: GroupSnapshot) -> GroupSnapshot:
    members = tuple(dataclasses.replace(m, rack=None) for m in snapshot.members)
    return dataclasses.replace(snapshot, members=members)


def runner(name: str) -> Callable[[GroupSnapshot], Assignment] | None:
    """The assign function for a table column, or None when its module is not installed."""
    from assignors import registry

    module = "sticky" if name.startswith("sticky") else name
    if module not in registry.names():
        return None
    fn = registry.get(module)
    if name == "sticky":
        return lambda s: fn(_no_racks(s))
    if name == "sticky-rack":
        return lambda s: fn(s, prefer_rack_aware_logic=True)
    return fn


# -- measuring -------------------------------------------------------------------------------------


@dataclass
class Row:
    ratio: list[float] = field(default_factory=list)
    imbalance: list[float] = field(default_factory=list)
    xrack: int = 0
    moved: int = 0
    load_moved: float = 0.0
    total_load: float = 0.0
    balanced_worse: int = 0
    missing: bool = False
    errors: int = 0


@dataclass
class CaseResult:
    suite: str
    index: int
    # assignor -> metrics dict (or {"missing": True} / {"error": str})
    figures: dict[str, dict[str, Any]]


def _measure(snapshot: GroupSnapshot, assignment: Assignment) -> dict[str, Any]:
    from assignors.metrics import compute_metrics
    from assignors.validity import validate_assignment

    validate_assignment(snapshot, assignment)
    m = compute_metrics(snapshot, assignment)
    lb = m.lower_bound
    return {
        "max": float(m.max_load),
        "lb": float(lb),
        "ratio": float(m.max_load) / lb if lb > 0 else 1.0,
        "imbalance": float(m.imbalance),
        "xrack": m.cross_rack_partitions,
        "moved": m.partitions_moved,
        "load_moved": float(m.load_moved),
        "total": float(m.total_load),
    }


def run_case(suite: str, index: int, seed: int, fns: dict[str, Callable | None]) -> CaseResult:
    rng = np.random.default_rng([seed, SUITES.index(suite), index])
    figures: dict[str, dict[str, Any]] = {}
    if suite == "churn":
        fresh = group(rng, str(rng.choice(["zipf", "hot", "rf-lt-racks"])))
        _base, from_previous = churn(rng, fresh)
        for name, fn in fns.items():
            if fn is None:
                figures[name] = {"missing": True}
                continue
            try:
                previous = fn(fresh)
                snap = from_previous(previous)
                figures[name] = _measure(snap, fn(snap))
            except Exception as e:  # a failing assignor is reported, the benchmark goes on
                figures[name] = {"error": f"{type(e).__name__}: {e}"}
        return CaseResult(suite, index, figures)
    fresh = group(rng, suite)
    rng_fn = fns.get("range")
    snap = owning(fresh, rng_fn(fresh)) if rng_fn is not None else fresh
    for name, fn in fns.items():
        if fn is None:
            figures[name] = {"missing": True}
            continue
        try:
            figures[name] = _measure(snap, fn(snap))
        except Exception as e:  # a failing assignor is reported, the benchmark goes on
            figures[name] = {"error": f"{type(e).__name__}: {e}"}
    return CaseResult(suite, index, figures)


def _worse(a: float, b: float) -> bool:
    """a is a higher max load than b, beyond float noise."""
    return a > b * (1 + REL) + 1e-9


def _pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def suite_table(results: list[CaseResult]) -> list[str]:
    rows = {name: Row() for name in ASSIGNORS}
    for r in results:
        bal = r.figures.get("balanced", {})
        for name in ASSIGNORS:
            f = r.figures.get(name, {"missing": True})
            row = rows[name]
            if f.get("missing"):
                row.missing = True
                continue
            if "error" in f:
                row.errors += 1
                continue
            row.ratio.append(f["ratio"])
            row.imbalance.append(f["imbalance"])
            row.xrack += f["xrack"]
            row.moved += f["moved"]
            row.load_moved += f["load_moved"]
            row.total_load += f["total"]
            if "max" in bal and name != "balanced" and _worse(bal["max"], f["max"]):
                row.balanced_worse += 1
    out = [f"{'assignor':<12}{'max/LB med':>11}{'p95':>7}{'worst':>7}{'imbal':>7}{'xrack':>7}"
           f"{'moved':>7}{'load mv%':>9}{'bal worse':>10}"]
    for name, row in rows.items():
        if row.missing and not row.ratio:
            out.append(f"{name:<12}{'missing':>11}")
            continue
        note = f"  ({row.errors} errors)" if row.errors else ""
        mv = 100 * row.load_moved / row.total_load if row.total_load else 0.0
        worse = "-" if name == "balanced" else str(row.balanced_worse)
        out.append(
            f"{name:<12}{statistics.median(row.ratio):>11.3f}{_pct(row.ratio, 95):>7.3f}"
            f"{max(row.ratio):>7.3f}{statistics.fmean(row.imbalance):>7.3f}{row.xrack:>7}"
            f"{row.moved:>7}{mv:>9.1f}{worse:>10}{note}"
        )
    return out


def summary(results: list[CaseResult]) -> list[str]:
    ratios = [r.figures["balanced"]["ratio"] for r in results
              if "ratio" in r.figures.get("balanced", {})]
    worse_cases: list[str] = []
    x_bal = x_sr = x_cases = x_bad = x_bought = 0
    mv_bal = mv_st = mv_cases = mv_bad = 0
    for r in results:
        bal = r.figures.get("balanced", {})
        if "max" not in bal:
            continue
        for name, f in r.figures.items():
            if name != "balanced" and "max" in f and _worse(bal["max"], f["max"]):
                worse_cases.append(f"{r.suite}#{r.index} vs {name} ({bal['max']:.0f} > "
                                   f"{f['max']:.0f})")
        sr = r.figures.get("sticky-rack", {})
        if "max" in sr and not _worse(bal["max"], sr["max"]):
            x_cases += 1
            x_bal += bal["xrack"]
            x_sr += sr["xrack"]
            x_bad += bal["xrack"] > sr["xrack"]
            x_bought += bal["xrack"] > sr["xrack"] and _worse(sr["max"], bal["max"])
        st = r.figures.get("sticky", {})
        if r.suite == "churn" and "max" in st:
            mv_cases += 1
            mv_bal += bal["moved"]
            mv_st += st["moved"]
            # More moves than sticky are fine only when they buy a lower max load.
            mv_bad += bal["moved"] > st["moved"] and not _worse(st["max"], bal["max"])
    out = ["== summary (balanced, all cases) =="]
    if ratios:
        p50, p95 = statistics.median(ratios), _pct(ratios, 95)
        out.append(f"max/LB over {len(ratios)} cases: median {p50:.3f} (target <= 1.05: "
                   f"{'OK' if p50 <= 1.05 else 'MISSED'}), p95 {p95:.3f} (target <= 1.15: "
                   f"{'OK' if p95 <= 1.15 else 'MISSED'}), worst {max(ratios):.3f}")
    out.append("cases where balanced has a higher max load than another assignor: "
               f"{len(worse_cases)} (target 0: {'OK' if not worse_cases else 'MISSED'})")
    out += [f"  {w}" for w in worse_cases[:20]]
    if x_cases:
        out.append(f"cross-rack vs sticky-rack where balance is not worse ({x_cases} cases): "
                   f"balanced {x_bal}, sticky-rack {x_sr}; cases with more: {x_bad} (target 0: "
                   f"{'OK' if not x_bad else 'MISSED'}), {x_bought} of them with a strictly lower "
                   "max load (balance ranks above racks)")
    else:
        out.append("cross-rack vs sticky-rack: sticky missing")
    if mv_cases:
        out.append(f"moves after churn ({mv_cases} cases): balanced {mv_bal}, sticky {mv_st}; "
                   f"cases with more moves and no lower max load: {mv_bad} (target 0: "
                   f"{'OK' if not mv_bad else 'MISSED'})")
    else:
        out.append("moves after churn vs sticky: sticky missing")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.quality",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=1,
                    help="seed of the generated groups (default %(default)s)")
    ap.add_argument("--cases", type=int, default=10, help="cases per suite (default %(default)s)")
    ap.add_argument("--suites", help=f"comma-separated subset of {','.join(SUITES)}")
    ap.add_argument("--save", action="store_true", help=f"also write {RESULTS.relative_to(ROOT)}")
    args = ap.parse_args(argv)
    suites = args.suites.split(",") if args.suites else list(SUITES)
    unknown = [s for s in suites if s not in SUITES]
    if unknown:
        ap.error(f"unknown suite(s): {', '.join(unknown)}")

    lines: list[str] = []

    def emit(text: str = "") -> None:
        print(text, flush=True)
        lines.append(text)

    fns = {name: runner(name) for name in ASSIGNORS}
    started = time.time()
    emit(f"# benchmarks.quality --seed {args.seed} --cases {args.cases}  "
         f"({time.strftime('%Y-%m-%d %H:%M')}, Python {platform.python_version()})")
    emit("# max/LB: max member load / lower bound (median, p95, worst over the suite); imbal: mean "
         "max/mean load; xrack, moved: sums; load mv%: load moved / total load; bal worse: cases "
         "where balanced's max load is higher than this assignor's")
    everything: list[CaseResult] = []
    for suite in suites:
        results = [run_case(suite, i, args.seed, fns) for i in range(args.cases)]
        everything += results
        emit()
        emit(f"== {suite} ({args.cases} cases) ==")
        for line in suite_table(results):
            emit(line)
        errors = sorted({f"{n}: {f['error']}" for r in results for n, f in r.figures.items()
                         if "error" in f})
        for e in errors[:5]:
            emit(f"  error {e}")
    emit()
    for line in summary(everything):
        emit(line)
    emit(f"# {time.time() - started:.0f}s")
    if args.save:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"wrote {RESULTS.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

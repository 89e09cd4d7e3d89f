"""The report: one line per measurement, the side-by-side of the keyings, and where it is saved."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from .configuration import Scale

RESULTS = Path(__file__).parents[1] / "results" / "job.txt"
RESULTS_PYTHON = Path(__file__).parents[1] / "results" / "job-python.txt"
"""Where ``--python-only`` saves its report."""


def phases_text(ph: dict[str, float]) -> str:
    """Phases as ``name 1.23s, ...``."""
    return ", ".join(f"{k} {v:.2f}s" for k, v in ph.items())


def keying(buckets: int) -> str:
    """How a run keys its stateful step, in words."""
    return f"{buckets} buckets" if buckets else "keyed by group"


def throughput_line(scale: Scale, buckets: int, t: dict) -> str:
    """The report line of one throughput run."""
    return (f"{scale.tag}, {keying(buckets)}: throughput at maxOffsetsPerTrigger "
            f"{t['per_trigger']:,}: {t['events']:,} events in {t['batches']} batches; steady "
            f"{t['steady_events_per_s']:,.0f} events/s over {t['steady_batches']} full batches "
            f"(median batch {t['median_batch_s']:.1f}s; the stateful step "
            f"{t['median_state_update_s']:.1f}s of task time, summed over its tasks, and its state "
            f"commit {t['median_state_commit_s']:.1f}s; {t['ms_per_group']:.2f} ms per group per "
            f"batch); overall incl. first batch {t['overall_events_per_s']:,.0f} events/s; first "
            f"batch {t['first_batch_ms'] / 1000:.1f}s; {t['recommendations']} recommendations, "
            f"{t['rejected']} rejected; {cpu_text(t)}median phases: {phases_text(t['phases'])}")


def cpu_text(t: dict) -> str:
    """The CPU part of a throughput line (empty when nothing was sampled)."""
    if not t.get("cores_busy"):
        return ""
    return (f"during the full batches {t['cores_busy']:.2f} of {os.cpu_count()} cores busy on "
            f"average, {t['cpu_us_per_event']:.1f} us of the machine's CPU per event, "
            f"{t.get('own_cpu_us_per_event', 0):.1f} us of the job's own processes' "
            f"({by_kind_text(t)}); ")


def by_kind_text(t: dict) -> str:
    """The job's own CPU per event by process kind, or the kinds named when they were not
    sampled."""
    kinds = t.get("own_cpu_us_by_kind")
    if not kinds:
        return "broker, JVM, Python workers, load generator"
    return ", ".join(f"{k} {v:.1f} us" for k, v in kinds.items())


def latency_line(scale: Scale, buckets: int, la: dict) -> str:
    """The report line of one latency run."""
    if la.get("dense"):
        load = (f"{la['load_events_per_s']:,.0f} lag_dense records/s "
                f"({la['load_events_per_s'] * scale.partitions:,.0f} partition readings/s)")
    else:
        load = f"{la['load_events_per_s']:,.0f} lag events/s"
    return (f"{scale.tag}, {keying(buckets)}: latency under load: {load} written live "
            f"({la['late_polls']} of {la['polls']} polls fell behind), trigger interval "
            f"{la['trigger_interval_s']}s; after the first batch "
            f"({la['first_batch_ms'] / 1000:.1f}s), {la['steady_batches']} batches of "
            f"{la['mean_batch_rows']:,.0f} rows in {la['mean_batch_ms'] / 1000:.1f}s on average, "
            f"median {la['median_batch_ms'] / 1000:.1f}s (the stateful step "
            f"{la['mean_state_update_ms'] / 1000:.1f}s of task time; {la['ms_per_group']:.2f} ms "
            f"per group per batch; with the first batch {la['all_mean_batch_ms'] / 1000:.1f}s on "
            f"average); {la['recommendations']} recommendations; delay event -> Delta p50 "
            f"{la['p50_ms'] / 1000:.1f}s, p95 {la['p95_ms'] / 1000:.1f}s; median phases: "
            f"{phases_text(la['phases'])}; of the {la['batches_with_recs']} batches with "
            f"recommendations: {phases_text(la['phases_recs'])}; of those without: "
            f"{phases_text(la['phases_no_recs'])}")


def side_by_side(results: list[dict]) -> list[str]:
    """One line per run: the figures of the keyings next to each other."""
    lines = ["side by side (steady events/s at each maxOffsetsPerTrigger; ms per group per batch; "
             "live p50/p95; peak PSS):"]
    for r in results:
        tp = ", ".join(f"{t['steady_events_per_s']:,.0f}/s at {t['per_trigger']:,} "
                       f"({t['ms_per_group']:.2f} ms)"
                       for t in r["throughput"])
        la = r.get("latency")
        live = (f"live {la['ms_per_group']:.2f} ms/group, p50 {la['p50_ms'] / 1000:.1f}s p95 "
                f"{la['p95_ms'] / 1000:.1f}s"
                if la else "no live run")
        lines.append(f"  {r['scale']:>10} {keying(r['buckets']):>15}: {tp}; {live}; "
                     f"{r['peak_gib']:.2f} GiB")
    return lines


def write_report(lines: list[str], args: argparse.Namespace, path: Path) -> None:
    """Save (``--save``) or append (``--append``) the report's lines to ``path``."""
    if args.save or args.append:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a" if args.append else "w") as f:
            f.write("\n".join(lines) + "\n")
